"""What every part of a live meeting reads: whose meeting it is, the meeting so far, whether it is still open,
and the lock that keeps one client frame's changes together."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import structlog

from delegate.meeting import MeetingState
from delegate.models import Profile
from delegate.server.protocol import ErrorCode, ProtocolError
from delegate.server.session import redaction


@dataclass
class MeetingCore:
    """The facts the session's parts share; each part keeps its own state besides."""

    meeting_id: str
    audit_id: str
    """The meeting's key in the audit log: the id namespaced by its owner (`auth.audit_id`)."""
    principal: Profile
    state: MeetingState
    log: structlog.typing.FilteringBoundLogger
    inbound: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while a frame changes the meeting, so that its changes are recorded and told in one piece."""
    closed: bool = False
    suspended: bool = False
    """Let go without ending: a frame that still reaches the session is told to join again."""

    def redact(self, typed: str) -> str:
        """Text the principal typed (a question, a comment), as the audit log may keep it (`redaction.typed`)."""
        return redaction.typed(typed, self.principal, self.state.quotable())

    def still_open(self) -> None:
        # Checked again under the lock: a leave or the idle reaper may have closed the meeting while
        # a frame waited for its turn.
        if self.suspended:
            raise ProtocolError(ErrorCode.conflict, "This meeting is being handed over; join it again.")
        if self.closed:
            raise ProtocolError(ErrorCode.meeting_closed)
