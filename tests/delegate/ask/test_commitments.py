"""`ask` on who took on what: answered from the meeting's action items, as a sentence, with its turns."""

from __future__ import annotations

import pytest

from delegate.ask.embedded import EmbeddedAsker
from delegate.meeting import MeetingState
from delegate.models import Utterance

# A launch meeting we wrote: Amara takes on the release notes, Bob the demo room and (asked) the pricing page.
ROWS = [
    ("P1", "Okay, let's go through the launch checklist."),
    ("P1", "Amara, can you send the release notes to the support team by Friday?"),
    ("P2", "Sure, I'll send them by Friday."),
    ("P3", "Okay, thanks."),
    ("P3", "The release notes look good to me, by the way. I read the draft yesterday."),
    ("P3", "I'll book the demo room for Tuesday."),
    ("P1", "Bob, please update the pricing page before launch."),
    ("P3", "Will do."),
    ("P1", "Great. The press release stays with marketing."),
]


@pytest.fixture()
def launch() -> MeetingState:
    meeting = MeetingState("launch", names={"P1": "Carla Diaz", "P2": "Amara Obi", "P3": "Bob Jones"}, attendees=["P1", "P2", "P3"])
    meeting.extend([Utterance(id=i, speaker=who, text=text) for i, (who, text) in enumerate(ROWS)])
    return meeting


def test_who_will_names_the_person_who_took_it_on(launch: MeetingState) -> None:
    answer = EmbeddedAsker().answer(launch, "Who will send the release notes?")
    assert answer.answered and answer.text.startswith("Amara Obi will send the release notes")
    assert "by Friday" in answer.text
    assert 2 in answer.turn_ids and "Bob Jones" not in answer.text.split("(")[0]


def test_what_someone_committed_to_is_their_work_not_the_question_they_were_asked(launch: MeetingState) -> None:
    answer = EmbeddedAsker().answer(launch, "What did Amara commit to?")
    assert answer.answered and answer.text.startswith("Amara Obi will send the release notes")
    assert answer.turn_ids[0] == 2 and "“Sure, I'll send them by Friday.”" in answer.text


def test_an_accepted_request_and_a_commitment_of_the_same_person(launch: MeetingState) -> None:
    answer = EmbeddedAsker().answer(launch, "What did Bob agree to do?")
    assert "Bob Jones will book the demo room for Tuesday" in answer.text
    assert "update the pricing page before launch" in answer.text
    assert {5, 7} <= set(answer.turn_ids)


def test_who_was_asked_rests_on_the_request_and_its_acceptance(launch: MeetingState) -> None:
    answer = EmbeddedAsker().answer(launch, "Who is going to update the pricing page?")
    assert answer.text.startswith("Bob Jones will update the pricing page")
    assert set(answer.turn_ids) == {6, 7}


def test_someone_with_nothing_to_do_is_told_so(launch: MeetingState) -> None:
    answer = EmbeddedAsker().answer(launch, "What did Carla commit to?")
    assert "no action item" in answer.text and "Carla Diaz" in answer.text


def test_work_nobody_took_on_falls_back_to_the_turns(launch: MeetingState) -> None:
    # "the press release" is not "the release notes": no action item answers it, the turns are searched.
    answer = EmbeddedAsker().answer(launch, "Who has the press release?")
    assert " will send the release notes" not in answer.text
