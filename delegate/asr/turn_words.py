"""Whether the words heard so far end a speaker's turn: a small text model of meeting talk, numpy only.

A logistic regression over hashed features of the words (the last one, two and three words, the first
word, the length, a question mark), fitted on the AMI and ICSI meetings of QMSum: a turn's words up to a
change of speaker end it; its words up to any point inside it (a sentence end, a comma, any word) do not.
`python -m training turn-end` fits it and writes `delegate/weights/turn_words.npz` with its held-out
figures (leave-one-corpus-out, and QMSum's own validation meetings).

It knows what meeting talk looks like when it goes on ("so what I think we", "first the budget, and")
and when it hands over ("does that make sense?", "yeah, okay."); it cannot know that a complete sentence
will be followed by another one.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from delegate.resources import package_path

WEIGHTS = package_path("delegate", "weights") / "turn_words.npz"
_TOKEN = re.compile(r"[a-z0-9']+|[?,]")
_LENGTHS = (1, 2, 3, 5, 8, 13, 21, 34)


def tokens(text: str) -> list[str]:
    """Lower-case words, with "?" and "," kept as words: what the features see. A sentence's closing "." or
    "!" is dropped: the recogniser writes one after any phrase it heard end, finished or not."""
    return _TOKEN.findall(text.casefold().replace("’", "'"))


def features(words: list[str]) -> Iterator[str]:
    """The named features of the words heard so far."""
    padded = ["<s>", "<s>", "<s>", *words]
    yield "bias"
    yield f"w1={padded[-1]}"
    yield f"w2={padded[-2]} {padded[-1]}"
    yield f"w3={padded[-3]} {padded[-2]} {padded[-1]}"
    yield f"first={padded[3] if words else '<none>'}"
    length = sum(w not in ("?", ",") for w in words)
    bucket = next((b for b in _LENGTHS if length <= b), 55)
    yield f"len={bucket}"
    yield f"len={bucket} w1={padded[-1]}"
    if "?" in words:
        yield "question"


def bucket_of(feature: str, size: int) -> int:
    return zlib.crc32(feature.encode()) % size


class TurnWords:
    """The fitted model: hashed feature weights and a bias, read from an .npz."""

    def __init__(self, weights: np.ndarray, threshold: float) -> None:
        self.weights = weights
        self.threshold = threshold
        """Probability under which the words hold a turn open (chosen in training, see the card)."""

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> TurnWords:
        with np.load(path) as data:
            return cls(data["weights"].astype(np.float32), float(data["threshold"]))

    def ends(self, text: str) -> float:
        """The probability that the turn ends after `text`."""
        words = tokens(text)
        size = len(self.weights)
        z = float(sum(self.weights[bucket_of(f, size)] for f in features(words)))
        return 1.0 / (1.0 + np.exp(-z))

    def goes_on(self, text: str) -> bool:
        """Whether the words say the speaker has more to say."""
        return self.ends(text) < self.threshold


@functools.cache
def load_turn_words() -> TurnWords | None:
    """The shipped model, once per process; None when the package was built without it."""
    return TurnWords.load() if WEIGHTS.is_file() else None
