"""The meeting stream's transport: one WebSocket connection's frames become protocol messages and go to the
meeting's session; the session's frames go back. Nothing here decides anything."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from fastapi import WebSocket, WebSocketDisconnect

from delegate.server import roles
from delegate.server.auth import Credential
from delegate.server.components import Service
from delegate.server.limits import TextBudget, check_spec
from delegate.server.protocol import (
    ErrorCode,
    ErrorMessage,
    Join,
    ProtocolError,
    ServerMessage,
    check_meeting_id,
    parse_client_message,
)
from delegate.server.registry import MeetingSession

log = structlog.get_logger("delegate.server")

CLOSE_POLICY = 1008
"""RFC 6455 policy violation: the close code after an auth failure."""


class WebSocketConnection:
    """A session's view of one client connection; sends are serialized so frames never interleave."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws
        self._lock = asyncio.Lock()

    async def send(self, message: ServerMessage) -> None:
        async with self._lock:
            await self._ws.send_text(message.model_dump_json())

    async def send_audio(self, pcm: bytes) -> None:
        async with self._lock:
            await self._ws.send_bytes(pcm)

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            await self._ws.close(code, reason)


async def handle_binary(session: MeetingSession | None, data: bytes) -> None:
    """Binary frames are PCM audio of the stream an `audio_start` opened."""
    if session is None:
        raise ProtocolError(ErrorCode.not_joined)
    await session.audio_frame(data)


async def serve_connection(svc: Service, ws: WebSocket, meeting_id: str) -> None:
    conn = WebSocketConnection(ws)
    clog = log.bind(meeting_id=meeting_id)

    async def refuse(error: ProtocolError) -> None:
        svc.metrics.error(error.code)
        clog.info("connection_refused", code=str(error.code))
        with contextlib.suppress(Exception):
            await conn.send(ErrorMessage.of(error))
        await conn.close(CLOSE_POLICY, str(error.code))

    try:
        credential = svc.auth.credential(ws.headers.get("authorization"))
        check_meeting_id(meeting_id)  # at once: no frame can make a meeting of it
        roles.check_meeting(credential, meeting_id)
        with svc.sockets.hold(credential.owner):
            await _serve_frames(svc, ws, conn, meeting_id, credential, refuse)
    except ProtocolError as e:
        await refuse(e)



async def _serve_frames(
    svc: Service,
    ws: WebSocket,
    conn: WebSocketConnection,
    meeting_id: str,
    credential: Credential,
    refuse: Callable[[ProtocolError], Awaitable[None]],
) -> None:
    clog = log.bind(meeting_id=meeting_id)
    caller = credential.owner

    async def find_session() -> MeetingSession | None:
        return await svc.sessions.find(meeting_id, caller)

    try:
        session = await find_session()
    except ProtocolError:
        # Closed, or held by another process: told when the client sends its first frame.
        session = None
    except Exception:
        clog.exception("find_failed")  # e.g. the store is down: each frame tries again, and says so
        session = None
    clog.info("connected", existing=session is not None)
    # Until a frame of this connection reached a meeting, it holds a socket for nothing: bounded.
    join_by: float | None = asyncio.get_running_loop().time() + svc.settings.join_timeout_s
    budget = TextBudget(svc.settings.text_bytes_per_s)
    try:
        while True:
            try:
                frame = await _receive(ws, join_by)
            except TimeoutError:
                await refuse(ProtocolError(ErrorCode.join_timeout))
                return
            if frame["type"] == "websocket.disconnect":
                break
            try:
                text = frame.get("text")
                if text and len(text) <= svc.settings.max_frame_bytes:
                    # One client pipelining long texts must not take the loop from other meetings
                    # (an oversized frame costs nothing: it is refused unread).
                    budget.take(len(text))
                if session is None:
                    session = await find_session()
                session = await _on_frame(svc, conn, frame, session, meeting_id, credential)
                if session is not None:
                    join_by = None
            except ProtocolError as e:
                if e.code == ErrorCode.unauthorized:
                    await refuse(e)
                    return
                svc.metrics.error(e.code)
                clog.info("client_error", code=str(e.code), utterance_id=e.utterance_id)
                await conn.send(ErrorMessage.of(e))
            except WebSocketDisconnect:
                raise
            except Exception:
                clog.exception("frame_failed")
                svc.metrics.error(ErrorCode.internal)
                await conn.send(ErrorMessage.of(ProtocolError(ErrorCode.internal)))
            if session is not None and session.closed:
                await conn.close(1000, "meeting ended")
                break
    except WebSocketDisconnect:
        pass
    except (RuntimeError, OSError) as e:
        # Sending on a socket the client already closed: RuntimeError (Starlette) or OSError (uvicorn).
        clog.info("connection_lost", error=str(e))
    finally:
        if session is not None:
            session.detach(conn)
        clog.info("disconnected")


async def _receive(ws: WebSocket, deadline: float | None) -> dict[str, Any]:
    if deadline is None:
        return await ws.receive()
    async with asyncio.timeout_at(deadline):
        return await ws.receive()


async def _on_frame(
    svc: Service,
    conn: WebSocketConnection,
    frame: dict[str, Any],
    session: MeetingSession | None,
    meeting_id: str,
    credential: Credential,
) -> MeetingSession | None:
    limit = svc.settings.max_frame_bytes
    data: bytes | None = frame.get("bytes")
    if data is not None:
        if len(data) > limit:
            raise ProtocolError(
                ErrorCode.too_large, f"The frame has {len(data)} bytes; the limit is {limit}."
            )
        await handle_binary(session, data)
        return session
    text: str = frame.get("text") or ""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ProtocolError(ErrorCode.too_large, f"The frame has {size} bytes; the limit is {limit}.")
    message = parse_client_message(text)
    roles.check_message(credential, message)  # `forbidden`: this frame only; the connection goes on
    if session is None:
        if not isinstance(message, Join):
            raise ProtocolError(ErrorCode.not_joined)
        spec = message.spec()
        if spec is None:
            raise ProtocolError(
                ErrorCode.not_found,
                f"No open meeting {meeting_id!r}; a join that starts one needs a principal.",
            )
        check_spec(spec, svc.settings)
        session = await svc.sessions.open(meeting_id, spec, owner=credential.owner)
    await session.handle(message, conn)
    return session
