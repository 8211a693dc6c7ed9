"""The answer selector: how likely each background item answers the latest turn(s), learned from examples.

A logistic model over signals the decision already has: the sentence encoder's reading of the latest turn
against each item (its best sentence for a record), the static vectors and shared words of the last few
turns, whether the item says the kind of thing asked (a time for "when", a number for "how many"), and how
far the item stands ahead of the others. Its weights are fitted by `python -m training answer-selector`
(docs/answer-selector.md) and ship in `delegate/weights/answer_selector.json`; here it is numpy only.

`best(...)` gives the item to answer from, or None when no item clears the fitted threshold: then nothing
in the background fits, and the reply plan falls back (a holding line for a real question, else silence).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from delegate.decide.relevance import rank_background
from delegate.decide.reply.phrasing import sayable, ticket_names
from delegate.language.questions import NUMBER, TEMPORAL, QuestionType, question_type
from delegate.language.similarity import embedding, word_overlap
from delegate.language.text import content_words
from delegate.meeting import MeetingState
from delegate.models import Profile

WEIGHTS_FILE = "answer_selector.json"
FEATURES = (
    "read",
    "read_gap",
    "read_rank",
    "static_latest",
    "static_window",
    "static_gap",
    "static_rank",
    "overlap_latest",
    "overlap_context",
    "says_asked",
    "question",
    "for_a_question",
    "record",
    "read_x_question",
    "read_previous",
    "said_before",
    "after_last_said",
    "position",
    "read_info",
    "read_context",
    "read_sentence",
    "read_tail",
)
"""The signals, in the order the weights are written."""

WINDOW = 3
OWN_TURNS = 6
"""The principal's latest turns read for what they already said and where in their notes they are."""
SAID_MATCH = 0.5
"""Static-vector cosine from which the principal's turn is taken to say an item."""
"""Substantive turns read for the window signal; each older turn weighs `DECAY` times the next."""
DECAY = 0.5
RECORDS_READ = 8
"""Records the encoder reads sentence by sentence: the best by words and static vectors (a brief of a
hundred records would cost seconds of encoding on a meeting's first question)."""

# An item written for a question ("When asked about travel") is held for the question, not volunteered.
FOR_A_QUESTION = re.compile(r"\b(?:if|when|once)\s+(?:I am |I'm )?asked\b", re.IGNORECASE)


def readings(turn: str, principal: Profile, cheap: np.ndarray) -> np.ndarray:
    """Per background item (rows; 0 for private ones and items not read), how well it answers `turn` by the
    sentence encoder: (its information, its context, its best sayable sentence). A brief the principal wrote is
    read whole; of records only the `RECORDS_READ` best by the `cheap` reading (a brief of a hundred records
    would cost seconds of encoding on a meeting's first question)."""
    from delegate.language.encoder import shipped as encoder

    items = principal.background
    out = np.zeros((len(items), 3))
    if not items or not turn.strip():
        return out
    tickets = ticket_names(items)
    records = any(b.source for b in items)
    read = set(int(k) for k in np.argsort(-cheap)[:RECORDS_READ]) if records else set(range(len(items)))
    texts = [
        [b.information, b.context or b.information, *(sayable(b, tickets, principal.name) or [b.information])]
        if b.shareable and k in read else []
        for k, b in enumerate(items)
    ]
    flat = [t for ts in texts for t in ts]
    if not flat:
        return out
    vecs = encoder().encode([turn, *flat])
    cos = np.clip(vecs[1:] @ vecs[0], 0.0, 1.0)
    at = 0
    for k, ts in enumerate(texts):
        if ts:
            out[k] = (cos[at], cos[at + 1], cos[at + 2 : at + len(ts)].max())
        at += len(ts)
    return out


def read_sentences(turn: str, principal: Profile, cheap: np.ndarray) -> np.ndarray:
    """Per background item (0 for private ones), how well it answers `turn` read by the sentence encoder: a
    record by its best sentence or its context, a brief the principal wrote by its information or context."""
    r = readings(turn, principal, cheap)
    if any(b.source for b in principal.background):
        return np.maximum(r[:, 1], r[:, 2])
    return np.maximum(r[:, 0], r[:, 1])


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
TAIL_WORDS = 40
"""A turn longer than the encoder reads is also read by its end: where a long turn's question usually is."""


def tail(turn: str) -> str:
    """The end of a long turn: its last question and what follows it, or its last sentences, up to
    `TAIL_WORDS` words; the turn itself when it is short."""
    if len(turn.split()) <= TAIL_WORDS:
        return turn
    parts = [p for p in _SENTENCE_END.split(turn.strip()) if p]
    asks = [k for k, p in enumerate(parts) if p.endswith("?")]
    start = asks[-1] if asks else len(parts) - 1
    out = parts[start:]
    while start > 0 and len(" ".join([parts[start - 1], *out]).split()) <= TAIL_WORDS:
        start -= 1
        out = parts[start:]
    return " ".join(" ".join(out).split()[-TAIL_WORDS:])


def _rank_share(x: np.ndarray) -> np.ndarray:
    """1 for the best, 1/2 for the second, ...: where each item stands among the others."""
    ranks = np.empty(len(x))
    ranks[np.argsort(-x, kind="stable")] = np.arange(len(x))
    return 1.0 / (1.0 + ranks)


def features(meeting: MeetingState, principal: Profile) -> np.ndarray:
    """One row of `FEATURES` per background item (private ones too: the caller leaves them out)."""
    items = principal.background
    n = len(items)
    turns = [r.utterance.text for r in meeting.recent][-WINDOW:]
    if not n or not turns:
        return np.zeros((n, len(FEATURES)))
    latest = turns[-1]
    window = np.zeros(n)
    static_latest = np.zeros(n)
    for age, text in enumerate(reversed(turns)):
        for m in rank_background(text, principal):
            window[m.index] += (DECAY**age) * m.score
            if age == 0:
                static_latest[m.index] = m.score
    reading = readings(latest, principal, window)
    read = np.maximum(reading[:, 1], reading[:, 2]) if any(b.source for b in items) else np.maximum(reading[:, 0], reading[:, 1])
    words = content_words(latest)
    overlap_info = np.array([word_overlap(words, content_words(b.information)) if words else 0.0 for b in items])
    overlap_context = np.array([word_overlap(words, content_words(b.context)) if words and b.context else 0.0 for b in items])
    kind = question_type(latest)
    pattern = TEMPORAL if kind is QuestionType.when else NUMBER if kind is QuestionType.howmany else None
    says = np.array([1.0 if pattern is not None and pattern.search(b.information) else 0.0 for b in items])
    question = np.full(n, 1.0 if "?" in latest else 0.0)
    held = np.array([1.0 if FOR_A_QUESTION.search(b.context) else 0.0 for b in items])
    record = np.array([1.0 if b.source else 0.0 for b in items])
    previous = read_sentences(turns[-2], principal, window) if len(turns) > 1 else np.zeros(n)
    end = tail(latest)
    read_tail = read if end == latest else readings(end, principal, window).max(axis=1)
    said_before, after_last = _own_turns(meeting, principal)
    return np.stack(
        [
            read,
            read - read.max(),
            _rank_share(read),
            static_latest,
            window,
            window - window.max(),
            _rank_share(window),
            overlap_info,
            overlap_context,
            says,
            question,
            held,
            record,
            read * question,
            previous,
            said_before,
            after_last,
            np.arange(n) / max(n - 1, 1),
            reading[:, 0],
            reading[:, 1],
            reading[:, 2],
            read_tail,
        ],
        axis=1,
    )


def _own_turns(meeting: MeetingState, principal: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Per item: how near the principal's latest turns come to saying it (static vectors), and whether it is
    the item after the one their latest turn said (a principal's notes follow the meeting's order)."""
    items = principal.background
    n = len(items)
    own = meeting.said_by(principal.speaker_label, OWN_TURNS)
    if not own or not n:
        return np.zeros(n), np.zeros(n)
    item_vecs = np.stack([embedding(b.information) for b in items])
    cos = np.stack([embedding(u.text) for u in own]) @ item_vecs.T
    said = np.clip(cos.max(axis=0), 0.0, 1.0)
    after = np.zeros(n)
    latest = int(np.argmax(cos[-1]))
    if cos[-1, latest] >= SAID_MATCH and latest + 1 < n:
        after[latest + 1] = 1.0
    return said, after


@dataclass(frozen=True, slots=True)
class AnswerSelector:
    """A fitted logistic scorer: standardised features, weights, bias and the threshold an answer must clear."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    """Below it no item of a brief the principal wrote answers the turn (fitted held out on ELITR dev)."""
    record_threshold: float = 0.0
    """The same for a brief drafted from workplace records; with one workplace to learn from it is not fitted,
    and 0 leaves "nothing fits" there to the question check after compose (`answers.settle`)."""

    def floor(self, principal: Profile) -> float:
        """The threshold for this principal's brief: records or their own notes."""
        return self.record_threshold if any(b.source for b in principal.background) else self.threshold

    def logits(self, rows: np.ndarray) -> np.ndarray:
        return ((rows - self.mean) / self.scale) @ self.weights + self.bias if len(rows) else np.zeros(0)

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        """P(this item answers the turn) for each row of `features`, each on its own."""
        return 1.0 / (1.0 + np.exp(-self.logits(rows)))

    def rate(self, meeting: MeetingState, principal: Profile) -> tuple[np.ndarray, np.ndarray]:
        """Per background item (0 for a private one): its probability of answering the latest turn, and its share
        of the chance that some item answers (the items compete, as in training)."""
        shareable = np.array([b.shareable for b in principal.background], dtype=bool)
        if not shareable.any():
            return np.zeros(len(shareable)), np.zeros(len(shareable))
        z = np.where(shareable, self.logits(features(meeting, principal)), -np.inf)
        e = np.exp(z - z.max())
        return np.where(shareable, 1.0 / (1.0 + np.exp(-z)), 0.0), e / e.sum()

    def scores(self, meeting: MeetingState, principal: Profile) -> np.ndarray:
        """Per background item, its probability of answering the latest turn; 0 for a private item."""
        return self.rate(meeting, principal)[0]

    def best(self, meeting: MeetingState, principal: Profile) -> tuple[int | None, float]:
        """The item that answers the latest turn and its probability; None when none clears the threshold."""
        p = self.scores(meeting, principal)
        if not len(p):
            return None, 0.0
        k = int(np.argmax(p))
        return (k if p[k] >= self.floor(principal) else None), float(p[k])

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(FEATURES),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "bias": self.bias,
            "threshold": self.threshold,
            "record_threshold": self.record_threshold,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AnswerSelector:
        if data.get("features") != list(FEATURES):
            raise ValueError(f"answer selector weights are for features {data.get('features')}, this code reads {list(FEATURES)}")
        return cls(
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            weights=np.asarray(data["weights"], dtype=np.float64),
            bias=float(data["bias"]),  # type: ignore[arg-type]
            threshold=float(data["threshold"]),  # type: ignore[arg-type]
            record_threshold=float(data.get("record_threshold", 0.0)),  # type: ignore[arg-type]
        )

    @classmethod
    def read(cls, path: Path) -> AnswerSelector:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


@cache
def shipped() -> AnswerSelector:
    """The selector shipped in the package (`delegate/weights/answer_selector.json`)."""
    text = resources.files("delegate.weights").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return AnswerSelector.from_json(json.loads(text))
