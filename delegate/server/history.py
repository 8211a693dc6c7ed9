"""Meetings as their audit log tells them: an ended meeting served read-only, and a caller's meetings listed.

A session lives while its meeting is open; afterwards the log is the meeting. Its `meeting_created` event
holds the spec without private items, which is all a read-only view needs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from delegate.models import Decision, Profile, ProposedAction, Utterance
from delegate.server.approval import HeldSpeech
from delegate.server.protocol import AdmissionEvent, BackgroundView, MeetingInfo, MeetingSpec, WatchEvent
from delegate.server.rebuild import rebuild
from delegate.server.watch import replay
from delegate.store.base import AuditKind, Store


@dataclass(frozen=True)
class PastMeeting:
    """What `GET /v1/meetings/{id}`, `/decisions` and `/actions` read, for a meeting no process holds."""

    summary: MeetingInfo
    decisions: list[Decision] = field(default_factory=list)
    actions: dict[str, ProposedAction] = field(default_factory=dict)
    utterances: list[Utterance] = field(default_factory=list)
    speech: dict[int, HeldSpeech] = field(default_factory=dict)
    ended_reason: str | None = None
    followed: bool = False
    """A service reported where the bot stood (`admission`): the replay starts with its last state."""

    def info(self) -> MeetingInfo:
        return self.summary

    def replay(self) -> list[WatchEvent]:
        """The meeting as watch events; an ended one ends with `meeting_ended`."""
        ended = (self.ended_reason or "ended") if self.summary.ended else None
        events = replay(self.summary.meeting_id, self.utterances, self.decisions, self.speech, self.actions.values(), ended)
        if self.followed:
            events.insert(0, AdmissionEvent(meeting_id=self.summary.meeting_id, state=self.summary.admission))
        return events


async def from_log(store: Store, key: str, meeting_id: str) -> PastMeeting | None:
    """The meeting kept under `key` in the log, as it ended (or as it stands, if nobody holds it); None if absent."""
    events = await store.events(key)
    created = next((e for e in events if e.kind == AuditKind.meeting_created), None)
    if created is None:
        return None
    p = created.payload
    spec = MeetingSpec(
        principal=Profile.model_validate(p["principal"]),
        attendees=list(p.get("attendees") or []),
        names=dict(p.get("names") or {}),
        engine=p.get("engine"),
        approval=p.get("approval") or "none",
    )
    rebuilt = await asyncio.to_thread(rebuild, meeting_id, spec, events, None)
    summary = MeetingInfo(
        meeting_id=meeting_id,
        principal=spec.principal.name,
        engine=rebuilt.engine or spec.engine or "",
        attendees=list(rebuilt.state.attendees),
        utterances=len(rebuilt.state),
        last_utterance_id=rebuilt.state.last_id,
        decisions=len(rebuilt.decisions),
        actions=len(rebuilt.actions),
        connected=False,
        created_at=rebuilt.created_at or created.ts,
        last_activity=events[-1].ts,
        ended=rebuilt.ended,
        approval=spec.approval,
        speaking=spec.principal.speaking,
        admission=rebuilt.admission or "in_meeting",
        background=_background(spec.principal, p.get("private_items", 0), p.get("private_at")),
    )
    return PastMeeting(
        summary,
        list(rebuilt.decisions),
        dict(rebuilt.actions),
        list(rebuilt.state.utterances),
        dict(rebuilt.speech),
        rebuilt.ended_reason,
        followed=p.get("admission") == "joining" or any(e.kind == AuditKind.admission for e in events),
    )


def _background(logged: Profile, private_items: int, private_at: list[int] | None) -> list[BackgroundView] | None:
    """The full background's order again: the log holds the shareable items, and where the private ones were."""
    shareable = iter(BackgroundView.of(logged.background))
    if private_at is None and private_items:
        return None
    blanks = set(private_at or [])
    return [
        BackgroundView(shareable=False) if i in blanks else next(shareable)
        for i in range(len(logged.background) + len(blanks))
    ]
