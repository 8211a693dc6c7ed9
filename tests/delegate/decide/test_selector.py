"""The answer selector: shipped weights load from the package, and it picks the item that answers the turn."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from delegate.decide.cues import Cue
from delegate.decide.reply.compose import compose
from delegate.decide.reply.selector import FEATURES, AnswerSelector, features, shipped
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario, Utterance

PROFILE = Profile(
    name="Alice",
    background=[
        BackgroundItem(context="When the office move is discussed", information="The movers come on the 14th; everyone packs their desk the day before."),
        BackgroundItem(context="When the conference budget is asked about", information="We have 4,000 euros left for travel this quarter."),
        BackgroundItem(context="When the database migration comes up", information="The migration script is tested on staging and runs in about two hours."),
        BackgroundItem(context="When hiring is discussed", information="We interviewed three candidates for the backend role last week."),
        BackgroundItem(context="When the migration date is asked", information="The database migration is planned for the weekend.", shareable=False),
    ],
)


def _meeting(question: str) -> MeetingState:
    state = MeetingState("selector-test", attendees=["Alice", "Bob"])
    state.extend([Utterance(id=0, speaker="Bob", text="Let's go through the open points."), Utterance(id=1, speaker="Bob", text=question)])
    return state


def test_shipped_weights_load_from_the_package() -> None:
    selector = shipped()
    assert selector.weights.shape == (len(FEATURES),) and selector.mean.shape == (len(FEATURES),)
    assert 0.0 < selector.threshold < 1.0 and np.all(selector.scale > 0)
    # Written and read back, the same model.
    again = AnswerSelector.from_json(selector.to_json())
    assert np.array_equal(again.weights, selector.weights) and again.threshold == selector.threshold


def test_weights_for_other_features_are_refused() -> None:
    data = shipped().to_json()
    data["features"] = [*FEATURES[:-1], "something_else"]
    with pytest.raises(ValueError, match="features"):
        AnswerSelector.from_json(data)


@pytest.mark.parametrize(
    ("question", "answering"),
    [
        ("Alice, how much money is left for travel to the conference?", 1),
        ("Alice, is the database migration ready, how long does it take?", 2),
        ("Alice, when do the movers come for the office move?", 0),
        ("Did we interview anyone for the backend role, Alice?", 3),
    ],
)
def test_the_answering_item_ranks_first(question: str, answering: int) -> None:
    state = _meeting(question)
    scores = shipped().scores(state, PROFILE)
    assert int(np.argmax(scores)) == answering
    assert scores[4] == 0.0  # a private item is never a candidate
    best, probability = shipped().best(state, PROFILE)
    assert best == answering and probability == pytest.approx(float(scores.max()))


def test_nothing_fits_below_the_threshold() -> None:
    state = _meeting("Alice, how much money is left for travel to the conference?")
    _, probability = shipped().best(state, PROFILE)
    strict = dataclasses.replace(shipped(), threshold=min(1.0, probability + 0.01))
    assert strict.best(state, PROFILE) == (None, pytest.approx(probability))
    # compose then has nothing from the background: the plan falls back (holding line or silence).
    assert compose(state, PROFILE.model_copy(update={"intents": []}), Cue(Scenario.explicit_cue, 0.9, ""), state.last.text, strict).text == ""
    assert compose(state, PROFILE.model_copy(update={"intents": []}), Cue(Scenario.explicit_cue, 0.9, ""), state.last.text).used_background == [1]


def test_features_have_one_row_per_item() -> None:
    rows = features(_meeting("Alice, when do the movers come?"), PROFILE)
    assert rows.shape == (len(PROFILE.background), len(FEATURES))
    assert np.isfinite(rows).all()
