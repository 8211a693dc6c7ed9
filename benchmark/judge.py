"""Judges: score a response against expected points (recall) and sources (attribution).

Work in progress: the offline judge lands next; this fixes the interface.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from delegate.models import Profile

Attribution = Literal["expected", "context", "transcript", "hallucination"]


class JudgeInput(BaseModel):
    model_config = ConfigDict(frozen=True)

    response: str
    expected_points: list[str]
    profile: Profile
    snapshot: list[str]
    """The transcript lines of the snapshot, `Speaker: text`, oldest first."""


class PointJudgement(BaseModel):
    model_config = ConfigDict(frozen=True)

    point: str
    attribution: Attribution
    expected_index: int | None = None
    score: float = 0.0


class Judgement(BaseModel):
    model_config = ConfigDict(frozen=True)

    covered: list[int] = Field(default_factory=list)
    """Indices of the expected points the response covers."""
    points: list[PointJudgement] = Field(default_factory=list)
    n_expected: int = 0

    @property
    def loose(self) -> bool:
        return bool(self.covered)

    @property
    def strict(self) -> float:
        return len(self.covered) / self.n_expected if self.n_expected else 0.0


class Judge(Protocol):
    name: str

    async def judge(self, item: JudgeInput) -> Judgement: ...
