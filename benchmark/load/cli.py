"""The command line of `python -m benchmark.load`: one server (its own, or `--url`), or a fleet (`--fleet 2`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import typer

from benchmark.load.echo import echo_served
from benchmark.load.profile import PY_SPY_MISSING, ProfileSummary, cpu_by_part, recording, summarise
from benchmark.load.run import LoadReport, print_report, run_load
from benchmark.load.server import served
from benchmark.scoring.data import load
from benchmark.typer_call import call
from delegate.server.auth import is_loopback
from testkit.haproxy import HAProxyUnavailable
from testkit.postgres import PostgresUnavailable

DOC = (
    "N concurrent WebSocket meetings on a loopback server: decision latency percentiles, and the server's CPU "
    "per utterance."
)


def print_profile(summary: ProfileSummary, by_part: dict[str, float] | None = None) -> None:
    print(f"profile              {summary.samples} samples of the busy server")
    for group, share in summary.groups.items():
        ms = f"  {by_part[group]:.3f} ms per utterance" if by_part and group in by_part else ""
        print(f"  {share:6.1%}  {group}{ms}")
    if by_part:
        print(f"  outside the floor model: {by_part['outside the floor model']:.3f} ms of server CPU per utterance")
    print("  through (inclusive):")
    for func, share in summary.inclusive.items():
        print(f"  {share:6.1%}  {func}")
    print("  top functions (self time):")
    for func, share in summary.self_top:
        print(f"  {share:6.1%}  {func}")


app = typer.Typer(rich_markup_mode=None, add_completion=False, context_settings={"max_content_width": 120})


@app.command(help=DOC)
def _command(
    meetings: int = typer.Option(10, "--meetings", min=1, help="Concurrent meetings."),
    rate: float = typer.Option(1.0, "--rate", min=0.001, help="Utterances per second in each meeting."),
    duration: float = typer.Option(30.0, "--duration", min=0.001, help="Seconds of sending."),
    url: str = typer.Option(None, "--url", help="A running server (loopback only), e.g. http://127.0.0.1:8000."),
    token: str = typer.Option("", "--token", help="Bearer token for --url."),
    engine: str = typer.Option("local", "--engine", help="Engine of every meeting."),
    data: Path = typer.Option(None, "--data", help="Meeting file or folder (default: the shipped fixtures)."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures to this file."),
    profile: Path = typer.Option(
        None, "--profile", help="Sample the server with py-spy; collapsed stacks to this file, summary printed."
    ),
    fleet: int = typer.Option(
        0, "--fleet", min=0, help="Server processes on one PostgreSQL behind HAProxy (0: one server on SQLite)."
    ),
    kill_at: float = typer.Option(
        None, "--kill-at", help="With --fleet: seconds into the run when one process is killed (SIGKILL)."
    ),
    echo: bool = typer.Option(
        False, "--echo", help="Then the same load on a bare uvicorn WebSocket echo (the limit): its CPU per "
        "utterance, and the server's as a multiple of it.",
    ),
) -> LoadReport:
    if url and not is_loopback(urlsplit(url).hostname or ""):
        typer.echo(f"benchmark.load: --url must be a loopback address, not {url}", err=True)
        raise typer.Exit(2)
    if profile is not None and (url or fleet):
        typer.echo("benchmark.load: --profile samples the server it starts (not with --url or --fleet)", err=True)
        raise typer.Exit(2)
    if profile is not None and shutil.which("py-spy") is None:
        typer.echo(f"benchmark.load: {PY_SPY_MISSING}", err=True)
        raise typer.Exit(1)
    if kill_at is not None and not (fleet >= 2 and 0 < kill_at < duration):
        typer.echo("benchmark.load: --kill-at needs --fleet 2 or more, and 0 < --kill-at < --duration", err=True)
        raise typer.Exit(2)
    if echo and (url or fleet):
        typer.echo("benchmark.load: --echo compares the server it starts with the echo (not with --url or --fleet)", err=True)
        raise typer.Exit(2)
    if fleet == 1 or (fleet and url):
        typer.echo("benchmark.load: --fleet takes 2 or more processes, and starts them itself (no --url)", err=True)
        raise typer.Exit(2)
    args = argparse.Namespace(
        meetings=meetings, rate=rate, duration=duration, url=url, token=token, engine=engine, data=data,
        json=json_out, fleet=fleet, kill_at=kill_at,
    )
    selected = [m for m in load(args.data) if m.utterances]
    if fleet:
        from benchmark.load.fleet import print_fleet, run_fleet

        try:
            fleet_report = run_fleet(selected, args)
        except (PostgresUnavailable, HAProxyUnavailable) as e:
            typer.echo(f"benchmark.load: the fleet cannot start: {e}", err=True)
            raise typer.Exit(1) from None
        print_fleet(fleet_report)
        if args.json:
            args.json.write_text(fleet_report.model_dump_json(indent=2) + "\n")
        return fleet_report.load
    summary: ProfileSummary | None = None
    if args.url:
        report = asyncio.run(run_load(args.url, args.token, selected, args))
    else:
        with served(args.engine) as server:
            sampling = recording(server.pid, profile) if profile is not None else contextlib.nullcontext()
            with sampling:
                report = asyncio.run(run_load(server.url, server.token, selected, args))
        if profile is not None:
            summary = summarise(profile)
            if report.server_cpu_ms_per_utterance is not None:
                report = report.model_copy(
                    update={"cpu_ms_by_part": cpu_by_part(summary, report.server_cpu_ms_per_utterance)}
                )
    if echo:
        with echo_served() as limit:
            echo_report = asyncio.run(run_load(limit.url, limit.token, selected, args))
        report = report.with_echo(echo_report)
    print_report(report)
    if summary is not None:
        print_profile(summary, report.cpu_ms_by_part)
    if args.json:
        args.json.write_text(report.model_dump_json(indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> LoadReport:
    """Run from the command line, or from code with `argv`; exits (SystemExit) on bad options."""
    return call(app, argv)
