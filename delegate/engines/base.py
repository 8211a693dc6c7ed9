"""The engine contract: after each utterance, decide whether the principal speaks and what they say."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from delegate.meeting import MeetingState
from delegate.models import Decision, Profile


@runtime_checkable
class Engine(Protocol):
    name: str

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision: ...
