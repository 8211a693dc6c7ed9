"""`delegate serve --workers N`: real worker processes behind a real HAProxy on one real PostgreSQL, on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from delegate.server.fleet.haproxy import find_haproxy
from testkit.cluster import free_port
from testkit.live import ALICE, join, recv, say

MEETINGS = 12
"""Enough that the hash puts some on each of two workers (all on one: 2 in 4,096)."""


def children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def workers_of(pid: int) -> list[int]:
    """The supervisor's `delegate serve` children (not HAProxy)."""
    out = []
    for child in children(pid):
        with contextlib.suppress(OSError):
            if b"-m\0delegate\0serve\0" in Path(f"/proc/{child}/cmdline").read_bytes():
                out.append(child)
    return out


def worker_port(pid: int) -> int:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return int(args[args.index(b"--port") + 1])


@pytest.fixture
def served(postgres_url: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    if find_haproxy() is None:
        pytest.skip("no haproxy binary here")
    port = free_port()
    env = {
        **os.environ, "DELEGATE_DATABASE_URL": postgres_url, "DELEGATE_DATA_DIR": str(tmp_path),
        "DELEGATE_LOG_LEVEL": "warning", "DELEGATE_RELEASE_SECONDS": "1",
    }
    env.pop("DELEGATE_DB_PATH", None)
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "delegate", "serve", "--port", str(port), "--workers", "2"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            with contextlib.suppress(httpx.HTTPError):
                # Both workers answer on their own ports: each meeting will go where its id hashes.
                ports = [worker_port(w) for w in workers_of(proc.pid)]
                if len(ports) == 2 and all(httpx.get(f"http://127.0.0.1:{p}/healthz", timeout=2).status_code == 200 for p in ports):
                    break
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()[-2000:]
            time.sleep(0.5)
        time.sleep(2.0)  # HAProxy marks a worker up after two passed checks, 500 ms apart
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def resume(port: int, meeting_id: str, last: int) -> ClientConnection:
    """Reconnect as a client does after its socket closed: again after a growing wait until the meeting is back."""
    wait = 0.1
    deadline = time.monotonic() + 60
    while True:
        try:
            ws = await connect(f"ws://127.0.0.1:{port}/v1/meetings/{meeting_id}/stream", open_timeout=10)
            await ws.send(f'{{"type": "join", "last_utterance_id": {last}}}')
            frame = await recv(ws, timeout=20)
            if frame["type"] == "ack":
                assert frame["last_utterance_id"] == last  # what was acknowledged before the kill is there
                again = await recv(ws, timeout=20)  # its decision, sent again to the client that came back
                assert again["type"] == "decision" and again["resumed"] and again["decision"]["utterance_id"] == last
                return ws
            await ws.close()  # `conflict` while the dead worker's lock is released: again in a moment
        except (OSError, TimeoutError, ConnectionClosed):
            pass
        assert time.monotonic() < deadline, f"{meeting_id} did not come back"
        await asyncio.sleep(wait)
        wait = min(wait * 2, 2.0)


async def test_a_killed_worker_loses_no_meeting_and_is_started_again(
    served: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = served
    ids = [f"w-{k}" for k in range(MEETINGS)]
    sockets = {}
    for meeting_id in ids:
        ws = await connect(f"ws://127.0.0.1:{port}/v1/meetings/{meeting_id}/stream", open_timeout=20)
        await join(ws, principal=ALICE, attendees=["Bob"])
        await say(ws, 0, "Bob", "Alice, where does the database migration stand?")
        sockets[meeting_id] = ws
    # Which worker holds each meeting: the holder serves it, the other answers `conflict` (409).
    holder = {}
    async with httpx.AsyncClient() as http:
        for pid in workers_of(proc.pid):
            for meeting_id in ids:
                if (await http.get(f"http://127.0.0.1:{worker_port(pid)}/v1/meetings/{meeting_id}")).status_code == 200:
                    holder[meeting_id] = pid
    assert set(holder) == set(ids) and len(set(holder.values())) == 2, holder  # pinned by id, spread over both
    victim = holder[ids[0]]
    os.kill(victim, signal.SIGKILL)

    async def closed(ws: ClientConnection) -> bool:
        """Whether the socket closes within 10 s (frames already on their way are read past)."""
        try:
            async with asyncio.timeout(10):
                while True:
                    await ws.recv()
        except ConnectionClosed:
            return True
        except TimeoutError:
            return False

    cut = [m for m, gone in zip(ids, await asyncio.gather(*(closed(sockets[m]) for m in ids)), strict=True) if gone]
    assert cut == [m for m in ids if holder[m] == victim]  # the dead worker's meetings lost their sockets, no other
    for meeting_id in cut:
        sockets[meeting_id] = await resume(port, meeting_id, last=0)
    # Every meeting goes on where it was: the next utterance is decided once, on whichever worker holds it now.
    for meeting_id in ids:
        decision = await say(sockets[meeting_id], 1, "Bob", "Thanks, that's all from me.")
        assert decision["decision"]["utterance_id"] == 1
        await sockets[meeting_id].close()
    # The supervisor started a worker in the dead one's place.
    deadline = time.monotonic() + 60
    while len(now := workers_of(proc.pid)) < 2 or victim in now:
        assert time.monotonic() < deadline, now
        await asyncio.sleep(0.5)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        for meeting_id in ids:
            info = (await http.get(f"/v1/meetings/{meeting_id}")).json()
            assert info["utterances"] == 2 and info["decisions"] == 2, info
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    assert workers_of(proc.pid) == []


def test_workers_without_postgres_say_so_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DELEGATE_DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "delegate", "serve", "--workers", "2", "--data-dir", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "DELEGATE_DATABASE_URL" in done.stderr
