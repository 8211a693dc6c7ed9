"""Where a live meeting's output goes: frames to the connected client, records to the audit log, events to the
watchers. Every part of the session sends, records and publishes through one `Outbox`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from delegate.server.protocol import ServerMessage, WatchEvent
from delegate.server.session.core import MeetingCore
from delegate.server.watch import Watchers
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


class Outbox:
    """The meeting's one connection (it outlives none: a client that comes back brings a new one), its audit
    log and its watchers."""

    def __init__(self, core: MeetingCore, store: Store, watchers: Watchers) -> None:
        self._core = core
        self._store = store
        self.watchers = watchers
        self.conn: Connection | None = None
        self.detached_at = time.monotonic()
        self.on_detached: Callable[[], None] = lambda: None
        """Called when the connection is lost (the audio input ends the stream a gone bot held open)."""

    @property
    def connected(self) -> bool:
        return self.conn is not None

    def attach(self, conn: Connection) -> Connection | None:
        """Make `conn` the meeting's connection; returns the one it replaces."""
        previous, self.conn = self.conn, conn
        return previous if previous is not conn else None

    def detach(self, conn: Connection) -> None:
        if self.conn is conn:
            self.conn = None
            self.detached_at = time.monotonic()
            self.on_detached()

    async def audit(self, kind: AuditKind, utterance_id: int | None = None, **payload: object) -> None:
        await self._store.append(
            AuditEvent(meeting_id=self._core.audit_id, kind=kind, utterance_id=utterance_id, payload=payload)
        )

    def publish(self, event: WatchEvent) -> None:
        self.watchers.publish(event)

    async def send(self, message: ServerMessage) -> bool:
        """Send to the connected client, if any; a client gone away is not the session's failure."""
        return await self._over_connection(lambda conn: conn.send(message), message.type)

    async def send_audio(self, pcm: bytes) -> bool:
        return await self._over_connection(lambda conn: conn.send_audio(pcm), "speech_audio")

    async def _over_connection(self, send: Callable[[Connection], Awaitable[None]], what: str) -> bool:
        conn = self.conn
        if conn is None:
            return False
        try:
            await send(conn)
        except Exception as e:
            self._core.log.info("send_failed", error=type(e).__name__, message_type=what)
            self.detach(conn)
            return False
        return True
