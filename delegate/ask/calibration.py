"""How likely an answer of the embedded asker is right, from its raw retrieval score: a monotone curve fitted on
ELITR-Bench dev questions (`python -m training ask-calibration`, docs/actions-and-ask.md), shipped in
`delegate/weights/ask_calibration.json`. Below `threshold` the asker says nothing in the meeting answers the
question rather than guess, and the answer is recorded as unanswered."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

WEIGHTS_FILE = "ask_calibration.json"


@dataclass(frozen=True, slots=True)
class AskCalibration:
    """A non-decreasing curve from raw score to the probability that the answer is right, and the threshold."""

    raw: tuple[float, ...]
    probability: tuple[float, ...]
    threshold: float

    def __post_init__(self) -> None:
        if len(self.raw) != len(self.probability) or not self.raw:
            raise ValueError("a calibration needs as many probabilities as raw scores, and at least one")
        if any(b < a for a, b in zip(self.raw, self.raw[1:], strict=False)) or any(
            b < a for a, b in zip(self.probability, self.probability[1:], strict=False)
        ):
            raise ValueError("a calibration curve must not decrease")

    def confidence(self, raw: float) -> float:
        """The probability that an answer with this raw score is right (flat beyond the fitted range)."""
        return float(np.interp(raw, self.raw, self.probability))

    def sure(self, raw: float) -> bool:
        return self.confidence(raw) >= self.threshold

    @classmethod
    def identity(cls) -> AskCalibration:
        """Raw scores as they are and no threshold: what the calibration is fitted from."""
        return cls((0.0, 1.0), (0.0, 1.0), 0.0)

    def to_json(self) -> dict[str, object]:
        return {"raw": list(self.raw), "probability": list(self.probability), "threshold": self.threshold}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AskCalibration:
        return cls(
            tuple(float(x) for x in data["raw"]),  # type: ignore[attr-defined]
            tuple(float(x) for x in data["probability"]),  # type: ignore[attr-defined]
            float(data["threshold"]),  # type: ignore[arg-type]
        )

    @classmethod
    def read(cls, path: Path) -> AskCalibration:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


@cache
def shipped() -> AskCalibration:
    text = resources.files("delegate.weights").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return AskCalibration.from_json(json.loads(text))
