"""Who a turn addresses: by name, several together, masks of people not yet heard, else the person answered."""

from __future__ import annotations

import pytest

from delegate.addressing import Roster, addressees, named
from delegate.meeting import MeetingState
from delegate.models import Utterance

NAMES = {"P1": "Dana Smith", "P2": "Anna Novak", "P3": "Ben Okafor", "P4": "Carl Weiss"}


def meeting(*turns: tuple[str, str]) -> MeetingState:
    m = MeetingState(meeting_id="m", attendees=list(NAMES), names=NAMES)
    for i, (speaker, text) in enumerate(turns):
        m.add(Utterance(id=i, speaker=speaker, text=text))
    return m


def labels(m: MeetingState) -> list[tuple[str, str]]:
    assert m.last is not None
    return [(a.label, a.how) for a in addressees(m, m.last)]


@pytest.mark.parametrize(("text", "expected"), [
    ("Anna, could you send the slides?", [("P2", "name")]),
    ("Anna and Ben, could you review the draft?", [("P2", "together"), ("P3", "name")]),
    ("So Ben, and also Anna, please check the numbers.", [("P3", "name"), ("P2", "name")]),
    ("Anna, Ben and Carl, please fill in the table.", [("P2", "name"), ("P3", "together"), ("P4", "name")]),
])
def test_people_named_together_are_all_addressed(text: str, expected: list[tuple[str, str]]) -> None:
    m = meeting(("P4", "The draft is ready."), ("P1", text))
    assert sorted(labels(m)) == sorted(expected)


def test_a_mention_is_not_an_address_and_falls_back_to_the_exchange() -> None:
    m = meeting(("P3", "The export is done."), ("P1", "As Anna said, the export needs a check."))
    assert labels(m) == [("P3", "exchange")]


def test_the_last_other_speaker_is_addressed_when_nobody_is_named() -> None:
    m = meeting(("P2", "I can look at the logs."), ("P1", "Uh-huh."), ("P1", "Great, please do that today."))
    [a] = addressees(m, m.utterances[-1])
    assert (a.label, a.how) == ("P2", "exchange") and a.score < 1


def test_nobody_to_address_at_the_start_of_a_meeting() -> None:
    m = meeting(("P1", "Let's start."))
    assert labels(m) == []


def test_masks_of_people_not_heard_yet_but_never_of_organisations() -> None:
    roster = Roster(labels=("PERSON1", "PERSON2"))
    assert [a.label for a in named("[PERSON9], can you ask [ORGANIZATION3] about it?", "PERSON1", roster)] == ["PERSON9"]
    assert named("[ORGANIZATION3], can you check it?", "PERSON1", roster) == []
    assert roster.resolve("[PERSON9]") == "PERSON9" and roster.resolve("[PROJECT1]") is None


def test_the_speaker_never_addresses_themself() -> None:
    roster = Roster(labels=("P1", "P2"), names=NAMES)
    assert named("Dana, could you send it?", "P1", roster) == []


def test_roster_names_people_the_way_the_meeting_does() -> None:
    roster = Roster(labels=("P1", "PERSON7"), names={"P1": "Dana Smith"})
    assert roster.resolve("dana") == "P1" and roster.resolve("Dana Smith") == "P1"
    assert roster.spoken("P1") == "Dana Smith" and roster.spoken("PERSON7") == "[PERSON7]"


def test_a_known_profile_with_aliases_is_recognised_and_named_together() -> None:
    from delegate.models import Profile

    principal = Profile(name="Sirui Zhao", label="P2", aliases=["Sirui", "Rui"])
    m = MeetingState(meeting_id="m", attendees=["P1", "P2", "P3"], names={"P1": "Dana Smith", "P3": "Ben Okafor"})
    m.add(Utterance(id=0, speaker="P1", text="Rui and Ben, could you compare the two runs?"))
    roster = Roster.of(m, known=(principal,))
    assert {(a.label, a.how) for a in addressees(m, m.utterances[0], roster)} == {("P2", "together"), ("P3", "name")}


def test_descriptions_name_people_without_brackets_unless_the_label_is_a_mask():
    roster = Roster(labels=("Peter", "PERSON7", "P1"), names={"P1": "Dana Smith"})
    assert roster.spoken("Peter") == "Peter"
    assert roster.spoken("P1") == "Dana Smith"
    assert roster.spoken("PERSON7") == "[PERSON7]"  # de-identified transcripts write their masks so


@pytest.mark.parametrize("text", [
    "Hi everyone, I'm Anna, and I run the data team.",
    "Good morning, my name is Anna Novak, you can call me Anna.",
    "Hello, this is Anna from the data team.",
])
def test_a_self_introduction_is_not_an_address(text: str) -> None:
    # Said by someone else than Anna (a newcomer who shares the name, or the transcript's mislabel): the
    # name is the speaker's own, so it addresses nobody by name.
    m = meeting(("P1", text))
    assert all(a.how != "name" for a in addressees(m, m.last))  # type: ignore[arg-type]


def test_an_introduction_then_an_address_still_addresses() -> None:
    m = meeting(("P1", "I'm Dana. Anna, could you send the slides?"))
    assert labels(m) == [("P2", "name")]
