"""The HTTP side of the server: `create_app` (the REST routes, the meeting stream's route, start-up and
shut-down) and `run` under uvicorn. The WebSocket loop is `stream`, the per-process parts `components`."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import socket
import sys
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, NoReturn

import structlog
import uvicorn
from fastapi import Depends, FastAPI, Path, Query, Request, WebSocket
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException

from delegate import __version__, guard
from delegate.ask.embedded import Answer
from delegate.config import Settings, load_settings
from delegate.decide import check_engine
from delegate.logs import configure_logging
from delegate.models import MAX_UTTERANCE_ID, Decision, ProposedAction
from delegate.server import bots, console, history, roles
from delegate.server.auth import Auth, Credential, audit_id, check_binding, client_id, owner_key
from delegate.server.components import Components, Service
from delegate.server.history import PastMeeting
from delegate.server.limits import BodyLimit, SocketCounter, check_spec
from delegate.server.metrics import CONTENT_TYPE, Metrics
from delegate.server.protocol import (
    MEETING_ID,
    AskRequest,
    AttendRequest,
    BotStatus,
    BriefAttendee,
    BriefDraft,
    BriefRequest,
    CreateMeeting,
    ErrorCode,
    ErrorMessage,
    FieldError,
    MeetingInfo,
    MeetingList,
    MeetingSummary,
    ProtocolError,
    SourceEvent,
    SourcesInfo,
    SpeechResult,
    ValidationFailure,
    Verdict,
    check_meeting_id,
    field_hint,
)
from delegate.server.registry import MeetingSession, Sessions
from delegate.server.stream import serve_connection
from delegate.server.watch import Watcher
from delegate.sources.brief import Meeting, build_brief
from delegate.sources.example import EXAMPLE_PRINCIPAL, example_folder
from delegate.sources.folder import load_sources
from delegate.sources.items import SourceError, Sources
from delegate.store import open_store
from delegate.store.lock import DatabaseInUse, DatabaseLock

if TYPE_CHECKING:
    pass

log = structlog.get_logger("delegate.server")

_HTTP_STATUS = {
    ErrorCode.unauthorized: 401,
    ErrorCode.forbidden: 403,
    ErrorCode.not_found: 404,
    ErrorCode.conflict: 409,
    ErrorCode.meeting_closed: 409,
    ErrorCode.not_pending: 409,
    ErrorCode.private_text: 422,
    ErrorCode.bad_message: 422,
    ErrorCode.bad_meeting_id: 422,
    ErrorCode.too_large: 413,
    ErrorCode.too_many: 429,
    ErrorCode.not_configured: 503,
}
SWITCH_INTERVAL_S = 0.001
SSE_PING_S = 15.0
"""A comment line on a quiet event stream this often, so that proxies keep it open and a gone reader is noticed."""


def _service(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(_service)]


def _credential(request: Request, svc: ServiceDep) -> Credential:
    return svc.auth.credential(request.headers.get("authorization"))


CredentialDep = Annotated[Credential, Depends(_credential)]


def _principal(request: Request, credential: CredentialDep) -> str:
    """The caller's owner id, for a route only the principal's credential may use."""
    roles.require_principal(credential, f"`{request.method} {request.url.path}`")
    return credential.owner


Caller = Annotated[str, Depends(_principal)]


def _meeting_credential(meeting_id: str, credential: CredentialDep) -> Credential:
    """The caller's credential on a meeting's route: a bot token only on its own meeting's."""
    check_meeting_id(meeting_id)
    roles.check_meeting(credential, meeting_id)
    return credential


MeetingCredential = Annotated[Credential, Depends(_meeting_credential)]


async def _owned_session(meeting_id: str, credential: MeetingCredential, svc: ServiceDep) -> MeetingSession:
    # Meeting ids are per owner: another tenant's meeting of the same id is simply not found here.
    caller = credential.owner
    try:
        session = await svc.sessions.find(meeting_id, caller)
    except ProtocolError as e:
        if e.code != ErrorCode.meeting_closed:
            raise
        session = None  # REST serves open meetings; an ended one is in the audit log
    if session is None:
        raise ProtocolError(ErrorCode.not_found, f"No open meeting {meeting_id!r}.")
    return session


OwnedSession = Annotated[MeetingSession, Depends(_owned_session)]


async def _owned_meeting(meeting_id: str, credential: MeetingCredential, svc: ServiceDep) -> MeetingSession | PastMeeting:
    """The caller's meeting, open (its session) or ended (read from the audit log)."""
    try:
        return await _owned_session(meeting_id, credential, svc)
    except ProtocolError as e:
        if e.code != ErrorCode.not_found:
            raise
    key = audit_id(credential.owner, meeting_id)
    past = await history.from_log(svc.store, key, meeting_id) if MEETING_ID.fullmatch(meeting_id) else None
    if past is None:
        raise ProtocolError(ErrorCode.not_found, f"No meeting {meeting_id!r}.")
    return past


OwnedMeeting = Annotated[MeetingSession | PastMeeting, Depends(_owned_meeting)]


def _sources(settings: Settings) -> Sources:
    """The server's sources folder, read (only the configured folder: a client never names a path); without
    one, the example workplace shipped in the package."""
    try:
        return load_sources(settings.sources_dir or example_folder())
    except SourceError as e:
        raise ProtocolError(ErrorCode.bad_message, f"The sources folder cannot be read: {e}") from None


def _in_sources(settings: Settings) -> str:
    return "the sources" if settings.sources_dir else "the example workplace (set DELEGATE_SOURCES_DIR for your own)"


def _draft(settings: Settings, body: BriefRequest) -> BriefDraft:
    sources = _sources(settings)
    if body.event_id is not None:
        event = sources.event(body.event_id)
        if event is None:
            raise ProtocolError(ErrorCode.not_found, f"No calendar event {body.event_id!r} in {_in_sources(settings)}.")
        meeting = Meeting.of_event(event)
    else:
        meeting = Meeting(title=body.title or "", start=body.start, attendees=tuple(body.attendees))
    brief = build_brief(sources, meeting, body.principal, max_items=settings.max_background_items)
    people = [a if "@" in a else sources.email_of(a) or a for a in meeting.attendees]
    return BriefDraft(
        profile=brief.profile,
        title=meeting.title,
        event_id=meeting.event_id,
        attendees=[BriefAttendee(email=p, name=sources.name_of(p) if "@" in p else p) for p in people if p.casefold() != body.principal.casefold()],
        superseded={s.item_id: s.by for s in brief.superseded},
    )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    # Taken here, before anything loads, so that `run` refuses a second server in one line; a SQLite file
    # is one server's, a PostgreSQL database any number's.
    db_lock = None if settings.database_url else DatabaseLock(settings.db_path)
    metrics = Metrics()
    store = open_store(settings)
    parts = Components(settings, metrics)
    engines = parts.engines
    sessions = Sessions(
        store,
        metrics,
        engines,
        default_engine=settings.engine,
        max_text_chars=settings.max_text_chars,
        idle_seconds=settings.session_idle_seconds,
        # One process alone holds on to a detached meeting until it is idle; several let it go sooner.
        release_seconds=settings.release_seconds if settings.database_url else None,
        actions=parts.extractors,
        asr=parts.speech,
        max_per_owner=settings.max_sessions_per_token,
        askers=parts.askers,
        voice=parts.voice,
        approval_timeout_s=settings.approval_timeout_s,
        watch_limit=settings.watch_queue_events,
        takeovers_at_once=settings.takeovers_at_once,
    )
    svc = Service(
        settings=settings,
        auth=Auth(settings.api_tokens, owner_key(settings)),
        store=store,
        metrics=metrics,
        sessions=sessions,
        sockets=SocketCounter(settings.max_sockets_per_token),
    )
    hosted = bots.HostedBots(settings.public_url, bots.ServiceKeys())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await store.start()
            if hasattr(store, "on_lost"):
                store.on_lost = sessions.lost
            # The guard's word frequencies take seconds to load: not on the loop, not in a client's decision.
            await asyncio.gather(engines(settings.engine), asyncio.to_thread(guard.warm_up))
            reaper = asyncio.create_task(sessions.reap_forever(), name="session-reaper")
            parts.voice.start()  # loads while the first meetings start; their first reply waits for it if need be
            log.info("server_started", db="postgresql" if settings.database_url else str(settings.db_path), auth=svc.auth.enabled, engine=settings.engine)
            try:
                yield
            finally:
                await hosted.stop_all()
                reaper.cancel()
                # Stopping ends no meeting: each resumes from its log, after a restart or on another process.
                await sessions.suspend_all("server_stopped")
                await parts.aclose()
                await store.close()
                log.info("server_stopped")
        finally:
            if db_lock is not None:
                db_lock.release()  # a server started again in this process (a test's restart) may take it

    # Swagger UI and ReDoc assets come from the fastapi-offline package: `/docs` works with no CDN in reach.
    app: FastAPI = FastAPIOffline(title="Meeting Delegate", version=__version__, lifespan=lifespan)
    app.state.service = svc
    app.state.bots = hosted
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)

    @app.exception_handler(ProtocolError)
    async def _protocol_error(request: Request, exc: ProtocolError) -> JSONResponse:
        metrics.error(exc.code)
        body = ErrorMessage.of(exc).model_dump(mode="json")
        return JSONResponse(body, status_code=_HTTP_STATUS.get(exc.code, 400))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        not_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
        if not_json is not None:
            return await _protocol_error(request, _bad_json(not_json, exc.body))
        metrics.error(ErrorCode.bad_message)
        fields = [
            FieldError(loc=".".join(str(p) for p in e.get("loc", ()) if p != "body") or "(body)", message=e.get("msg", "") + field_hint(e))
            for e in errors
        ] or [FieldError(loc="(body)", message="invalid request")]
        # A misspelt field also leaves the one meant missing: the detail names the misspelling.
        shown = next((f for f, e in zip(fields, errors, strict=False) if field_hint(e)), fields[0])
        body = ValidationFailure(
            code=ErrorCode.bad_message, detail=f"{shown.loc}: {shown.message}", fields=fields
        )
        return JSONResponse(body.model_dump(mode="json"), status_code=422)

    @app.exception_handler(HTTPException)
    async def _no_route(request: Request, exc: HTTPException) -> Response:
        # `/v1/meetings/a%2Fb/...`: an encoded slash makes the decoded path match no route.
        segment = _meeting_segment(request) if exc.status_code == 404 else None
        if segment is not None and not MEETING_ID.fullmatch(segment):
            return await _protocol_error(request, ProtocolError(ErrorCode.bad_meeting_id))
        return await http_exception_handler(request, exc)

    console.mount(app)
    app.mount(bots.MOUNT, hosted)  # the meeting-bot services' webhooks and audio: signed by them, no bearer token

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        ok = store.healthy
        body = {"status": "ok" if ok else "audit_log_down", "sessions": len(sessions), "version": __version__}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def prometheus(caller: Caller) -> Response:
        # With tokens set, any valid token may scrape (counts and error codes are the operator's business);
        # `/healthz` stays open for load balancers.
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.post("/v1/meetings", status_code=201)
    async def create_meeting(body: CreateMeeting, caller: Caller) -> dict[str, str]:
        meeting_id = body.meeting_id or uuid.uuid4().hex
        check_spec(body, settings)
        session = await sessions.open(meeting_id, body, owner=caller)
        if settings.database_url:
            # A proxy routes this POST anywhere, the stream by meeting id: whichever process gets it takes it.
            await session.suspend("created")
        return {
            "meeting_id": meeting_id,
            "engine": session.engine.name,
            "stream": f"/v1/meetings/{meeting_id}/stream",
            # The meeting's bot streams with this, never with the principal's token (docs/protocol.md).
            "bot_token": svc.auth.bot_token(caller, meeting_id),
        }

    @app.post("/v1/meetings/{meeting_id}/bot-token")
    async def bot_token(caller: Caller, session: OwnedSession) -> dict[str, str]:
        """The open meeting's bot token again (e.g. for a meeting started by a `join`)."""
        return {"meeting_id": session.meeting_id, "bot_token": svc.auth.bot_token(caller, session.meeting_id)}

    @app.get("/v1/sources")
    async def sources_info(caller: Caller) -> SourcesInfo:
        example = settings.sources_dir is None
        return SourcesInfo(example=example, principal=EXAMPLE_PRINCIPAL if example else None)

    @app.get("/v1/sources/events")
    async def source_events(caller: Caller) -> list[SourceEvent]:
        sources = await asyncio.to_thread(_sources, settings)
        return [SourceEvent(id=e.id, summary=e.summary, start=e.start, private=e.private) for e in sorted(sources.events, key=lambda e: e.start)]

    @app.post("/v1/briefs")
    async def brief_from_sources(body: BriefRequest, caller: Caller) -> BriefDraft:
        # Reading and weighing a few hundred items takes a fraction of a second: off the event loop.
        return await asyncio.to_thread(_draft, settings, body)

    @app.get("/v1/meetings")
    async def meetings(
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> MeetingList:
        prefix = audit_id(caller, "")
        keys = await store.meeting_ids(prefix, limit + 1, offset)
        page = [
            MeetingSummary(meeting_id=client_id(caller, k), open=await store.registered(k) is not None)
            for k in keys[:limit]
        ]
        return MeetingList(
            meetings=page, limit=limit, offset=offset, next_offset=offset + limit if len(keys) > limit else None
        )

    @app.get("/v1/meetings/{meeting_id}")
    async def meeting(found: OwnedMeeting, credential: MeetingCredential) -> MeetingInfo:
        info = found.info()
        bot = hosted.status(credential.owner, info.meeting_id)
        return info if bot is None else info.model_copy(update={"bot": bot})

    @app.post("/v1/meetings/{meeting_id}/attend", status_code=202)
    async def attend(body: AttendRequest, request: Request, caller: Caller, session: OwnedSession) -> BotStatus:
        """Send a meeting-bot service's bot into the call; this server runs its bridge (docs/meetings.md)."""
        return await hosted.start(session, body, _own_url(request), svc.auth.bot_token(caller, session.meeting_id))

    @app.delete("/v1/meetings/{meeting_id}/attend")
    async def leave_call(meeting_id: str, caller: Caller) -> BotStatus:
        """Ask the hosted bot to leave the call (the meeting ends with it, as when the call ends)."""
        return await hosted.ask_to_leave(caller, meeting_id)

    @app.get("/v1/meetings/{meeting_id}/decisions")
    async def decisions(found: OwnedMeeting, credential: MeetingCredential) -> list[Decision]:
        return roles.decisions_for(credential, found.decisions, found.speech)

    @app.get("/v1/meetings/{meeting_id}/actions")
    async def actions(found: OwnedMeeting, credential: MeetingCredential) -> list[ProposedAction]:
        return roles.actions_for(credential, found.actions.values(), found.info().approval)

    @app.post("/v1/meetings/{meeting_id}/ask")
    async def ask(body: AskRequest, credential: MeetingCredential, session: OwnedSession) -> Answer:
        roles.check_ask(credential, body.audience)
        return await session.ask(body.question, body.audience)

    @app.post("/v1/meetings/{meeting_id}/speech/{utterance_id}")
    async def resolve_speech(
        utterance_id: Annotated[int, Path(ge=0, le=MAX_UTTERANCE_ID)], body: Verdict, caller: Caller,
        session: OwnedSession,
    ) -> SpeechResult:
        held = await session.resolve_speech(utterance_id, body.verdict, body.text, body.comment)
        return SpeechResult(utterance_id=held.utterance_id, status=held.status, text=held.shown)

    @app.post("/v1/meetings/{meeting_id}/actions/{action_id}")
    async def resolve_action(action_id: str, body: Verdict, caller: Caller, session: OwnedSession) -> ProposedAction:
        if body.text is not None:
            raise ProtocolError(ErrorCode.bad_message, "text: an action is approved or rejected, not edited.")
        return await session.resolve_action(action_id, body.verdict, body.comment)

    @app.get("/v1/meetings/{meeting_id}/events")
    async def events(caller: Caller, found: OwnedMeeting) -> StreamingResponse:
        if isinstance(found, MeetingSession):
            watcher = found.watch()
            unsubscribe: Callable[[], None] = lambda: found.watchers.unsubscribe(watcher)  # noqa: E731
        else:
            watcher = Watcher(found.replay(), settings.watch_queue_events)
            watcher.end()
            unsubscribe = lambda: None  # noqa: E731
        return StreamingResponse(
            _event_stream(watcher, unsubscribe),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/v1/meetings/{meeting_id}/audit")
    async def audit_log(meeting_id: str, caller: Caller) -> Response:
        check_meeting_id(meeting_id)
        found = await store.events(audit_id(caller, meeting_id))
        if not found:
            raise ProtocolError(ErrorCode.not_found, f"No meeting {meeting_id!r}.")
        lines = (
            e.model_copy(update={"meeting_id": meeting_id}).model_dump_json(include=_AUDIT_FIELDS) + "\n"
            for e in found
        )
        return Response(
            "".join(lines),
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{meeting_id}.audit.jsonl"'},
        )

    @app.websocket("/v1/meetings/{meeting_id:path}/stream")  # `a%2Fb` too, to be refused with `bad_meeting_id`
    @app.websocket("/v1/meetings/{meeting_id}/stream")
    async def stream(ws: WebSocket, meeting_id: str) -> None:
        await ws.accept()
        metrics.connections.inc()
        try:
            await serve_connection(svc, ws, meeting_id)
        finally:
            metrics.connections.dec()

    return app


def _own_url(request: Request) -> str:
    """This process as its own hosted bridges reach it: the address the request came in on (never a proxy's)."""
    server = request.scope.get("server")
    if not server or server[1] is None:
        raise ProtocolError(ErrorCode.not_configured, "The server listens on no TCP address a bridge can reach.")
    host, port = server
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


_AUDIT_FIELDS = {"seq", "ts", "meeting_id", "kind", "utterance_id", "payload"}


def _bad_json(error: dict[str, object], body: object) -> ProtocolError:
    """FastAPI's "JSON decode error" at a character offset, as the parser says it: what, at which line and column."""
    ctx = error.get("ctx")
    what = str(ctx.get("error", "not JSON")) if isinstance(ctx, dict) else "not JSON"
    loc = error.get("loc")
    pos = loc[-1] if isinstance(loc, tuple | list) and loc and isinstance(loc[-1], int) else None
    doc = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    where = str(json.JSONDecodeError(what, doc, pos)) if isinstance(doc, str) and pos is not None else what
    return ProtocolError(ErrorCode.bad_json, f"The body is not valid JSON: {where}.")


def _meeting_segment(request: Request) -> str | None:
    """The meeting id of a `/v1/meetings/{id}...` path as the client sent it (percent-decoded), else None."""
    parts = request.scope.get("raw_path", b"").decode("latin-1").split("?", 1)[0].split("/")
    if parts[:3] != ["", "v1", "meetings"] or len(parts) < 4:
        return None
    return urllib.parse.unquote(parts[3])


async def _event_stream(watcher: Watcher, unsubscribe: Callable[[], None]) -> AsyncIterator[str]:
    """Server-sent events: one `data:` line of JSON per watch event; the stream ends when the watcher does."""
    try:
        while True:
            try:
                event = await asyncio.wait_for(watcher.next(), SSE_PING_S)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if event is None:
                return
            yield f"data: {event.model_dump_json()}\n\n"
    finally:
        unsubscribe()


def uvicorn_config(app: FastAPI, settings: Settings, host: str, port: int) -> uvicorn.Config:
    """The server options `run` uses (tests start their servers with the same)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # Frames past our own limit get an error frame; only far larger ones are cut by the transport.
        ws_max_size=max(1 << 20, 4 * settings.max_frame_bytes),
        # Frames are small JSON or PCM: deflate would cost CPU on every frame and save next to nothing.
        ws_per_message_deflate=False,
        log_level=settings.log_level.lower(),
        access_log=False,
        lifespan="on",
    )


class Server(uvicorn.Server):
    """uvicorn's server, taking its hosted bots out of their calls and ending the watchers' event streams first
    when it stops: uvicorn waits for every open response before the app's own shutdown, and an event stream does
    not end by itself."""

    ready_line: str | None = None
    """Printed once the app has started (`delegate serve`'s "listening on ..."): uvicorn says nothing of the
    address of a socket handed to it."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.ready_line is not None:
            print(self.ready_line, flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        state = getattr(self.config.app, "state", None)
        hosted = getattr(state, "bots", None)
        if isinstance(hosted, bots.HostedBots):
            await hosted.stop_all()  # before uvicorn closes their streams to this server
        service = getattr(state, "service", None)
        if isinstance(service, Service):
            service.sessions.end_watching()
        await super().shutdown(sockets)


def run(host: str | None = None, port: int | None = None, settings: Settings | None = None) -> None:
    """`python -m delegate serve`: refuses to listen beyond loopback unless tokens are configured.

    Every mistake found before uvicorn starts ends in one line on stderr and a non-zero exit."""
    settings = settings or load_settings()
    host = host or settings.host
    port = port or settings.port
    try:
        check_binding(host, Auth(settings.api_tokens, key=b""))  # only whether tokens exist matters here
        check_engine(settings.engine, settings)
    except ValueError as e:  # ConfigError among them
        _exit(str(e), 2)
    try:
        sock = _listen(host, port)
    except (OSError, OverflowError) as e:
        in_use = isinstance(e, OSError) and e.errno == errno.EADDRINUSE
        fix = " (another server there? choose another: --port PORT or DELEGATE_PORT)" if in_use else ""
        _exit(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}{fix}", 1)
    configure_logging(settings.log_level, json=settings.log_json)
    # Long turns are analysed in worker threads; the event loop, which answers every other meeting,
    # gets the interpreter back after 1 ms of theirs rather than the default 5 ms.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        app = create_app(settings)
    except DatabaseInUse as e:
        _exit(str(e), 1)
    server = Server(uvicorn_config(app, settings, host, port))
    server.ready_line = listening_line(host, sock.getsockname()[1])
    server.run(sockets=[sock])


def listening_line(host: str, port: int) -> str:
    """Where the server answers, and its console's page, as a browser or `DelegateClient` takes them."""
    shown = f"[{host}]" if ":" in host else host
    local = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, shown)  # a wildcard is no address to open
    return f"delegate: listening on http://{shown}:{port}; console: http://{local}:{port}/"


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening before the app loads: uvicorn would bind only after the
    app's start-up, and so log "startup complete" before failing on a port in use."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: restart through TIME_WAIT
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's default backlog
    except BaseException:
        sock.close()
        raise
    return sock


def _exit(message: str, code: int) -> NoReturn:
    print(f"delegate: {message}", file=sys.stderr)
    raise SystemExit(code)
