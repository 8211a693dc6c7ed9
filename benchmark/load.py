"""`python -m benchmark.load`: N concurrent WebSocket meetings on a loopback server; decision latency percentiles.

Each meeting replays a fixture meeting's utterances at R per second for S seconds. Latency is measured by
the client: utterance sent to its decision received. The server runs in a subprocess (or at `--url`, which
must be loopback), with its own audit database in a temporary folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np
import typer
from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect

from benchmark.scoring.data import BenchMeeting, load
from benchmark.typer_call import call
from delegate.extras import run_cli
from delegate.models import Profile
from delegate.server.auth import is_loopback
from testkit.cluster import free_port

GRACE_S = 5.0
"""How long to wait, after the last utterance, for its decision."""


class LoadReport(BaseModel):
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    errors: int
    decisions: int
    throughput_per_s: float
    server_rss_mb: float | None
    """Peak resident memory of the server process during the run."""
    meetings: int
    rate: float
    duration_s: float
    engine: str
    utterances_sent: int
    dropped: int
    """Utterances whose decision the server dropped because the next one came first (not errors)."""
    error_codes: dict[str, int]


@dataclass
class _Meeting:
    """What one client meeting saw."""

    sent: dict[int, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    utterances: int = 0
    dropped: int = 0


def _principal(bench: BenchMeeting, k: int) -> Profile:
    labels = sorted(bench.profiles)
    if labels:
        return bench.profile(labels[k % len(labels)])
    return Profile(name=bench.attendees[k % len(bench.attendees)])


async def _receive(ws: ClientConnection, stats: _Meeting) -> None:
    async for raw in ws:
        now = time.perf_counter()
        frame = json.loads(raw)
        if frame["type"] == "decision":
            uid = frame["decision"]["utterance_id"]
            sent = stats.sent.pop(uid, None)
            if sent is not None:
                stats.latencies.append(now - sent)
            # Older utterances still waiting were superseded: their decisions were dropped, by design.
            for older in [u for u in stats.sent if u < uid]:
                del stats.sent[older]
                stats.dropped += 1
        elif frame["type"] == "error":
            stats.errors.append(frame["code"])


async def _run_meeting(
    url: str, token: str, meeting_id: str, bench: BenchMeeting, k: int, args: argparse.Namespace, start: float
) -> _Meeting:
    stats = _Meeting()
    ws_url = url.replace("http", "ws", 1).rstrip("/") + f"/v1/meetings/{meeting_id}/stream"
    try:
        async with connect(
            ws_url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=30
        ) as ws:
            principal = _principal(bench, k)
            join = {
                "type": "join",
                "principal": principal.model_dump(mode="json"),
                "attendees": bench.attendees,
                "names": bench.names,
                "engine": args.engine,
                "voice": False,  # text bots: decision latency under load
            }
            await ws.send(json.dumps(join))
            ack = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if ack.get("type") != "ack":
                stats.errors.append(f"join:{ack.get('code', ack.get('type'))}")
                return stats
            receiver = asyncio.create_task(_receive(ws, stats))
            # Spread the meetings over one period so they do not all speak in the same millisecond.
            first = start + (k / args.meetings) / args.rate
            n = 0
            while (due := first + n / args.rate) < start + args.duration:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                u = bench.utterances[n % len(bench.utterances)]
                stats.sent[n] = time.perf_counter()
                await ws.send(
                    json.dumps({"type": "utterance", "id": n, "speaker": u.speaker, "text": u.text})
                )
                n += 1
            stats.utterances = n
            deadline = time.perf_counter() + GRACE_S
            while stats.sent and time.perf_counter() < deadline:
                await asyncio.sleep(0.02)
            stats.errors.extend("no_decision" for _ in stats.sent)
            await ws.send(json.dumps({"type": "leave", "reason": "load test over"}))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(receiver, 5)
            receiver.cancel()
    except (OSError, TimeoutError) as e:
        stats.errors.append(f"connection:{type(e).__name__}")
    except Exception as e:  # a closed connection or a bad frame: count it, keep the others going
        stats.errors.append(f"client:{type(e).__name__}")
    return stats


async def _rss_mb(http: httpx.AsyncClient) -> float | None:
    with contextlib.suppress(httpx.HTTPError):
        for line in (await http.get("/metrics")).text.splitlines():
            if line.startswith("process_resident_memory_bytes "):
                return float(line.split()[1]) / 2**20
    return None


async def _sample_rss(http: httpx.AsyncClient, peak: list[float]) -> None:
    while True:
        rss = await _rss_mb(http)
        if rss is not None:
            peak.append(rss)
        await asyncio.sleep(1.0)


async def run_load(
    url: str, token: str, meetings: list[BenchMeeting], args: argparse.Namespace
) -> LoadReport:
    run = secrets.token_hex(4)
    rss: list[float] = []
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as http:
        sampler = asyncio.create_task(_sample_rss(http, rss))
        start = time.perf_counter() + 0.5
        results = await asyncio.wait_for(
            asyncio.gather(
                *(
                    _run_meeting(url, token, f"load-{run}-{k}", meetings[k % len(meetings)], k, args, start)
                    for k in range(args.meetings)
                )
            ),
            timeout=args.duration + GRACE_S + 90,
        )
        elapsed = time.perf_counter() - start
        sampler.cancel()
        final = await _rss_mb(http)
    if final is not None:
        rss.append(final)
    latencies = np.array([x for r in results for x in r.latencies]) * 1000
    codes: dict[str, int] = {}
    for r in results:
        for code in r.errors:
            codes[code] = codes.get(code, 0) + 1

    def pct(q: float) -> float | None:
        return round(float(np.percentile(latencies, q)), 3) if latencies.size else None

    return LoadReport(
        p50_ms=pct(50),
        p95_ms=pct(95),
        p99_ms=pct(99),
        errors=sum(codes.values()),
        decisions=int(latencies.size),
        throughput_per_s=round(latencies.size / elapsed, 2),
        server_rss_mb=round(max(rss), 1) if rss else None,
        meetings=args.meetings,
        rate=args.rate,
        duration_s=round(elapsed, 2),
        engine=args.engine,
        utterances_sent=sum(r.utterances for r in results),
        dropped=sum(r.dropped for r in results),
        error_codes=codes,
    )


@contextlib.contextmanager
def local_server(
    engine: str, voice: bool = False, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """`python -m delegate serve` on a free loopback port, with a fresh audit database; yields (url, token).

    Without `voice` it loads no voice and speaks to no one (figures about decisions and transcripts).
    `env`: more environment variables for the server (settings, e.g. `DELEGATE_ASR_MAX_STREAMS`).
    """
    token = secrets.token_urlsafe(16)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="delegate-load-") as tmp:
        env = {
            **os.environ,
            "DELEGATE_DB_PATH": str(Path(tmp) / "audit.sqlite"),
            "DELEGATE_API_TOKENS": token,
            "DELEGATE_ENGINE": engine,
            "DELEGATE_LOG_LEVEL": "warning",
            "DELEGATE_VOICE": "true" if voice else "false",
            **(env or {}),
        }
        log_path = Path(tmp) / "server.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "delegate", "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            url = f"http://127.0.0.1:{port}"
            try:
                _wait_healthy(url, proc, log_path)
                yield url, token
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log_path: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server not healthy after {timeout:.0f} s:\n{log_path.read_text()[-2000:]}")


def _print(report: LoadReport) -> None:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f} ms"

    print(
        f"meetings {report.meetings} x {report.rate:g} utt/s for {report.duration_s:.1f} s, engine {report.engine}"
    )
    print(f"utterances sent      {report.utterances_sent}")
    print(f"decisions received   {report.decisions}  (dropped as stale: {report.dropped})")
    print(f"throughput           {report.throughput_per_s:.1f} decisions/s")
    print(f"latency p50/p95/p99  {ms(report.p50_ms)} / {ms(report.p95_ms)} / {ms(report.p99_ms)}")
    print(f"errors               {report.errors}  {report.error_codes or ''}".rstrip())
    rss = "-" if report.server_rss_mb is None else f"{report.server_rss_mb:.0f} MiB"
    print(f"server RSS (peak)    {rss}")


app = typer.Typer(rich_markup_mode=None, add_completion=False, context_settings={"max_content_width": 120})


@app.command(help=__doc__.splitlines()[0])
def _command(
    meetings: int = typer.Option(10, "--meetings", min=1, help="Concurrent meetings."),
    rate: float = typer.Option(1.0, "--rate", min=0.001, help="Utterances per second in each meeting."),
    duration: float = typer.Option(30.0, "--duration", min=0.001, help="Seconds of sending."),
    url: str = typer.Option(None, "--url", help="A running server (loopback only), e.g. http://127.0.0.1:8000."),
    token: str = typer.Option("", "--token", help="Bearer token for --url."),
    engine: str = typer.Option("local", "--engine", help="Engine of every meeting."),
    data: Path = typer.Option(None, "--data", help="Meeting file or folder (default: the shipped fixtures)."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures to this file."),
) -> LoadReport:
    if url and not is_loopback(urlsplit(url).hostname or ""):
        typer.echo(f"benchmark.load: --url must be a loopback address, not {url}", err=True)
        raise typer.Exit(2)
    args = argparse.Namespace(
        meetings=meetings, rate=rate, duration=duration, url=url, token=token, engine=engine, data=data, json=json_out
    )
    selected = [m for m in load(args.data) if m.utterances]
    if args.url:
        report = asyncio.run(run_load(args.url, args.token, selected, args))
    else:
        with local_server(args.engine) as (server, key):
            report = asyncio.run(run_load(server, key, selected, args))
    _print(report)
    if args.json:
        args.json.write_text(report.model_dump_json(indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> LoadReport:
    """Run from the command line, or from code with `argv`; exits (SystemExit) on bad options."""
    return call(app, argv)


if __name__ == "__main__":
    run_cli(main)
