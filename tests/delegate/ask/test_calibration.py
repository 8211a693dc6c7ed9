"""The asker's calibrated confidence: a monotone curve shipped in the package, and no guess below its threshold."""

from __future__ import annotations

import numpy as np
import pytest

from delegate.ask.base import NO_ANSWER
from delegate.ask.calibration import AskCalibration, shipped
from delegate.ask.embedded import EmbeddedAsker
from delegate.meeting import MeetingState
from delegate.models import Utterance

TIMELINE = [
    ("Bob", "Good morning, let's go through the release checklist."),
    ("Carol", "The fix for the login page is in review."),
    ("Bob", "Let's meet again tomorrow about the dashboard colours."),
    ("Carol", "Sounds good, I'll book a room."),
    ("Bob", "The release notes will be ready on Thursday, Carol writes them."),
]


@pytest.fixture
def meeting() -> MeetingState:
    state = MeetingState("calibration-test", attendees=["Bob", "Carol"])
    state.extend([Utterance(id=i, speaker=s, text=t) for i, (s, t) in enumerate(TIMELINE)])
    return state


def test_shipped_curve_is_monotonic() -> None:
    curve = shipped()
    grid = np.linspace(-0.5, 1.5, 401)
    values = [curve.confidence(float(x)) for x in grid]
    assert all(b >= a for a, b in zip(values, values[1:], strict=False))
    assert min(values) >= 0.0 and max(values) <= 1.0 and 0.0 < curve.threshold < 1.0


def test_a_decreasing_curve_is_refused() -> None:
    with pytest.raises(ValueError, match="decrease"):
        AskCalibration((0.0, 0.5, 1.0), (0.1, 0.6, 0.4), 0.2)


def test_an_unsure_answer_is_not_given(meeting: MeetingState) -> None:
    question = "When will the fix be merged?"
    raw = EmbeddedAsker(AskCalibration.identity()).answer(meeting, question)
    # Uncalibrated, the asker guesses a date from a turn about something else.
    assert raw.answered and not shipped().sure(raw.confidence)
    answer = EmbeddedAsker().answer(meeting, question)
    assert answer.text == NO_ANSWER and not answer.answered and answer.turn_ids == [] and answer.confidence == 0.0


def test_a_sure_answer_is_given_with_its_calibrated_confidence(meeting: MeetingState) -> None:
    answer = EmbeddedAsker().answer(meeting, "When will the release notes be ready?")
    raw = EmbeddedAsker(AskCalibration.identity()).answer(meeting, "When will the release notes be ready?")
    assert answer.answered and answer.turn_ids == [4]
    assert answer.confidence == pytest.approx(shipped().confidence(raw.confidence), abs=1e-3)
