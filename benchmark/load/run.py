"""One load run: N client meetings against one server URL; latency, drops, errors, and the server's CPU and memory.

Each meeting replays a fixture meeting's utterances at R per second for S seconds. Latency is measured by
the client: utterance sent to its decision received. The server's CPU comes from its own `/metrics`
(`process_cpu_seconds_total`), read before the first join and after the last leave: CPU per utterance is
the figure that stays comparable when the load client shares the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect

from benchmark.scoring.data import BenchMeeting
from delegate.models import Profile

GRACE_S = 5.0
"""How long to wait, after the last utterance, for its decision."""


class SlowestDecision(BaseModel):
    """The slowest decision of the run, and what it spent its time on."""

    meeting_id: str
    utterance_id: int
    latency_ms: float
    """Utterance sent to decision received, at the client."""
    engine_ms: float
    """The engine's own time (the decision's `latency_ms`); the rest waited: the event loop, the audit write, the
    socket."""
    reason: str
    cause: str

    @classmethod
    def of(cls, meeting_id: str, utterance_id: int, latency_s: float, decision: dict[str, Any]) -> SlowestDecision:
        total = latency_s * 1000
        engine = float(decision.get("latency_ms") or 0.0)
        reason = str(decision.get("reason") or "")
        if engine >= total / 2:
            read = "their brief" in reason
            cause = "the engine" + (" (the sentence encoder read the turn against the brief)" if read else "")
        else:
            cause = "waiting (event loop busy with other meetings, the audit write, or the socket)"
        return cls(
            meeting_id=meeting_id, utterance_id=utterance_id, latency_ms=round(total, 3), engine_ms=round(engine, 3),
            reason=reason, cause=cause,
        )


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
    server_cpu_s: float | None = None
    """CPU seconds (user + system) the server process spent from before the first join to after the last leave."""
    server_cpu_ms_per_utterance: float | None = None
    """`server_cpu_s` over the utterances sent: the headline, as it does not depend on who else uses the CPU."""
    server_cpu_share: float | None = None
    """`server_cpu_s` over the run's wall time: 1.0 is one core fully busy."""
    client_cpu_s: float | None = None
    """CPU seconds of this load client over the same time (it shares the machine with the server)."""
    loadavg: str | None = None
    """/proc/loadavg at the end of the run: how busy the machine was."""
    slowest: SlowestDecision | None = None
    cpu_ms_by_part: dict[str, float] | None = None
    """With `--profile`: the server's CPU per utterance (ms) split by the profile's parts."""
    echo_cpu_ms_per_utterance: float | None = None
    """With `--echo`: a bare uvicorn WebSocket echo's CPU per utterance under the same load (the limit)."""
    echo_ratio: float | None = None
    """`server_cpu_ms_per_utterance` over the echo's."""
    echo_p99_ms: float | None = None

    def with_echo(self, echo: LoadReport) -> LoadReport:
        """This report with the echo's figures beside it."""
        mine, limit = self.server_cpu_ms_per_utterance, echo.server_cpu_ms_per_utterance
        ratio = round(mine / limit, 2) if mine is not None and limit else None
        return self.model_copy(
            update={"echo_cpu_ms_per_utterance": limit, "echo_ratio": ratio, "echo_p99_ms": echo.p99_ms}
        )


@dataclass
class _Meeting:
    """What one client meeting saw."""

    sent: dict[int, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    utterances: int = 0
    dropped: int = 0
    slowest: tuple[float, int, dict[str, Any]] | None = None
    """The slowest decision: latency (s), utterance id, the decision."""


def principal_of(bench: BenchMeeting, k: int) -> Profile:
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
                if stats.slowest is None or now - sent > stats.slowest[0]:
                    stats.slowest = (now - sent, uid, frame["decision"])
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
            principal = principal_of(bench, k)
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


async def process_figures(http: httpx.AsyncClient) -> dict[str, float]:
    """The server's `process_*` figures from its `/metrics` (empty when it cannot be read)."""
    figures: dict[str, float] = {}
    with contextlib.suppress(httpx.HTTPError):
        for line in (await http.get("/metrics")).text.splitlines():
            if line.startswith("process_"):
                name, _, value = line.partition(" ")
                with contextlib.suppress(ValueError):
                    figures[name] = float(value)
    return figures


async def _rss_mb(http: httpx.AsyncClient) -> float | None:
    rss = (await process_figures(http)).get("process_resident_memory_bytes")
    return None if rss is None else rss / 2**20


async def server_cpu_s(http: httpx.AsyncClient) -> float | None:
    return (await process_figures(http)).get("process_cpu_seconds_total")


def client_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def loadavg() -> str | None:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
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
        cpu_before = await server_cpu_s(http)
        client_before = client_cpu_s()
        began = time.perf_counter()
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
        cpu_after = await server_cpu_s(http)
        client_used = client_cpu_s() - client_before
        wall = time.perf_counter() - began
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

    sent = sum(r.utterances for r in results)
    slow = max(
        ((k, r.slowest) for k, r in enumerate(results) if r.slowest is not None), key=lambda x: x[1][0], default=None
    )
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
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
        utterances_sent=sent,
        dropped=sum(r.dropped for r in results),
        error_codes=codes,
        server_cpu_s=None if cpu is None else round(cpu, 2),
        server_cpu_ms_per_utterance=None if cpu is None or not sent else round(1000 * cpu / sent, 3),
        server_cpu_share=None if cpu is None else round(cpu / wall, 3),
        client_cpu_s=round(client_used, 2),
        loadavg=loadavg(),
        slowest=None if slow is None else SlowestDecision.of(f"load-{run}-{slow[0]}", slow[1][1], slow[1][0], slow[1][2]),
    )


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} ms"


def print_report(report: LoadReport) -> None:
    print(
        f"meetings {report.meetings} x {report.rate:g} utt/s for {report.duration_s:.1f} s, engine {report.engine}"
    )
    print(f"utterances sent      {report.utterances_sent}")
    print(f"decisions received   {report.decisions}  (dropped as stale: {report.dropped})")
    print(f"throughput           {report.throughput_per_s:.1f} decisions/s")
    print(f"latency p50/p95/p99  {_ms(report.p50_ms)} / {_ms(report.p95_ms)} / {_ms(report.p99_ms)}")
    print(f"errors               {report.errors}  {report.error_codes or ''}".rstrip())
    rss = "-" if report.server_rss_mb is None else f"{report.server_rss_mb:.0f} MiB"
    print(f"server RSS (peak)    {rss}")
    if report.server_cpu_ms_per_utterance is not None:
        print(
            f"server CPU           {report.server_cpu_ms_per_utterance:.3f} ms per utterance "
            f"({report.server_cpu_s:.1f} s, {report.server_cpu_share:.0%} of a core); "
            f"load client {report.client_cpu_s:.1f} s"
        )
    if report.slowest is not None:
        w = report.slowest
        print(
            f"slowest decision     {w.latency_ms:.1f} ms (engine {w.engine_ms:.1f} ms), utterance {w.utterance_id} of "
            f"{w.meeting_id}: {w.cause}"
        )
    if report.echo_cpu_ms_per_utterance is not None:
        ratio = "-" if report.echo_ratio is None else f"{report.echo_ratio:.2f}x"
        print(
            f"bare echo (limit)    {report.echo_cpu_ms_per_utterance:.3f} ms per utterance, p99 "
            f"{_ms(report.echo_p99_ms)}; the server takes {ratio} the echo's CPU"
        )
    print(f"load average         {report.loadavg or '-'}")
