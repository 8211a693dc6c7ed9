import json
from importlib import resources

import pytest

from delegate.addressing import person
from delegate.decide.turn_taking import (
    FEATURES,
    READER_FEATURES,
    Reader,
    TreeArrays,
    TurnTakingModel,
    addressing,
    features,
    floor,
    shipped,
)
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Utterance

NAMES = {"P1": "Dana Smith", "P2": "Priya Raman", "P3": "Tomasz Kowalski", "P4": "Amara Okafor"}


def meeting(rows: list[tuple[str, str]]) -> MeetingState:
    s = MeetingState("m", attendees=list(NAMES), names=NAMES)
    for i, (who, text) in enumerate(rows):
        s.add(Utterance(id=i, speaker=who, text=text))
    return s


def f(state: MeetingState, who: Profile) -> dict[str, float]:
    return dict(zip(FEATURES, features(state, who), strict=True))


def test_shipped_weights_are_package_data_and_match_the_features():
    raw = json.loads(resources.files("delegate.weights").joinpath("turn_taking.json").read_text())
    model = shipped()
    assert raw["features"] == list(FEATURES) == model.features
    assert 0 < model.threshold < 1 and len(model.trees) > 10
    assert sum(model.trained_on.values()) > 50  # every 4th QMSum meeting, ELITR dev and fixtures (docs/turn-taking.md)
    reader = model.reader
    assert reader is not None and raw["reader"]["features"] == [*FEATURES, *READER_FEATURES]
    assert 0 < reader.gate[0] < model.threshold < reader.gate[1] < 1 and len(reader.trees) > 10


def test_features_see_who_is_addressed_and_who_spoke():
    s = meeting([("P3", "The budget for the venue is ready."), ("P2", "Good, the crash fix is merged."), ("P1", "Tomasz, can you send the budget?")])
    tomasz, amara = person("P3", NAMES["P3"]), person("P4", NAMES["P4"])
    ft, fa = f(s, tomasz), f(s, amara)
    assert ft["addressed_me"] == 1 and fa["addressed_me"] == 0 and fa["others_addressed"] > 0
    assert ft["never_spoke"] == 0 and fa["never_spoke"] == 1
    assert ft["question"] == 1 and ft["you"] == 1


def test_own_earlier_words_say_what_a_person_talks_about():
    s = meeting([
        ("P3", "The venue budget and the catering costs are my part."),
        ("P4", "The Android crash in the image cache is fixed in my branch."),
        ("P1", "What do the catering costs for the venue look like?"),
    ])
    assert f(s, person("P3", NAMES["P3"]))["voice_last"] > f(s, person("P4", NAMES["P4"]))["voice_last"]


def test_profile_topic_only_with_a_profile():
    s = meeting([("P1", "Where are we with the app store review?")])
    bare = person("P2", NAMES["P2"])
    full = Profile(name="Priya Raman", label="P2", background=[BackgroundItem(context="app store review", information="Apple review takes two days.")])
    assert f(s, bare)["has_profile"] == 0 and f(s, bare)["topic"] == 0
    assert f(s, full)["has_profile"] == 1 and f(s, full)["topic"] > 0.3


def test_titles_are_not_names():
    assert person("X", "Hon. Bill Blair").aliases == ["Bill", "Blair"]
    assert person("X", "The Acting Chair (Mr. Bruce Stanton (Simcoe North, CPC))").name == "Acting Chair"
    assert person("X", "PERSON3").aliases == []


def test_trees_are_walked_left_on_less_or_equal():
    tree = TreeArrays(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, 0, 0], right=[2, 0, 0], value=[0.0, -2.0, 3.0])
    model = TurnTakingModel(features=list(FEATURES), trees=[tree, tree], threshold=0.5, trained_on={})
    x = [0.0] * len(FEATURES)
    assert model.log_odds(x) == -4.0
    x[0] = 0.5
    assert model.log_odds(x) == -4.0
    x[0] = 0.51
    assert model.log_odds(x) == 6.0 and model.probability(x) > 0.99


def _split_on(feature: str, at: float) -> TreeArrays:
    k = (*FEATURES, *READER_FEATURES).index(feature)
    return TreeArrays(feature=[k, -1, -1], threshold=[at, 0, 0], left=[1, 0, 0], right=[2, 0, 0], value=[0.0, -3.0, 3.0])


def _with_reader(gate: tuple[float, float]) -> TurnTakingModel:
    flat = TreeArrays(feature=[-1], threshold=[0.0], left=[0], right=[0], value=[0.0])  # the cheap model: always 0.5
    reader = Reader(features=[*FEATURES, *READER_FEATURES], trees=[_split_on("enc_item", 0.5)], threshold=0.5, gate=gate)
    return TurnTakingModel(features=list(FEATURES), trees=[flat], threshold=0.5, trained_on={}, reader=reader)


def test_the_reader_reads_an_uncertain_moment_against_the_brief_and_decides_it():
    s = meeting([("P1", "Okay, next point."), ("P3", "Has anyone heard back from the reviewers about our paper?")])
    knows = Profile(name="Priya Raman", label="P2", background=[
        BackgroundItem(context="", information="The reviewers accepted our paper with minor revisions."),
        BackgroundItem(context="", information="The build server moves to the new rack on Monday."),
    ])
    topical = Profile(name="Priya Raman", label="P2", background=[
        BackgroundItem(context="", information="The canteen menu changes every week."),
        BackgroundItem(context="", information="The build server moves to the new rack on Monday."),
    ])
    model = _with_reader((0.4, 0.6))
    a, b = (floor(s, p, addressing(s, p), model) for p in (knows, topical))
    assert a.read and b.read
    assert a.taken and not b.taken  # the brief that answers the question takes the floor, the other does not
    outside = floor(s, knows, addressing(s, knows), _with_reader((0.6, 0.9)))
    assert not outside.read and outside.probability == 0.5  # a clear cheap verdict is not read


def test_a_moment_without_a_brief_is_never_read():
    s = meeting([("P3", "Has anyone heard back from the reviewers?")])
    bare = person("P2", NAMES["P2"])
    assert not floor(s, bare, addressing(s, bare), _with_reader((0.0, 1.0))).read


def test_reader_weights_on_other_features_are_refused():
    model = _with_reader((0.4, 0.6))
    bad = model.model_copy(update={"reader": model.reader.model_copy(update={"features": list(FEATURES)})})
    with pytest.raises(ValueError, match="reader"):
        bad.check()
