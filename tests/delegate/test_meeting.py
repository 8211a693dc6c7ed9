from delegate.meeting import MeetingState, is_backchannel
from delegate.models import Utterance


def feed(state: MeetingState, rows: list[tuple[str, str]]) -> None:
    start = len(state)
    for k, (who, text) in enumerate(rows):
        state.add(Utterance(id=start + k, speaker=who, text=text))


def test_backchannels_do_not_take_the_floor():
    s = MeetingState("m")
    feed(s, [("A", "Can you check the logs?"), ("B", "Yeah."), ("C", "Mhm."), ("B", "The logs are clean.")])
    assert s.recent_speakers(3) == ["B", "A"]
    assert s.replies[("A", "B")] == 1
    assert is_backchannel("Okay, yeah.") and not is_backchannel("Okay, the logs are clean.")


def test_said_by_and_turns_since():
    s = MeetingState("m")
    feed(s, [("A", "First point about the budget."), ("B", "Second point on hiring."), ("A", "Third point, the venue.")])
    assert [u.id for u in s.said_by("A")] == [0, 2]
    assert s.turns_since("B") == 1
    assert s.turns_since("Z") is None


def test_window_keeps_only_recent_turns():
    s = MeetingState("m", recent_window=5)
    feed(s, [(f"P{i % 3}", f"turn number {i} about topic {i}") for i in range(50)])
    assert len(s.recent) == 5
    assert s.recent[-1].utterance.id == 49


class NoScan(list):
    """A history that fails the test if anything walks through it."""

    def __iter__(self):
        raise AssertionError("the whole history was scanned")

    def __reversed__(self):
        raise AssertionError("the whole history was scanned")


def test_adding_an_utterance_never_scans_the_history():
    s = MeetingState("m")
    feed(s, [(f"P{i % 4}", f"we discussed item {i} at some length today") for i in range(2000)])
    s.utterances = NoScan(s.utterances)
    feed(s, [(f"P{i % 4}", f"further remark {i} on the plan") for i in range(50)])
    assert len(s) == 2050
    assert s.recent_speakers(4) == ["P1", "P0", "P3", "P2"]
    assert [u.id for u in s.said_by("P1", last=2)] == [2045, 2049]


def test_topic_sums_wait_for_the_decision_and_then_add_up():
    import numpy as np

    from delegate.language.similarity import embedding

    s = MeetingState("m")
    feed(s, [("A", "The budget for the venue."), ("B", "Yeah."), ("B", "Catering costs are high."), ("A", "And the venue deposit.")])
    assert s.topic_sum is None and s.voice_sums == {}  # adding a turn embeds nothing: the decision does
    s.settle_topics()
    a = embedding("The budget for the venue.") + embedding("And the venue deposit.")
    assert np.allclose(s.voice_sums["A"], a) and set(s.voice_sums) == {"A", "B"}
    assert np.allclose(s.topic_sum, a + embedding("Catering costs are high."))
