"""A real uvicorn server on 127.0.0.1 in a thread, and a small `websockets` (and event stream) client kit for the tests."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from delegate.config import Settings
from delegate.server.app import Server, create_app, uvicorn_config

ALICE = {
    "name": "Alice Smith",
    "aliases": ["Alice"],
    "intents": ["Know when the migration lands"],
    "background": [
        {
            "context": "if asked about the database migration",
            "information": "The migration finishes on Friday",
        }
    ],
}


@dataclass
class LiveServer:
    settings: Settings
    port: int
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, meeting_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/meetings/{meeting_id}/stream"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "server did not stop"


def start_server(settings: Settings, port: int | None = None) -> LiveServer:
    """A server on `port` (None: a free one), once it accepts connections.

    The test binds the socket and hands it over: a port picked first and bound later could be taken
    meanwhile by a server of another test worker."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart on the port just given up
    sock.bind(("127.0.0.1", port or 0))
    port = sock.getsockname()[1]
    server = Server(uvicorn_config(create_app(settings), settings, "127.0.0.1", port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    return LiveServer(settings, port, server, thread)


def texts(value: Any) -> list[str]:
    """Every string in a JSON value (keys too), at any depth: what a search for leaked words reads, not numbers."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (k, *texts(v))]
    if isinstance(value, list | tuple):
        return [t for v in value for t in texts(v)]
    return []


async def ticks(period_s: float) -> AsyncIterator[int]:
    """0, 1, 2, ... one every `period_s` of real time, as a bot sends live audio: a late tick makes the next
    ones come sooner, not the stream longer."""
    next_at = time.monotonic()
    for i in itertools.count():
        yield i
        next_at += period_s
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))


async def open_ws(live: LiveServer, meeting_id: str, token: str | None = None) -> ClientConnection:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return await connect(live.ws_url(meeting_id), additional_headers=headers, max_size=None)


async def recv(ws: ClientConnection, timeout: float = 5.0) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def frame(ws: ClientConnection, timeout: float = 10.0) -> dict[str, Any] | bytes:
    """The next frame: JSON as a dict, binary (the delegate's speech) as bytes."""
    data = await asyncio.wait_for(ws.recv(), timeout)
    return data if isinstance(data, bytes) else json.loads(data)


async def send(ws: ClientConnection, message: dict[str, Any]) -> None:
    await ws.send(json.dumps(message))


async def join(
    ws: ClientConnection, principal: dict[str, Any] | None = ALICE, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "join", **extra}
    if principal is not None:
        message["principal"] = principal
    await send(ws, message)
    ack = await recv(ws)
    assert ack["type"] == "ack" and ack["of"] == "join", ack
    return ack


async def say(ws: ClientConnection, uid: int, speaker: str, text: str) -> dict[str, Any]:
    """Send one utterance; returns its decision frame (after checking the ack came first)."""
    await send(ws, {"type": "utterance", "id": uid, "speaker": speaker, "text": text})
    ack = await recv(ws)
    assert ack == {**ack, "type": "ack", "of": "utterance", "utterance_id": uid}, ack
    decision = await recv(ws)
    assert decision["type"] == "decision" and decision["decision"]["utterance_id"] == uid, decision
    return decision


async def expect_error(ws: ClientConnection, code: str) -> dict[str, Any]:
    frame = await recv(ws)
    assert frame["type"] == "error" and frame["code"] == code, frame
    assert frame["detail"], frame
    return frame


class EventStream:
    """A reader of `GET /v1/meetings/{id}/events` (server-sent events), one JSON event at a time."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self._lines = response.aiter_lines()

    async def _read(self) -> dict[str, Any] | None:
        data: list[str] = []
        async for line in self._lines:
            if line.startswith("data: "):
                data.append(line[len("data: ") :])
            elif line == "" and data:
                return json.loads("\n".join(data))
        return None

    async def next(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The next event; None once the server ended the stream."""
        return await asyncio.wait_for(self._read(), timeout)

    async def until(self, kind: str, timeout: float = 10.0, **fields: Any) -> list[dict[str, Any]]:
        """Events up to and including the first of `kind` whose fields (top level or in its body) match."""
        seen: list[dict[str, Any]] = []
        while True:
            event = await self.next(timeout)
            assert event is not None, f"the stream ended before a {kind} event: {seen}"
            seen.append(event)
            body = {**event, **(event.get("decision") or {}), **(event.get("action") or {})}
            if event["type"] == kind and all(body.get(k) == v for k, v in fields.items()):
                return seen


@contextlib.asynccontextmanager
async def watch(live: LiveServer, meeting_id: str, token: str | None = None) -> AsyncIterator[EventStream]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx.AsyncClient(base_url=live.url, timeout=httpx.Timeout(10.0, read=None)) as http,
        http.stream("GET", f"/v1/meetings/{meeting_id}/events", headers=headers) as response,
    ):
        yield EventStream(response)
