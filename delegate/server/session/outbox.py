"""What every side of a live meeting shares: its state, where its frames go, and how it records them."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog

from delegate.decide.base import Engine
from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, ProposedAction
from delegate.server.metrics import Metrics
from delegate.server.protocol import ServerMessage
from delegate.store import AuditEvent, AuditKind, Store

CLOSE_REPLACED = 4000
"""WebSocket close code for a connection that a newer one of the same meeting took over."""
CLOSE_RESTART = 1012
"""RFC 6455 service restart: this process lets the meeting go; the client resumes it (here or elsewhere)."""


class Connection(Protocol):
    """Where a session's frames go: one client connection (the transport implements it)."""

    async def send(self, message: ServerMessage) -> None: ...

    async def send_audio(self, pcm: bytes) -> None:
        """One binary frame of the delegate's speech."""
        ...

    async def close(self, code: int, reason: str) -> None: ...


class SessionBase:
    """The state and output shared by the sides of `MeetingSession` (audio, actions, decisions)."""

    meeting_id: str
    audit_id: str
    principal: Profile
    engine: Engine
    state: MeetingState
    decisions: list[Decision]
    actions: dict[str, ProposedAction]
    closed: bool
    last_activity: float
    _store: Store
    _metrics: Metrics
    _conn: Connection | None
    _detached_at: float
    _log: structlog.typing.FilteringBoundLogger
    # Implemented by the audio side (AudioInput): declared, not defined.
    _end_audio_of_gone_client: Callable[[], None]

    def detach(self, conn: Connection) -> None:
        if self._conn is conn:
            self._conn = None
            self._detached_at = time.monotonic()
            self._end_audio_of_gone_client()

    def _public_texts(self) -> list[str]:
        """What the meeting said lately: the guard lets it be quoted."""
        return self.state.quotable()

    async def _audit(self, kind: AuditKind, utterance_id: int | None = None, **payload: object) -> None:
        await self._store.append(
            AuditEvent(meeting_id=self.audit_id, kind=kind, utterance_id=utterance_id, payload=payload)
        )

    async def _send(self, message: ServerMessage) -> bool:
        """Send to the connected client, if any; a client gone away is not the session's failure."""
        return await self._over_connection(lambda conn: conn.send(message), message.type)

    async def _send_audio(self, pcm: bytes) -> bool:
        return await self._over_connection(lambda conn: conn.send_audio(pcm), "speech_audio")

    async def _over_connection(self, send: Callable[[Connection], Awaitable[None]], what: str) -> bool:
        conn = self._conn
        if conn is None:
            return False
        try:
            await send(conn)
        except Exception as e:
            self._log.info("send_failed", error=type(e).__name__, message_type=what)
            self.detach(conn)
            return False
        return True
