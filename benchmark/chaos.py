"""`python -m benchmark.chaos --json OUT`: faults against two server processes on PostgreSQL, and what was lost.

Two `delegate serve` processes share a throwaway PostgreSQL on loopback. `--meetings` meetings stream (each
on the process a proxy routing by meeting id would pick); after `--kill-at` seconds one process is killed
with SIGKILL and its clients reconnect to the other, which takes their meetings over from the log.
Meanwhile one tenant sends poison frames (ids past 64 bits, non-finite numbers, wrong types, malformed,
oversize and binary frames, another tenant's meeting), and `--llm-meetings` meetings use the `llm` engine
against a loopback endpoint that hangs, fails, answers nonsense or confirms the principal's secret.
At the end the audit log is read back from PostgreSQL and checked against what every client sent and got.
Everything is on 127.0.0.1 and stops by itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg

import argparse
import asyncio
import contextlib
import itertools
import json
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from benchmark.scoring.data import BenchMeeting, load
from delegate.client import retry_delay
from delegate.models import BackgroundItem, Profile
from delegate.server.auth import fingerprint
from delegate.server.protocol import ErrorCode
from testkit.cluster import CLUSTER_OWNER_KEY, ServerProcess, start_server
from testkit.fake_openai import Reply, ScriptedOpenAI
from testkit.postgres import temp_postgres

MAIN_TOKEN = "chaos-main-token"
POISON_TOKEN = "chaos-poison-token"
GRACE_S = 10.0
"""After the last utterance: how long a client waits for its decision."""
RECONNECT_S = 30.0
LLM_MODES = ("hang", "fail", "garbage", "leak", "ok")
_MARK = re.compile(r"\(chaos:(\w+)\)")
_SECRET = re.compile(r"Zanzibar\d+")
_OUTBOUND = ("speak", "reason", "description", "offer")
"""Fields of the log that the service said or proposed (the excerpts quote the transcript)."""
NAMED_ERRORS = frozenset(str(c) for c in ErrorCode)


class ChaosReport(BaseModel):
    faults_injected: int
    faults: dict[str, int]
    utterances_sent: int
    utterances_lost: int
    decisions_lost: int
    duplicate_decisions: int
    private_leaks: int
    """Decisions and actions (said, or recorded) holding a principal's private item."""
    private_leaks_by_engine: dict[str, int]
    audit_consistent: bool
    audit_problems: list[str]
    failover_s_p50: float | None
    failover_s_p95: float | None
    failover_s_max: float | None
    failovers: int
    meetings: int
    llm_meetings: int
    poison_frames_unanswered: int
    poison_unanswered: list[str]
    poison_answers: dict[str, int]
    """fault:answer -> count (an error code, `ack`, or `close:<code>`)."""
    poison_reached_other_meetings: int
    decisions_dropped_as_stale: int
    client_errors: dict[str, int]
    duration_s: float


class Endpoint(Protocol):
    """Where a client connects: one server process, or a load balancer in front of several."""

    def ws_url(self, meeting_id: str) -> str: ...

    @property
    def alive(self) -> bool: ...


@dataclass
class Client:
    """One meeting's client: streams its lines, and resumes on the other process when its connection dies."""

    meeting_id: str
    principal: Profile
    attendees: list[str]
    names: dict[str, str]
    lines: list[tuple[str, str]]
    engine: str
    servers: list[Endpoint]
    secret: str
    at: int = 0
    sent: list[int] = field(default_factory=list)
    sent_at: dict[int, float] = field(default_factory=dict)
    """When each utterance still waiting for its decision was first sent (a resend keeps the first time)."""
    latencies: list[float] = field(default_factory=list)
    """First send to decision received, seconds, per decided utterance (a failover's wait included)."""
    acked: set[int] = field(default_factory=set)
    decisions: Counter[int] = field(default_factory=Counter)
    leaked: set[str] = field(default_factory=set)
    """Decisions (`d<utterance id>`) and actions (`a<id>`) whose speech, reason or description held the secret."""
    errors: Counter[str] = field(default_factory=Counter)
    failovers: list[float] = field(default_factory=list)
    lost_at: float | None = None
    _ws: ClientConnection | None = None
    _receiver: asyncio.Task[None] | None = None

    def _join(self) -> dict[str, Any]:
        return {
            "type": "join",
            "voice": False,  # text bots: the figures are about decisions, not speech
            "principal": self.principal.model_dump(mode="json"),
            "attendees": self.attendees,
            "names": self.names,
            "engine": self.engine,
            "last_utterance_id": self.sent[-1] if self.sent else None,
        }

    async def _receive(self, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                frame = json.loads(raw)
                kind = frame.get("type")
                if kind == "ack" and frame.get("of") == "utterance":
                    self.acked.add(frame["utterance_id"])
                elif kind == "decision":
                    d = frame["decision"]
                    first_sent = self.sent_at.pop(d["utterance_id"], None)
                    if first_sent is not None:
                        self.latencies.append(time.perf_counter() - first_sent)
                    for older in [u for u in self.sent_at if u < d["utterance_id"]]:
                        del self.sent_at[older]  # superseded: dropped as stale, by design
                    if not frame.get("resumed") or self.decisions[d["utterance_id"]] == 0:
                        self.decisions[d["utterance_id"]] += 1
                    if any(self.secret in (d.get(k) or "") for k in _OUTBOUND):
                        self.leaked.add(f"d{d['utterance_id']}")
                elif kind == "action":
                    a = frame["action"]
                    if any(self.secret in (a.get(k) or "") for k in _OUTBOUND):
                        self.leaked.add(f"a{a['id']}")
                elif kind == "error":
                    self.errors[frame.get("code", "?")] += 1
        except ConnectionClosed:
            pass
        finally:
            if self.lost_at is None:
                self.lost_at = time.perf_counter()

    @property
    def connected(self) -> bool:
        return self._receiver is not None and not self._receiver.done()

    async def connect(self) -> None:
        """Join (or resume) on the preferred process, else the next; resend what the server did not record."""
        reconnecting = self._ws is not None
        began = self.lost_at if self.lost_at is not None else time.perf_counter()
        deadline = time.perf_counter() + RECONNECT_S
        attempts = itertools.count()
        while time.perf_counter() < deadline:
            server = self.servers[self.at % len(self.servers)]
            try:
                ws = await connect(
                    server.ws_url(self.meeting_id),
                    additional_headers={"Authorization": f"Bearer {MAIN_TOKEN}"},
                    open_timeout=3,
                    max_size=None,
                )
            except (OSError, TimeoutError, InvalidHandshake) as e:  # a process killed mid-handshake too
                self.errors[f"connect:{type(e).__name__}"] += 1
                self._next_if_dead(server)
                await asyncio.sleep(retry_delay(next(attempts)))  # as the typed client: jittered backoff
                continue
            try:
                await ws.send(json.dumps(self._join()))
                ack = json.loads(await asyncio.wait_for(ws.recv(), 10))
            except (ConnectionClosed, TimeoutError, OSError) as e:
                self.errors[f"join:{type(e).__name__}"] += 1
                await ws.close()
                self._next_if_dead(server)
                await asyncio.sleep(retry_delay(next(attempts)))
                continue
            if ack.get("type") != "ack":
                # `conflict`: the dead process's hold has not been released yet; try again shortly.
                self.errors[f"join:{ack.get('code')}"] += 1
                await ws.close()
                await asyncio.sleep(retry_delay(next(attempts)))
                continue
            if reconnecting:
                self.failovers.append(time.perf_counter() - began)
            self.lost_at = None
            self._ws = ws
            self._receiver = asyncio.create_task(self._receive(ws))
            last = ack.get("last_utterance_id")
            for uid in [u for u in self.sent if last is None or u > last]:
                await self._send_utterance(uid)
            return
        raise RuntimeError(f"{self.meeting_id}: could not reconnect within {RECONNECT_S:.0f} s")

    def _next_if_dead(self, server: Endpoint) -> None:
        # As a proxy with health checks does: a meeting stays on its process while that one lives.
        if not server.alive:
            self.at += 1

    async def _send_utterance(self, uid: int) -> None:
        speaker, text = self.lines[uid % len(self.lines)]
        assert self._ws is not None
        await self._ws.send(json.dumps({"type": "utterance", "id": uid, "speaker": speaker, "text": text}))

    async def say(self, uid: int) -> None:
        self.sent.append(uid)
        self.sent_at[uid] = time.perf_counter()
        if not self.connected:
            await self.connect()  # resends `uid` with the others the server lacks
            return
        try:
            await self._send_utterance(uid)
        except ConnectionClosed:
            if self.lost_at is None:
                self.lost_at = time.perf_counter()
            await self.connect()

    async def run(self, start: float, rate: float, duration: float, offset: float) -> None:
        if not self.connected:
            await self.connect()
        n = 0
        while (due := start + offset + n / rate) < start + duration:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            await self.say(n)
            n += 1
        deadline = time.perf_counter() + GRACE_S
        while self.sent and self.decisions[self.sent[-1]] == 0 and time.perf_counter() < deadline:
            if not self.connected:
                await self.connect()
            await asyncio.sleep(0.05)
        if self._ws is not None:
            with contextlib.suppress(ConnectionClosed):
                await self._ws.send(json.dumps({"type": "leave", "reason": "chaos run over"}))
            if self._receiver is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._receiver), 5)
            await self._ws.close()


def _poison_frames(victim: str) -> list[tuple[str, str | bytes]]:
    """(fault name, frame) pairs; every one must get a named error frame or a protocol close."""
    ok = {"speaker": "Mallory", "text": "POISON"}
    deep = "[" * 100_000 + "]" * 100_000
    return [
        ("id_past_64_bits", json.dumps({"type": "utterance", "id": 2**63, **ok})),
        ("id_far_past_64_bits", json.dumps({"type": "utterance", "id": 2**70, **ok})),
        ("infinity", '{"type": "utterance", "id": 5, "speaker": "Mallory", "text": "POISON", "start": Infinity}'),
        ("nan", '{"type": "utterance", "id": 6, "speaker": "Mallory", "text": "POISON", "end": NaN}'),
        ("type_object", json.dumps({"type": {}, "id": 7, **ok})),
        ("id_bool", json.dumps({"type": "utterance", "id": True, **ok})),
        ("id_string", json.dumps({"type": "utterance", "id": "8", **ok})),
        ("not_json", '{"type": "utterance", "id": 9, POISON'),
        ("deep_nesting", deep[:60_000]),
        ("json_array", "[1, 2, 3]"),
        ("unknown_type", json.dumps({"type": "drop_tables", **ok})),
        ("unknown_field", json.dumps({"type": "utterance", "id": 10, "speakr": "x", **ok})),
        ("empty_text", json.dumps({"type": "utterance", "id": 11, "speaker": "Mallory", "text": "   "})),
        ("oversize_frame", json.dumps({"type": "utterance", "id": 12, "speaker": "M", "text": "POISON " * 12_000})),
        ("binary_without_audio", b"\x00\xff" * 500),
        ("surrogate", '{"type": "utterance", "id": 13, "speaker": "M", "text": "POISON \\ud800"}'),
        ("feedback_unknown_action", json.dumps({"type": "feedback", "verdict": "approve", "action_id": "a999"})),
        ("going_back", json.dumps({"type": "utterance", "id": 0, **ok})),
        ("transport_limit", "x" * (2 << 20)),
        ("other_tenants_meeting", victim),
    ]


@dataclass
class Poisoner:
    """One tenant sending bad frames to its own meetings (and one to another tenant's) on both processes."""

    servers: list[ServerProcess]
    victims: list[str]
    sent: Counter[str] = field(default_factory=Counter)
    unanswered: list[str] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)

    async def _open(self, server: ServerProcess, meeting_id: str) -> ClientConnection:
        ws = await connect(
            server.ws_url(meeting_id),
            additional_headers={"Authorization": f"Bearer {POISON_TOKEN}"},
            open_timeout=5,
            max_size=None,
        )
        join = {"type": "join", "principal": {"name": "Mallory Poison"}, "attendees": ["Mallory"], "voice": False}
        await ws.send(json.dumps(join))
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if frame.get("type") != "ack":
            raise RuntimeError(f"poison tenant could not join: {frame}")
        await ws.send(json.dumps({"type": "utterance", "id": 0, "speaker": "Mallory", "text": "Hello there."}))
        return ws

    async def _answer(self, ws: ClientConnection) -> str | None:
        """The error code the frame got, `ack` when it was taken, `close:<code>` when the server closed, or
        None (no answer in 5 s)."""
        try:
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
                if frame.get("type") == "error":
                    return str(frame.get("code"))
                if frame.get("type") == "ack":
                    return "ack"
        except ConnectionClosed as e:
            return f"close:{e.rcvd.code if e.rcvd else 'none'}"
        except TimeoutError:
            return None

    async def run(self, until: float) -> None:
        round_no = 0
        while time.perf_counter() < until:
            server = self.servers[round_no % len(self.servers)]
            if server.proc.poll() is not None:
                server = self.servers[(round_no + 1) % len(self.servers)]
            victim = self.victims[round_no % len(self.victims)]
            for name, frame in _poison_frames(victim):
                if time.perf_counter() >= until:
                    return
                meeting = f"poison-{round_no}-{name}"
                try:
                    ws = await connect(
                        server.ws_url(victim if name == "other_tenants_meeting" else meeting),
                        additional_headers={"Authorization": f"Bearer {POISON_TOKEN}"},
                        open_timeout=5,
                        max_size=None,
                    ) if name == "other_tenants_meeting" else await self._open(server, meeting)
                except (OSError, TimeoutError, ConnectionClosed, InvalidHandshake, RuntimeError):
                    continue  # the process was just killed: the next round uses the other one
                try:
                    if name == "other_tenants_meeting":
                        # The server may refuse at once, before this join: its error frame is read below.
                        with contextlib.suppress(ConnectionClosed):
                            await ws.send(json.dumps({"type": "join", "last_utterance_id": 0, "voice": False}))
                    else:
                        while True:  # skip the hello's ack and decision
                            got = json.loads(await asyncio.wait_for(ws.recv(), 10))
                            if got.get("type") == "decision":
                                break
                        await ws.send(frame)
                    self.sent[name] += 1
                    answer = await self._answer(ws)
                    if server.proc.poll() is not None:
                        self.sent[name] -= 1  # cut by the kill, not answered or refused by the server
                    elif answer is None or not (answer == "ack" or answer.startswith("close:") or answer in NAMED_ERRORS):
                        self.unanswered.append(f"{name}:{answer}")
                    else:
                        self.codes[f"{name}:{answer}"] += 1
                except (ConnectionClosed, TimeoutError, OSError) as e:
                    closed = e.rcvd if isinstance(e, ConnectionClosed) else None
                    if closed is not None:  # the server closed while the frame was still going out
                        self.codes[f"{name}:close:{closed.code}"] += 1
                    elif server.proc.poll() is None:
                        self.unanswered.append(f"{name}:{type(e).__name__}")
                finally:
                    await ws.close()
                await asyncio.sleep(0.05)
            round_no += 1


def _llm_script(prompt: str) -> Reply | str:
    mark = _MARK.search(prompt)
    mode = mark.group(1) if mark else "ok"
    if mode == "hang":
        return Reply(content="{}", delay_s=30)
    if mode == "fail":
        return Reply(status=500)
    if mode == "garbage":
        return "Sure! Here is what I think: {{{ not json"
    if mode == "leak":
        guessed = _SECRET.findall(prompt)
        if guessed:
            # An attendee guessed the secret; the model confirms it, which reveals it.
            return json.dumps({"thoughts": "confirm", "scenario": "explicit_cue", "speak": f"Yes, it is {guessed[-1]}."})
    return json.dumps({"thoughts": "nothing to add", "scenario": "none", "speak": ""})


def _clients(
    meetings: list[BenchMeeting], n: int, n_llm: int, servers: list[ServerProcess], run_id: str
) -> list[Client]:
    clients: list[Client] = []
    for k in range(n + n_llm):
        bench = meetings[k % len(meetings)]
        labels = sorted(bench.profiles) or bench.attendees
        base = bench.profile(labels[k % len(labels)]) if bench.profiles else Profile(name=labels[0])
        secret = f"Zanzibar{k}"
        context = base.background[0].context if base.background else "when the project is discussed"
        principal = base.model_copy(
            update={
                "background": [
                    *base.background,
                    BackgroundItem(context=context, information=f"The acquisition codename is {secret}.", shareable=False),
                ]
            }
        )
        lines = [(u.speaker, u.text) for u in bench.utterances if u.text.strip()]
        engine = "local"
        if k >= n:
            mode = LLM_MODES[(k - n) % len(LLM_MODES)]
            who = principal.aliases[0] if principal.aliases else principal.name
            lines = [
                (s, f"{t} (chaos:{mode})" if i % 4 else f"{who}, is the codename {secret}? (chaos:{mode})")
                for i, (s, t) in enumerate(lines[:40])
            ]
            engine = "llm"
        # A proxy routing by meeting id: each meeting has a home process.
        order = servers[k % 2 :] + servers[: k % 2]
        clients.append(
            Client(
                meeting_id=f"chaos-{run_id}-{k}",
                principal=principal,
                attendees=bench.attendees,
                names=bench.names,
                lines=lines,
                engine=engine,
                servers=order,
                secret=secret,
            )
        )
    return clients


def check_meeting(client: Client, events: list[asyncpg.Record]) -> tuple[list[str], int, int, int, int]:
    """Problems with one meeting's log, and its lost utterances, lost decisions, duplicates, stale drops."""
    problems: list[str] = []
    mid = client.meeting_id
    kinds = [e["kind"] for e in events]
    if kinds.count("meeting_created") != 1 or (kinds and kinds[0] != "meeting_created"):
        problems.append(f"{mid}: meeting_created is not once and first")
    seqs = [e["seq"] for e in events]
    if seqs != sorted(seqs):
        problems.append(f"{mid}: seq out of order")
    uids = [e["utterance_id"] for e in events if e["kind"] == "utterance"]
    if uids != sorted(set(uids)):
        problems.append(f"{mid}: utterance ids repeat or go back")
    if "left" in kinds and kinds.index("left") != len(kinds) - 1:
        problems.append(f"{mid}: events after `left`")
    logged = set(uids)
    decided = Counter(e["utterance_id"] for e in events if e["kind"] == "decision")
    dropped = {e["utterance_id"] for e in events if e["kind"] == "decision_dropped"}
    if set(decided) - logged or dropped - logged:
        problems.append(f"{mid}: decision on an utterance that is not in the log")
    for e in events:
        try:
            json.loads(e["payload"], parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError:
            problems.append(f"{mid}: seq {e['seq']} payload is not strict JSON")
    lost_utterances = len(set(client.sent) - logged)
    unsettled = len(logged - set(decided) - dropped)
    unseen = len([u for u in decided if client.decisions[u] == 0])
    duplicates = sum(c - 1 for c in decided.values() if c > 1)
    return problems, lost_utterances, unsettled + unseen, duplicates, len(dropped)


async def read_log(url: str) -> dict[str, list[asyncpg.Record]]:
    import asyncpg  # the postgres extra: only a real run needs it

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT seq, meeting_id, kind, utterance_id, payload FROM events ORDER BY seq")
    finally:
        await conn.close()
    # The log keeps each tenant's meetings under its owner (`<owner>/<id>`): the clients' are the main token's.
    prefix = f"{fingerprint(MAIN_TOKEN, CLUSTER_OWNER_KEY.encode())}/"
    out: dict[str, list[asyncpg.Record]] = {}
    for r in rows:
        if r["meeting_id"].startswith(prefix):
            out.setdefault(r["meeting_id"][len(prefix) :], []).append(r)
    return out


async def _run(args: argparse.Namespace, pg_url: str, servers: list[ServerProcess], llm: ScriptedOpenAI) -> ChaosReport:
    began = time.perf_counter()
    meetings = [m for m in load(args.data) if m.utterances]
    run_id = f"{int(time.time()) % 100000}"
    clients = _clients(meetings, args.meetings, args.llm_meetings, servers, run_id)
    poisoner = Poisoner(servers, victims=[c.meeting_id for c in clients[:5]])
    # Every meeting is joined on its home process before the clock starts: the kill hits streams, not joins.
    await asyncio.gather(*(c.connect() for c in clients))
    start = time.perf_counter() + 0.5
    total = len(clients)

    async def kill_later() -> float:
        await asyncio.sleep(max(0.0, start + args.kill_at - time.perf_counter()))
        servers[0].kill()
        return time.perf_counter()

    killer = asyncio.create_task(kill_later())
    poison = asyncio.create_task(poisoner.run(until=0.0 if args.no_poison else start + args.duration))
    results = await asyncio.wait_for(
        asyncio.gather(
            *(c.run(start, args.rate, args.duration, (k / total) / args.rate) for k, c in enumerate(clients)),
            return_exceptions=True,
        ),
        timeout=args.duration + GRACE_S + RECONNECT_S + 60,
    )
    await killer
    await poison
    client_errors: Counter[str] = Counter()
    for r in results:
        if isinstance(r, BaseException):
            client_errors[f"client:{type(r).__name__}:{str(r)[:80]}"] += 1
    log = await read_log(pg_url)

    problems: list[str] = []
    lost_u = lost_d = dups = stale = leaks = 0
    leaks_by_engine: Counter[str] = Counter()
    for c in clients:
        p, lu, ld, du, st = check_meeting(c, log.get(c.meeting_id, []))
        problems += p
        lost_u, lost_d, dups, stale = lost_u + lu, lost_d + ld, dups + du, stale + st
        client_errors.update(c.errors)
        leaked = set(c.leaked)
        for e in log.get(c.meeting_id, []):
            payload = json.loads(e["payload"])
            if e["kind"] in ("decision", "action") and any(c.secret in str(payload.get(k) or "") for k in _OUTBOUND):
                leaked.add(f"d{e['utterance_id']}" if e["kind"] == "decision" else f"a{payload.get('id')}")
        leaks += len(leaked)
        leaks_by_engine[c.engine] += len(leaked)
    reached = sum(
        1
        for mid, events in log.items()
        if not mid.startswith("poison-")
        for e in events
        if "POISON" in e["payload"]
    )
    if reached:
        problems.append(f"poison text found in {reached} records of other meetings")
    failovers = np.array([x for c in clients for x in c.failovers])

    def pct(q: float) -> float | None:
        return round(float(np.percentile(failovers, q)), 3) if failovers.size else None

    faults = Counter({"kill_9": 1, **{f"poison:{k}": v for k, v in poisoner.sent.items()}})
    for prompt in llm.prompts:
        mark = _MARK.search(prompt)
        if mark and mark.group(1) != "ok":
            faults[f"llm:{mark.group(1)}"] += 1
    return ChaosReport(
        faults_injected=sum(faults.values()),
        faults=dict(sorted(faults.items())),
        utterances_sent=sum(len(c.sent) for c in clients),
        utterances_lost=lost_u,
        decisions_lost=lost_d,
        duplicate_decisions=dups,
        private_leaks=leaks,
        private_leaks_by_engine=dict(leaks_by_engine),
        audit_consistent=not problems,
        audit_problems=problems[:20],
        failover_s_p50=pct(50),
        failover_s_p95=pct(95),
        failover_s_max=round(float(failovers.max()), 3) if failovers.size else None,
        failovers=int(failovers.size),
        meetings=args.meetings,
        llm_meetings=args.llm_meetings,
        poison_frames_unanswered=len(poisoner.unanswered),
        poison_unanswered=poisoner.unanswered[:20],
        poison_answers=dict(sorted(poisoner.codes.items())),
        poison_reached_other_meetings=reached,
        decisions_dropped_as_stale=stale,
        client_errors=dict(client_errors.most_common()),
        duration_s=round(time.perf_counter() - began, 1),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmark.chaos", description=__doc__.splitlines()[0])
    p.add_argument("--meetings", type=int, default=100, help="Meetings with the embedded engine.")
    p.add_argument("--llm-meetings", type=int, default=10, help="Meetings with the `llm` engine on a faulty endpoint.")
    p.add_argument("--rate", type=float, default=1.0, help="Utterances per second in each meeting.")
    p.add_argument("--duration", type=float, default=20.0, help="Seconds of sending.")
    p.add_argument("--kill-at", type=float, default=8.0, help="Seconds into the run when one process is killed.")
    p.add_argument("--no-poison", action="store_true", help="No tenant sending poison frames (the failover alone).")
    p.add_argument("--data", type=Path, help="Meeting file or folder (default: benchmark/fixtures).")
    p.add_argument("--json", type=Path, help="Write the figures to this file.")
    args = p.parse_args(argv)
    if args.meetings < 2 or args.rate <= 0 or not 0 < args.kill_at < args.duration:
        p.error("need --meetings >= 2, --rate > 0 and 0 < --kill-at < --duration")
    return args


def _print(r: ChaosReport) -> None:
    print(f"faults injected        {r.faults_injected}  ({len(r.faults)} kinds)")
    print(f"utterances sent / lost {r.utterances_sent} / {r.utterances_lost}")
    print(f"decisions lost         {r.decisions_lost}  (dropped as stale, by design: {r.decisions_dropped_as_stale})")
    print(f"duplicate decisions    {r.duplicate_decisions}")
    print(f"private leaks          {r.private_leaks}  {r.private_leaks_by_engine}")
    print(f"audit consistent       {r.audit_consistent}  {'; '.join(r.audit_problems[:3])}".rstrip())
    print(f"failover p50/p95/max   {r.failover_s_p50} / {r.failover_s_p95} / {r.failover_s_max} s over {r.failovers} reconnections")
    print(f"poison unanswered      {r.poison_frames_unanswered}, reached other meetings {r.poison_reached_other_meetings}")
    print(f"client-side errors     {r.client_errors or 'none'}")


def run_chaos(args: argparse.Namespace, pg_url: str, tmp: Path) -> ChaosReport:
    """Two server processes on the PostgreSQL at `pg_url`, the faulty LLM endpoint, the clients; then the checks."""
    with ScriptedOpenAI(_llm_script) as llm:
        env = {
            "DELEGATE_DATABASE_URL": pg_url,
            "DELEGATE_API_TOKENS": f"{MAIN_TOKEN},{POISON_TOKEN}",
            "DELEGATE_ENGINE": "local",
            "DELEGATE_VOICE": "false",
            "DELEGATE_LLM_BASE_URL": llm.base_url,
            "DELEGATE_LLM_API_KEY": "chaos",
            "DELEGATE_LLM_MODEL": "chaos-model",
            "DELEGATE_LLM_TIMEOUT_S": "1.0",
        }
        servers = [start_server(env, tmp / f"server-{i}.log") for i in range(2)]
        try:
            for s in servers:
                s.wait_healthy()
            return asyncio.run(_run(args, pg_url, servers, llm))
        finally:
            for s in servers:
                s.stop()


def main(argv: list[str] | None = None) -> ChaosReport:
    args = parse_args(argv)
    with temp_postgres() as pg, tempfile.TemporaryDirectory(prefix="delegate-chaos-") as tmp:
        report = run_chaos(args, pg.url, Path(tmp))
    _print(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(report.model_dump_json(indent=2) + "\n")
    return report


if __name__ == "__main__":
    from delegate.extras import run_cli

    run_cli(main)
