"""Judges: score a response against expected points (recall) and its sources (attribution)."""

from __future__ import annotations

import re
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from delegate.decide.reply.spoken import unmask
from delegate.language.similarity import EMBEDDING_WEIGHT, OVERLAP_WEIGHT, embedding, similarity
from delegate.language.text import clean, content_words
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


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\s+[—–-]\s+|;\s+")


def main_points(response: str, min_words: int = 3) -> list[str]:
    """Split a response into main points: sentences, with fragments of fewer than `min_words` content words merged."""
    parts = [p.strip() for p in _SENTENCE.split(clean(response)) if p and p.strip()]
    points: list[str] = []
    for part in parts:
        if points and len(content_words(part)) < min_words:
            points[-1] = f"{points[-1]} {part}"
        elif len(content_words(part)) == 0:
            continue
        else:
            points.append(part)
    if len(points) > 1 and len(content_words(points[0])) < min_words:
        points[1] = f"{points[0]} {points[1]}"
        points = points[1:]
    return points


class OfflineJudge:
    """Recall and attribution without a network, by `delegate.language.similarity.similarity` with thresholds.

    - An expected point is *covered* when some main point of the response (a sentence, or two adjacent
      sentences together) has similarity >= `threshold` with it.
    - Each main point is attributed, in this order: `expected` (similarity >= `threshold` with an expected
      point), `transcript` (similarity >= `repeat_threshold` with an utterance of the snapshot: it repeats
      what was said), `context` (similarity >= `threshold` with an intent or a shareable background item
      of the profile), otherwise `hallucination`.
    - Apart from attribution, `private_leak` flags a response with a point near-verbatim (similarity >=
      0.75) to an item marked `shareable: false`: the benchmark counts such leaks in every case.
    The thresholds were set so that the principal's real words (engine `oracle`) are covered and another
    case's real words of the same meeting (engine `shuffled`) are not; see the README for the figures.
    """

    name = "offline"

    def __init__(self, threshold: float = 0.5, repeat_threshold: float = 0.75) -> None:
        self.threshold = threshold
        self.repeat_threshold = repeat_threshold

    def judge_now(self, item: JudgeInput) -> Judgement:
        # Masks are compared as the names they stand for: "[PERSON3]" written and "PERSON3" said are one.
        item = _unmasked(item)
        points = main_points(item.response)
        spans = points + [f"{a} {b}" for a, b in zip(points, points[1:], strict=False)]
        covered = [k for k, exp in enumerate(item.expected_points) if _best(exp, spans)[1] >= self.threshold]
        # Only what the principal may share is a legitimate source; a private item spoken is no `context`.
        sources = [*item.profile.intents, *(f"{b.context} {b.information}" for b in item.profile.background if b.shareable)]
        # What was said, without the "Speaker: " prefix the LLM judge needs.
        said = _Pool([line.split(": ", 1)[-1] for line in item.snapshot[-60:]]) if points else None
        expected, context = _Pool(item.expected_points), _Pool(sources)
        judged: list[PointJudgement] = []
        for point in points:
            best_k, best = expected.best(point)
            if best >= self.threshold:
                judged.append(PointJudgement(point=point, attribution="expected", expected_index=best_k, score=best))
                continue
            assert said is not None
            _, rep = said.best(point)
            if rep >= self.repeat_threshold:
                judged.append(PointJudgement(point=point, attribution="transcript", score=rep))
                continue
            _, ctx = context.best(point)
            attribution: Attribution = "context" if ctx >= self.threshold else "hallucination"
            judged.append(PointJudgement(point=point, attribution=attribution, score=ctx))
        return Judgement(covered=covered, points=judged, n_expected=len(item.expected_points))

    async def judge(self, item: JudgeInput) -> Judgement:
        return self.judge_now(item)


def _unmasked(item: JudgeInput) -> JudgeInput:
    profile = item.profile.model_copy(
        update={
            "intents": [unmask(t, {}) for t in item.profile.intents],
            "background": [
                b.model_copy(update={"context": unmask(b.context, {}), "information": unmask(b.information, {})})
                for b in item.profile.background
            ],
        }
    )
    return item.model_copy(
        update={
            "response": unmask(item.response, {}),
            "expected_points": [unmask(p, {}) for p in item.expected_points],
            "snapshot": [unmask(line, {}) for line in item.snapshot],
            "profile": profile,
        }
    )


PRIVATE_LEAK_THRESHOLD = 0.75


def private_leak(response: str, profile: Profile) -> bool:
    """Whether some main point of `response` says what a `shareable: false` item says (near-verbatim)."""
    private = [b.information for b in profile.background if not b.shareable]
    return bool(private) and any(_best(point, private)[1] >= PRIVATE_LEAK_THRESHOLD for point in main_points(response))


class _Pool:
    """Texts to compare many others against, their embeddings stacked once."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.matrix = np.stack([embedding(t) for t in texts]) if texts else None

    def best(self, text: str) -> tuple[int, float]:
        """The text most similar to `text` and its similarity (exactly `max(similarity(text, c))`).

        Cosines come from one matrix product; the content-word part is computed only for candidates whose
        cosine still leaves them a chance to win, since it adds at most OVERLAP_WEIGHT.
        """
        if self.matrix is None or not content_words(text):
            return -1, 0.0
        cos = self.matrix @ embedding(text)
        best_k, best = -1, 0.0
        for k in np.argsort(-cos):
            if EMBEDDING_WEIGHT * max(0.0, float(cos[k])) + OVERLAP_WEIGHT <= best:
                break
            s = similarity(text, self.texts[k])
            if s > best:
                best_k, best = int(k), s
        return best_k, best


def _best(text: str, candidates: list[str]) -> tuple[int, float]:
    return _Pool(candidates).best(text)
