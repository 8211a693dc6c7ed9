"""`python -m delegate serve | audit | listen | ask | brief | attend`: the command-line entry points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from delegate import __version__
from delegate.decide import ENGINE_NAMES
from delegate.extras import run_cli
from delegate.models import Speaking

app = typer.Typer(
    rich_markup_mode=None,  # plain help: wrapped, never cut at 80 columns; flags shown as flags
    add_completion=False,
    no_args_is_help=True,
    help="Meeting Delegate: attends meetings for you.",
    context_settings={"max_content_width": 120, "help_option_names": ["-h", "--help"]},
)

_DATA_DIR = typer.Option(None, "--data-dir", help="Data directory (default DELEGATE_DATA_DIR, else the user data dir).")
_DB = typer.Option(None, "--db", help="Audit database (default DELEGATE_DB_PATH, else <data-dir>/audit.sqlite).")
_ENGINE = typer.Option(None, "--engine", help=f"Decision engine: {', '.join(ENGINE_NAMES)} (default DELEGATE_ENGINE, local).")


def _settings(**overrides: Any) -> Any:
    """Settings from the environment, with the command line's options on top."""
    from pydantic import ValidationError

    from delegate.config import Settings, refused

    given = {k: v for k, v in overrides.items() if v is not None}
    if "db_path" not in given and "data_dir" in given:
        given["db_path"] = None  # follow the data directory given here, not one from the environment
    try:
        return Settings(**given)
    except ValidationError as e:
        raise _fail(refused(e)) from None


def _fail(message: str) -> typer.Exit:
    typer.echo(f"delegate: {message}", err=True)
    return typer.Exit(2)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"meeting-delegate {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Meeting Delegate: attends meetings for you."""


@app.command()
def serve(
    host: str = typer.Option(None, "--host", help="Address to bind (default DELEGATE_HOST, 127.0.0.1)."),
    port: int = typer.Option(None, "--port", help="Port (default DELEGATE_PORT, 8000)."),
    engine: str = _ENGINE,
    data_dir: Path = _DATA_DIR,
    db: Path = _DB,
    workers: int = typer.Option(
        0, "--workers", min=0, help="Run this many server processes behind HAProxy on this machine, each meeting pinned to one by its id (needs DELEGATE_DATABASE_URL and haproxy; 0: one process)."
    ),
) -> None:
    """Run the WebSocket/REST service with uvicorn; prints the address it listens on and the console's."""
    settings = _settings(engine=engine, data_dir=data_dir, db_path=db)
    if workers:
        from delegate.server.fleet.workers import run_workers

        run_workers(host or settings.host, port or settings.port, workers, settings)
        return
    from delegate.server.app import run

    run(host=host, port=port, settings=settings)


@app.command()
def audit(
    meeting_id: str,
    data_dir: Path = _DATA_DIR,
    db: Path = _DB,
    token: str = typer.Option(None, "--token", help="The bearer token that created the meeting, when the server has tokens: each token's meeting ids are its own."),
) -> None:
    """Print the audit log of one meeting: every utterance, decision and action."""
    from delegate.server.auth import audit_id, fingerprint, owner_key
    from delegate.store import print_audit

    settings = _settings(data_dir=data_dir, db_path=db)
    # With DELEGATE_DATABASE_URL the log is in PostgreSQL, unless a SQLite file is named here.
    where = None if settings.database_url and db is None and data_dir is None else settings.db_path
    if token is None:
        hint = "with DELEGATE_API_TOKENS each token has its own meeting ids: add --token TOKEN, the one that created it"
        print_audit(meeting_id, where, hint=hint)
    elif where is not None and not where.exists():
        print_audit(meeting_id, where)  # says there is no database, without making a key beside it
    else:
        # Where the server keeps this token's meeting: its id under the token's keyed fingerprint.
        key = audit_id(fingerprint(token, owner_key(settings)), meeting_id)
        print_audit(meeting_id, where, key=key, hint="none of this --token's")


@app.command()
def listen(
    audio: Path = typer.Argument(..., exists=True, dir_okay=False, help="A WAV recording of a meeting."),
    principal: Path = typer.Option(..., "--principal", "--brief", exists=True, dir_okay=False, help="The principal's profile (the brief) as JSON."),
    engine: str = _ENGINE,
    attendee: list[str] = typer.Option(None, "--attendee", help="An attendee's name (repeat the option); biases recognition toward it."),
    speak: Path = typer.Option(None, "--speak", dir_okay=False, help="Write here (WAV) the recording with the delegate's spoken replies in it, each where it would have started live (needs the voice extra)."),
    speaking: Speaking = typer.Option(None, "--speaking", help="How forward the delegate is: addressed, balanced or forward (default: the profile's, balanced)."),
) -> None:
    """Transcribe a recording and print the decisions as they would have happened live."""
    from delegate.decide import check_engine
    from delegate.listen import ListenInputError, run_listen

    settings = _settings(engine=engine)
    try:
        check_engine(settings.engine, settings)  # before the recording is transcribed, not after
    except ValueError as e:
        raise _fail(str(e)) from e
    try:
        run_listen(audio, principal, settings=settings, attendees=attendee or [], speak=speak, speaking=speaking)
    except ListenInputError as e:
        raise _fail(str(e)) from e


@app.command()
def ask(
    meeting_id: str,
    question: str,
    url: str = typer.Option("http://127.0.0.1:8000", help="The running server."),
    token: str = typer.Option(None, envvar="DELEGATE_TOKEN", help="Bearer token, when the server wants one."),
    audience: str = typer.Option(
        "meeting", help="meeting (no private or personal notes), or principal (your private notes too)."
    ),
) -> None:
    """Ask a running server a question about an open meeting; prints the answer and the turns it rests on."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        r = httpx.post(
            f"{url.rstrip('/')}/v1/meetings/{meeting_id}/ask",
            json={"question": question, "audience": audience},
            headers=headers,
            timeout=30,
        )
    except httpx.HTTPError as e:
        typer.echo(f"delegate: cannot reach {url}: {e}", err=True)
        raise typer.Exit(1) from e
    body = r.json()
    if r.status_code != 200:
        fix = ""
        if r.status_code == 401:
            fix = " (this server has tokens: give yours with --token TOKEN or DELEGATE_TOKEN)" if token is None else " (a token it does not know: --token TOKEN or DELEGATE_TOKEN)"
        typer.echo(f"delegate: {body.get('code')}: {body.get('detail')}{fix}", err=True)
        raise typer.Exit(1)
    typer.echo(body["text"])
    if body["turn_ids"]:
        typer.echo(f"(turns {', '.join(map(str, body['turn_ids']))}; {', '.join(body['speakers'])}; {body['engine']}, {body['latency_ms']:.1f} ms)")


@app.command()
def brief(
    sources: Path = typer.Option(None, "--sources", help="The principal's sources folder (slack.json, gmail.json, calendar.json or .ics, mail.mbox, ...)."),
    example: bool = typer.Option(False, "--example", help="Use the shipped example workplace instead (a made-up company; its principal and meeting are the defaults)."),
    event: str = typer.Option(None, "--event", help="The calendar event of the meeting to brief for (its id or UID)."),
    title: str = typer.Option(None, "--title", help="Without --event: the meeting's title."),
    start: str = typer.Option(None, "--start", help="Without --event: when it starts (ISO 8601); later messages are left out."),
    attendee: list[str] = typer.Option(None, "--attendee", help="Without --event: an attendee's e-mail or name (repeat the option)."),
    principal: str = typer.Option(None, "--principal", help="The principal's e-mail address."),
    out: Path = typer.Option(None, "--out", "-o", dir_okay=False, help="Write the profile JSON here (default: print it)."),
) -> None:
    """Draft the principal's brief for one meeting from their workplace sources; private items are marked, with why."""
    from datetime import datetime

    from pydantic import ValidationError

    from delegate.language.counts import counted
    from delegate.sources.brief import Meeting, build_brief
    from delegate.sources.example import EXAMPLE_EVENT, EXAMPLE_PRINCIPAL, example_folder
    from delegate.sources.folder import load_sources
    from delegate.sources.items import SourceError

    if example == (sources is not None):
        raise _fail("give --sources DIR (your workplace exports, docs/sources.md) or --example (the shipped example workplace)")
    if example:
        sources = example_folder()
        principal = principal or EXAMPLE_PRINCIPAL
        event = event if event is not None or title is not None else EXAMPLE_EVENT
    if principal is None:
        raise _fail("give --principal EMAIL: whose brief it is")
    try:
        found = load_sources(sources)
        if event is not None:
            calendar_event = found.event(event)
            if calendar_event is None:
                raise SourceError(f"{sources}: no calendar event {event!r} ({len(found.events)} events read)")
            meeting = Meeting.of_event(calendar_event)
        elif title is not None:
            meeting = Meeting(title=title, start=datetime.fromisoformat(start) if start else None, attendees=tuple(attendee or ()))
        else:
            raise SourceError("give --event ID, or --title (with --start and --attendee)")
        draft = build_brief(found, meeting, principal)
    except (SourceError, ValidationError) as e:
        raise _fail(str(e).splitlines()[0]) from None
    except ValueError as e:  # a --start that is not ISO 8601
        raise _fail(f"--start: {e}") from None
    text = draft.profile.model_dump_json(indent=1, exclude_none=True)
    if out is None:
        typer.echo(text)
        return
    out.write_text(text + "\n", encoding="utf-8")
    shown = draft.profile.background
    typer.echo(f"{out}: {counted(len(shown), 'item')} ({sum(not b.shareable for b in shown)} private), "
               f"{len(draft.superseded)} left out as corrected by a later item, from {counted(len(found.files), 'file')}")


@app.command()
def attend(
    meeting_url: str = typer.Argument(..., help="The Zoom, Meet or Teams meeting's URL."),
    via: str = typer.Option(..., "--via", help="The meeting-bot service: attendee or recall."),
    brief: Path = typer.Option(..., "--brief", help="The principal's profile as JSON (delegate brief makes one)."),
    server: str = typer.Option("http://127.0.0.1:8000", "--server", help="The running delegate server."),
    token: str = typer.Option(None, envvar="DELEGATE_TOKEN", help="Your bearer token, when the server has tokens."),
    public_url: str = typer.Option(..., "--public-url", help="Where the service reaches this bridge (an https address that forwards to --listen)."),
    listen_on: str = typer.Option("127.0.0.1:8765", "--listen", help="HOST:PORT this bridge serves the service's webhooks and audio on."),
    attendee: list[str] = typer.Option(None, "--attendee", help="An attendee's name as you call them (repeat the option): the service's names are matched to these."),
    meeting_id: str = typer.Option(None, "--meeting-id", help="The delegate's id for the meeting (default: the server picks one)."),
    hear: str = typer.Option("audio", "--hear", help="Attendee only: audio (the meeting's sound into the delegate's own recogniser) or transcript (Attendee's)."),
    minutes: float = typer.Option(None, "--minutes", help="Leave after this long even if the meeting goes on."),
) -> None:
    """Send the delegate into a real meeting through Attendee or Recall.ai: it listens, answers when its principal
    is addressed, and leaves when removed or when the meeting ends (docs/meetings.md)."""
    import asyncio
    import json

    import httpx
    from pydantic import ValidationError

    from delegate.client import ConnectionLost, DelegateError, NotAuthorized
    from delegate.integrations.attend import attend as run_attend
    from delegate.integrations.bridge import ServiceError
    from delegate.models import Profile

    if via not in ("attendee", "recall"):
        raise _fail(f"--via {via}: give attendee or recall")
    if hear not in ("audio", "transcript"):
        raise _fail(f"--hear {hear}: give audio or transcript")
    host, _, port = listen_on.rpartition(":")
    if not host or not port.isdigit():
        raise _fail(f"--listen {listen_on}: give HOST:PORT, e.g. 127.0.0.1:8765")
    if not brief.is_file():
        raise _fail(f"--brief {brief}: no such file; make one with: delegate brief --example -o brief.json")
    try:
        principal = Profile.model_validate(json.loads(brief.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as e:
        raise _fail(f"{brief}: not a brief ({str(e).splitlines()[0]}); make one with delegate brief") from None
    try:
        service = _bridge_service(via, hear)
    except ValidationError as e:
        missing = ", ".join(f"{via.upper()}_{str(x['loc'][0]).upper()}" for x in e.errors(include_url=False))
        raise _fail(f"set {missing} in the environment (docs/meetings.md, the {via} section)") from None

    def started(meeting: str, bot: str) -> None:
        typer.echo(f"meeting {meeting}: {via} bot {bot} is joining {meeting_url}")

    try:
        done = asyncio.run(run_attend(
            meeting_url, principal, service, delegate_url=server, token=token, public_url=public_url, host=host,
            port=int(port), attendees=attendee or [], meeting_id=meeting_id, minutes=minutes, on_started=started,
        ))
    except (ServiceError, DelegateError, NotAuthorized, ConnectionLost) as e:
        raise _fail(str(e)) from None
    except httpx.HTTPError as e:
        raise _fail(f"cannot reach {_where(e)}: {e}") from None
    except OSError as e:
        raise _fail(f"cannot reach {server} or listen on {listen_on}: {e}") from None
    from delegate.language.counts import counted

    typer.echo(f"meeting {done.meeting_id}: {done.admission}; {counted(done.utterances, 'turn')}; "
               f"the audit log: delegate audit {done.meeting_id}")


def _where(error: Any) -> str:
    """The address an httpx error was about (the delegate server, or the service's API)."""
    try:
        url = error.request.url
    except RuntimeError:
        return "the server"
    return f"{url.scheme}://{url.netloc.decode()}"


def _bridge_service(via: str, hear: str) -> Any:
    """The service's side of the bridge, its keys read from the environment (ATTENDEE_* or RECALL_*)."""
    if via == "attendee":
        from delegate.integrations import attendee as bridge_to

        return bridge_to.service(bridge_to.AttendeeSettings(), listen=hear)  # type: ignore[arg-type]
    from delegate.integrations import recall

    return recall.service(recall.RecallSettings())


def main() -> None:
    from delegate.logs import configure_logging

    # Commands print their results on stdout; events go to stderr (`serve` sets its own level).
    configure_logging("warning", json=False)
    run_cli(app)


if __name__ == "__main__":
    main()
