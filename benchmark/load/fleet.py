"""`python -m benchmark.load --fleet 2`: the load run against server processes on one PostgreSQL behind HAProxy.

A throwaway PostgreSQL, `--fleet` `delegate serve` processes on it and HAProxy in front (hashing on the
meeting id, as docs/deploy.md configures it) start on loopback; every client meeting connects through
HAProxy. With `--kill-at` one process is killed (SIGKILL) mid-run: its clients reconnect through HAProxy
with their `last_utterance_id`, and the process HAProxy picks now takes their meetings over from the log.
At the end the audit log is read back from PostgreSQL: nothing may be lost or decided twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
from pydantic import BaseModel

from benchmark.chaos import MAIN_TOKEN, Client, check_meeting, read_log
from benchmark.load.run import LoadReport, client_cpu_s, loadavg, principal_of, print_report, process_figures
from benchmark.scoring.data import BenchMeeting
from testkit.cluster import ServerProcess, start_server
from testkit.haproxy import HAProxy, haproxy
from testkit.postgres import temp_postgres

GRACE_S = 10.0


class ProcessFigures(BaseModel):
    name: str
    killed: bool
    cpu_s: float | None
    """CPU seconds over the run (a killed process: up to its last reading before the kill)."""
    rss_mb: float | None
    """Peak resident memory."""


class FleetReport(BaseModel):
    load: LoadReport
    processes: list[ProcessFigures]
    haproxy_cpu_s: float | None
    utterances_lost: int
    """Utterances a client said that are not in the log (a client that gave up never sent its last ones again)."""
    acked_lost: int = 0
    """Utterances the server acknowledged that are not in the log: what its durability promises never happens."""
    decisions_lost: int
    duplicate_decisions: int
    audit_consistent: bool
    audit_problems: list[str]
    gave_up: int = 0
    """Clients that could not reconnect within their 30 s and stopped (each a meeting the delegate left)."""
    failovers: int
    """Client reconnections after the kill (each a meeting resumed on the other process)."""
    failover_s_p50: float | None
    failover_s_p95: float | None
    failover_s_max: float | None
    killed_at_s: float | None


def _proc_cpu_s(pid: int) -> float | None:
    """utime + stime of a child process from /proc (HAProxy has no /metrics of ours)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _process_figures(server: ServerProcess) -> tuple[float | None, float | None]:
    headers = {"Authorization": f"Bearer {MAIN_TOKEN}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=5) as http:
        figures = await process_figures(http)
    rss = figures.get("process_resident_memory_bytes")
    return figures.get("process_cpu_seconds_total"), None if rss is None else rss / 2**20


class _Watch:
    """The processes' CPU and peak memory, read every second (a killed one keeps its last reading)."""

    def __init__(self, servers: list[ServerProcess]) -> None:
        self.servers = servers
        self.cpu: list[float | None] = [None] * len(servers)
        self.first: list[float | None] = [None] * len(servers)
        self.rss: list[float] = [0.0] * len(servers)

    async def read(self) -> None:
        for i, server in enumerate(self.servers):
            if not server.alive:
                continue
            with contextlib.suppress(httpx.HTTPError):
                cpu, rss = await _process_figures(server)
                if cpu is not None:
                    self.cpu[i] = cpu
                    if self.first[i] is None:
                        self.first[i] = cpu
                if rss is not None:
                    self.rss[i] = max(self.rss[i], rss)

    async def run(self) -> None:
        while True:
            await self.read()
            await asyncio.sleep(1.0)

    def used(self, i: int) -> float | None:
        first, last = self.first[i], self.cpu[i]
        return None if first is None or last is None else last - first


def _clients(meetings: list[BenchMeeting], n: int, balancer: HAProxy, run_id: str) -> list[Client]:
    clients = []
    for k in range(n):
        bench = meetings[k % len(meetings)]
        clients.append(
            Client(
                meeting_id=f"fleet-{run_id}-{k}",
                principal=principal_of(bench, k),
                attendees=bench.attendees,
                names=bench.names,
                lines=[(u.speaker, u.text) for u in bench.utterances if u.text.strip()],
                engine="local",
                servers=[balancer],
                # No principal here holds a secret: a token no text can contain.
                secret=f"no-secret-{secrets.token_hex(8)}",
            )
        )
    return clients


async def _run(
    args: argparse.Namespace, meetings: list[BenchMeeting], pg_url: str, servers: list[ServerProcess], balancer: HAProxy
) -> FleetReport:
    watch = _Watch(servers)
    await watch.read()
    haproxy_before = _proc_cpu_s(balancer.proc.pid)
    client_before = client_cpu_s()
    clients = _clients(meetings, args.meetings, balancer, secrets.token_hex(3))
    began = time.perf_counter()
    # A client that cannot join now tries again when its meeting starts (and counts as an error if it never can).
    await asyncio.gather(*(c.connect() for c in clients), return_exceptions=True)
    start = time.perf_counter() + 0.5
    watcher = asyncio.create_task(watch.run())
    killed_at: float | None = None

    async def kill_later() -> None:
        nonlocal killed_at
        await asyncio.sleep(max(0.0, start + args.kill_at - time.perf_counter()))
        await watch.read()  # the victim's CPU up to the kill
        servers[0].kill()
        killed_at = time.perf_counter() - start

    killer = asyncio.create_task(kill_later()) if args.kill_at is not None else None
    results = await asyncio.wait_for(
        asyncio.gather(
            *(c.run(start, args.rate, args.duration, (k / len(clients)) / args.rate) for k, c in enumerate(clients)),
            return_exceptions=True,
        ),
        timeout=args.duration + GRACE_S + 120,
    )
    if killer is not None:
        await killer
    watcher.cancel()
    await watch.read()
    elapsed = time.perf_counter() - start
    haproxy_after = _proc_cpu_s(balancer.proc.pid)
    log = await read_log(pg_url)

    codes: dict[str, int] = {}
    for r in results:
        if isinstance(r, BaseException):
            key = f"client:{type(r).__name__}"
            codes[key] = codes.get(key, 0) + 1
    problems: list[str] = []
    lost_u = lost_d = dups = stale = acked_lost = 0
    for c in clients:
        p, lu, ld, du, st = check_meeting(c, log.get(c.meeting_id, []))
        logged = {e["utterance_id"] for e in log.get(c.meeting_id, []) if e["kind"] == "utterance"}
        acked_lost += len(c.acked - logged)
        problems += p
        lost_u, lost_d, dups, stale = lost_u + lu, lost_d + ld, dups + du, stale + st
        for code, n in c.errors.items():
            codes[code] = codes.get(code, 0) + n
        if c.sent_at:
            codes["no_decision"] = codes.get("no_decision", 0) + len(c.sent_at)
    latencies = np.array([x for c in clients for x in c.latencies]) * 1000
    failovers = np.array([x for c in clients for x in c.failovers])
    sent = sum(len(c.sent) for c in clients)
    cpu = [watch.used(i) for i in range(len(servers))]
    total_cpu = sum(x for x in cpu if x is not None) if any(x is not None for x in cpu) else None

    def pct(values: np.ndarray, q: float, digits: int) -> float | None:
        return round(float(np.percentile(values, q)), digits) if values.size else None

    # Reconnection attempts that met the dead process or a hold not yet released are how a failover
    # looks from the client, not errors; what is lost shows in the audit check.
    errors = {k: v for k, v in codes.items() if not k.startswith(("connect:", "join:"))}
    load = LoadReport(
        p50_ms=pct(latencies, 50, 3),
        p95_ms=pct(latencies, 95, 3),
        p99_ms=pct(latencies, 99, 3),
        errors=sum(errors.values()),
        decisions=int(latencies.size),
        throughput_per_s=round(latencies.size / elapsed, 2),
        server_rss_mb=round(max(watch.rss), 1),
        meetings=args.meetings,
        rate=args.rate,
        duration_s=round(elapsed, 2),
        engine="local",
        utterances_sent=sent,
        dropped=stale,
        error_codes=codes,
        server_cpu_s=None if total_cpu is None else round(total_cpu, 2),
        server_cpu_ms_per_utterance=None if total_cpu is None or not sent else round(1000 * total_cpu / sent, 3),
        server_cpu_share=None if total_cpu is None else round(total_cpu / (time.perf_counter() - began), 3),
        client_cpu_s=round(client_cpu_s() - client_before, 2),
        loadavg=loadavg(),
    )
    return FleetReport(
        load=load,
        processes=[
            ProcessFigures(
                name=f"server-{i}",
                killed=not s.alive,
                cpu_s=None if cpu[i] is None else round(cpu[i], 2),
                rss_mb=round(watch.rss[i], 1) or None,
            )
            for i, s in enumerate(servers)
        ],
        haproxy_cpu_s=None if haproxy_before is None or haproxy_after is None else round(haproxy_after - haproxy_before, 2),
        utterances_lost=lost_u,
        acked_lost=acked_lost,
        decisions_lost=lost_d,
        duplicate_decisions=dups,
        audit_consistent=not problems,
        audit_problems=problems[:20],
        gave_up=sum(isinstance(r, RuntimeError) for r in results),
        failovers=int(failovers.size),
        failover_s_p50=pct(failovers, 50, 3),
        failover_s_p95=pct(failovers, 95, 3),
        failover_s_max=round(float(failovers.max()), 3) if failovers.size else None,
        killed_at_s=None if killed_at is None else round(killed_at, 2),
    )


def run_fleet(meetings: list[BenchMeeting], args: argparse.Namespace) -> FleetReport:
    """PostgreSQL, `args.fleet` server processes and HAProxy on loopback; the run; everything stopped."""
    with temp_postgres() as pg, tempfile.TemporaryDirectory(prefix="delegate-fleet-") as folder:
        tmp = Path(folder)
        env = {
            "DELEGATE_DATABASE_URL": pg.url,
            "DELEGATE_API_TOKENS": MAIN_TOKEN,
            "DELEGATE_ENGINE": args.engine,
            "DELEGATE_VOICE": "false",
        }
        servers = [start_server(env, tmp / f"server-{i}.log") for i in range(args.fleet)]
        try:
            for s in servers:
                s.wait_healthy()
            with haproxy([(f"server-{i}", s.port) for i, s in enumerate(servers)], tmp) as balancer:
                return asyncio.run(_run(args, meetings, pg.url, servers, balancer))
        finally:
            for s in servers:
                s.stop()


def print_fleet(report: FleetReport) -> None:
    print_report(report.load)
    for p in report.processes:
        print(f"  {p.name:<10} cpu {p.cpu_s} s, peak RSS {p.rss_mb} MiB{'  (killed)' if p.killed else ''}")
    print(f"haproxy CPU          {report.haproxy_cpu_s} s")
    print(f"utterances lost      {report.utterances_lost}  (acknowledged, then lost: {report.acked_lost})")
    print(f"decisions lost       {report.decisions_lost}   decided twice {report.duplicate_decisions}")
    print(f"audit consistent     {report.audit_consistent}  {'; '.join(report.audit_problems[:3])}".rstrip())
    if report.killed_at_s is not None:
        print(
            f"killed server-0 at   {report.killed_at_s} s; {report.failovers} meetings resumed, {report.gave_up} gave up, "
            f"failover p50/p95/max {report.failover_s_p50} / {report.failover_s_p95} / {report.failover_s_max} s"
        )
