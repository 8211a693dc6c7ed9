"""The engine contract: after each utterance, decide whether the principal speaks and what they say; and one
step of a meeting followed utterance by utterance, as the benchmark's stream replay and `listen` follow it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, Utterance


@runtime_checkable
class Engine(Protocol):
    name: str

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision: ...


async def hear(engine: Engine, meeting: MeetingState, principal: Profile, utterance: Utterance) -> Decision:
    """The utterance joins the meeting and the engine decides on it; what the delegate says is remembered as
    said, so that it is not said again. (A live session splits these steps: its decision may wait for the
    principal's approval before it counts as said.)"""
    meeting.add(utterance)
    decision = await engine.decide(meeting, principal)
    if decision.spoke:
        meeting.note_spoken(principal.speaker_label, decision.used_background)
    return decision
