"""Pydantic models shared by every part of the delegate: what crosses a seam is one of these."""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer


class Scenario(StrEnum):
    """Why the principal might speak after an utterance (or `none`: they should not)."""

    explicit_cue = "explicit_cue"
    implicit_cue = "implicit_cue"
    chime_in = "chime_in"
    none = "none"


class Speaking(StrEnum):
    """How forward the delegate is (`delegate.decide.speaking` holds what each level admits)."""

    addressed = "addressed"
    """Only when named, or asked a question right after the principal spoke."""
    balanced = "balanced"
    """The default: when the floor is clearly theirs (a threshold chosen for precision)."""
    forward = "forward"
    """Also chimes in wherever the floor model gives them the floor and the brief adds something."""


MAX_UTTERANCE_ID = 2**53 - 1
"""The largest utterance id: every id is exact in JSON numbers (IEEE doubles) and in the audit store."""

UtteranceId = Annotated[int, Field(ge=0, le=MAX_UTTERANCE_ID, strict=True)]
"""An utterance id as it may come from a client: a JSON integer (not `true`, not `1.0`) in [0, 2^53 - 1]."""

UNKNOWN_SPEAKER = "unknown"
"""The speaker label of transcribed audio whose speaker the client did not name."""


class Utterance(BaseModel):
    """One speaker turn of the meeting, typed or transcribed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: UtteranceId
    speaker: str = Field(min_length=1, max_length=200)
    text: str
    start: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    end: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    final: bool = Field(default=True, strict=True)
    names_unheard: tuple[str, ...] = Field(default=(), max_length=50)
    """Attendees' names the recogniser checked against the audio and found not said (delegate.asr.names_heard):
    a word of the text that is or looks like one of them does not name that person."""

    @property
    def unheard(self) -> frozenset[str]:
        """`names_unheard`, lower-case, as the name matcher takes them."""
        return frozenset(n.casefold() for n in self.names_unheard)


class BackgroundItem(BaseModel):
    """Something the principal told the delegate beforehand, and when it is relevant."""

    # A misspelled privacy flag (`"sharable": false`, `"private": true`) must be refused, not dropped:
    # dropped, the item would count as shareable and be spoken.
    model_config = ConfigDict(frozen=True, extra="forbid")

    context: str
    information: str
    shareable: bool = Field(default=True, strict=True)
    source: str | None = Field(default=None, max_length=40)
    """Where the item comes from, for a brief built from workplace sources (`slack`, `gmail`, `jira`, ...)."""
    item_id: str | None = Field(default=None, max_length=200)
    """The item's id in that source (a message id, an issue key, a document id)."""
    date: str | None = Field(default=None, max_length=40)
    """When the source item was written or last changed (ISO 8601)."""
    why_private: str | None = Field(default=None, max_length=300)
    """Why the item is not shareable, when a brief built from sources decided so."""


class Profile(BaseModel):
    """The person the delegate stands in for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    label: str | None = None
    """The principal's speaker label in the transcript (e.g. `PERSON4`), when it differs from `name`."""
    aliases: list[str] = Field(default_factory=list)
    intents: list[str] = Field(default_factory=list)
    background: list[BackgroundItem] = Field(default_factory=list)
    speaking: Speaking = Speaking.balanced
    """How forward the delegate is for them; a meeting may set its own (`MeetingSpec.speaking`)."""

    @property
    def speaker_label(self) -> str:
        return self.label or self.name

    def is_speaker(self, speaker: str) -> bool:
        """Whether a transcript's speaker label is this person: their label, name or an alias."""
        said_by = speaker.strip().casefold()
        return any(said_by == n.casefold() for n in (self.speaker_label, self.name, *self.aliases))


class Decision(BaseModel):
    """What the delegate decided after one utterance: speak (non-empty `speak`) or stay silent."""

    model_config = ConfigDict(frozen=True)

    utterance_id: int
    scenario: Scenario
    speak: str = ""
    reason: str
    confidence: float = Field(ge=0.0, le=1.0)
    engine: str
    latency_ms: float = 0.0
    used_background: list[int] = Field(default_factory=list)
    """Indices into the principal's `background` that the spoken text draws on."""
    used_intents: list[int] = Field(default_factory=list)
    """Indices into the principal's `intents` that the spoken text raises."""
    used_sources: list[str] = Field(default_factory=list)
    """Ids of source items outside the brief that the live lookup found and the spoken text draws on."""

    @property
    def spoke(self) -> bool:
        return bool(self.speak.strip())

    @field_serializer("latency_ms")
    def _latency_rounded(self, latency_ms: float) -> float:
        # Recorded and sent to 10 µs: more digits say nothing, and fill payloads with noise.
        return round(latency_ms, 2)


ActionType = Literal[
    "send_email", "schedule_meeting", "share_document", "create_task", "follow_up", "review", "other"
]
ActionStatus = Literal["proposed", "approved", "rejected"]


class ProposedAction(BaseModel):
    """An action item noticed in the meeting, proposed to the principal for approval."""

    id: str
    action_type: ActionType
    description: str
    assignees: list[str] = Field(default_factory=list)
    due: str | None = None
    """When it is due, as said ("by Friday", "before the review")."""
    due_date: date | None = None
    """The day `due` names, counted from the meeting's date; only when both are known."""
    supporting_excerpt: str
    utterance_ids: list[int] = Field(default_factory=list)
    accepted_by_utterance: int | None = None
    """For a request: the turn that accepted it (the addressee's answer, a taker's "I can do it", or the turn
    by which it stood unopposed); None for a commitment, which is its own speaker's word."""
    status: ActionStatus = "proposed"
    for_principal: bool = False
    offer: str | None = None
    """What the delegate offers to do when the action falls to the principal."""
