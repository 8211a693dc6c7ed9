"""Fakes the tests share, for parts a test replaces on purpose: a connection that records what it is sent, and
an engine whose decisions a test scripts (waits, failures)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, Scenario
from delegate.server.auth import ANONYMOUS, audit_id
from delegate.server.protocol import DecisionMessage, ServerMessage
from delegate.store import AuditKind, read_events


class Recorder:
    """A connection that keeps what it is sent, and checks each decision is already in the audit log."""

    def __init__(self, db: Path | None = None, owner: str = ANONYMOUS) -> None:
        self.frames: list[ServerMessage] = []
        self.closed: int | None = None
        self._db = db
        self._owner = owner

    async def send(self, message: ServerMessage) -> None:
        if isinstance(message, DecisionMessage) and self._db is not None:
            logged = read_events(self._db, audit_id(self._owner, message.meeting_id))
            assert any(
                e.kind == AuditKind.decision and e.utterance_id == message.decision.utterance_id
                for e in logged
            )
        self.frames.append(message)

    async def close(self, code: int, reason: str) -> None:
        self.closed = code

    def decisions(self) -> list[Decision]:
        return [f.decision for f in self.frames if isinstance(f, DecisionMessage)]


class NamedEngine:
    """Speaks when the principal's first name is in the last utterance; optionally waits for a gate."""

    name = "scripted"

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.fail_on: set[int] = set()
        self.started: list[int] = []

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        last = meeting.last
        assert last is not None
        self.started.append(last.id)
        if self.gate is not None:
            await self.gate.wait()
        if last.id in self.fail_on:
            raise RuntimeError("model fell over")
        named = principal.name.split()[0] in last.text
        return Decision(
            utterance_id=last.id,
            scenario=Scenario.explicit_cue if named else Scenario.none,
            speak="On it." if named else "",
            reason="named" if named else "not addressed",
            confidence=0.9,
            engine=self.name,
        )
