"""The asking seam: who an answer is for, what an answer is, and the `Asker` protocol the embedded and the LLM
askers share."""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from delegate.language.questions import QuestionType
from delegate.meeting import MeetingState
from delegate.models import Profile

Audience = Literal["principal", "meeting"]
"""Who will read the answer: the principal alone, or (possibly) the other participants."""

NO_ANSWER = "Nothing in the meeting so far says."
WITHHELD = "I cannot answer that without sharing something the principal keeps private."


class Answer(BaseModel):
    """The delegate's answer to one question, and what it rests on."""

    model_config = ConfigDict(frozen=True)

    question: str
    question_type: QuestionType
    text: str
    answered: bool
    """False when nothing in the meeting (or the principal's notes) bears on the question."""
    turn_ids: list[int] = Field(default_factory=list)
    """Ids of the utterances the answer is built from."""
    speakers: list[str] = Field(default_factory=list)
    """Display names of the speakers of those utterances."""
    background_items: list[int] = Field(default_factory=list)
    """Indices into the principal's background the answer used (only in answers to the principal)."""
    confidence: float = Field(ge=0.0, le=1.0)
    engine: str
    latency_ms: float = 0.0


class Asker(Protocol):
    """Answers questions about a meeting; the embedded asker and the LLM one are interchangeable."""

    name: str

    def observe(self, meeting: MeetingState) -> None:
        """Called after every utterance of a live meeting: embed the new turn."""

    def stale(self, meeting: MeetingState) -> bool:
        """Whether the next question would first rebuild the meeting's retrieval index."""

    def prepare(self, meeting: MeetingState) -> None:
        """Rebuild the retrieval index now; thread-safe, so that a session can do it off the loop."""

    async def ask(
        self, meeting: MeetingState, question: str, principal: Profile | None, audience: Audience
    ) -> Answer: ...
