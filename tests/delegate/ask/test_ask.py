"""The embedded asker on a team-written meeting (benchmark/fixtures): typing, grounding, refusals, privacy."""

from __future__ import annotations

import pytest

from benchmark.scoring.data import FIXTURES, load
from delegate.ask.base import NO_ANSWER, WITHHELD
from delegate.ask.embedded import (
    EmbeddedAsker,
    QuestionType,
    outbound_text,
    question_type,
)
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Utterance


@pytest.fixture(scope="module")
def release() -> MeetingState:
    meeting = load(FIXTURES / "fixture_01_release_planning.json")[0]
    state = MeetingState(meeting.meeting_id, names=dict(meeting.names))
    state.extend(meeting.utterances)
    return state


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who can change the privacy label?", QuestionType.who),
        ("When can the fix be merged?", QuestionType.when),
        ("What is the deadline for the report?", QuestionType.when),
        ("How many users are affected?", QuestionType.howmany),
        ("How long is the book at the moment?", QuestionType.howmany),
        ("What did they decide about the test set?", QuestionType.what),
        ("Which scenario was chosen?", QuestionType.what),
    ],
)
def test_question_type(question: str, kind: QuestionType) -> None:
    assert question_type(question) is kind


def test_who_names_the_person_who_took_it_on_and_cites_the_turn(release: MeetingState) -> None:
    answer = EmbeddedAsker().answer(release, "Who can change the privacy label?")
    # Turns 56-58: the question, "Luis has it, I think." / Luis: "I do. Okay, I'll update it today."
    assert answer.answered and answer.text.startswith("Luis Ortega")
    assert set(answer.turn_ids) <= {56, 57, 58} and 58 in answer.turn_ids
    assert answer.speakers == [release.display_name(release.utterances[i].speaker) for i in answer.turn_ids]
    assert answer.engine == "local" and answer.latency_ms > 0


def test_when_answers_with_a_time_expression(release: MeetingState) -> None:
    answer = EmbeddedAsker().answer(release, "When can the fix be merged?")
    assert answer.question_type is QuestionType.when
    assert answer.text.lower().startswith("tomorrow")
    assert answer.turn_ids and all(release.utterances[i].text.lower().count("tomorrow") for i in answer.turn_ids)


def test_participants_are_the_speakers_so_far(release: MeetingState) -> None:
    answer = EmbeddedAsker().answer(release, "Who were the participants of the meeting?")
    for name in ("Priya Raman", "Luis Ortega", "Amara Okafor"):
        assert name in answer.text


def test_nothing_in_the_meeting_answers_it() -> None:
    state = MeetingState("m")
    state.extend(
        [
            Utterance(id=0, speaker="Ann", text="The release moves to Tuesday because of the upgrade crash."),
            Utterance(id=1, speaker="Ben", text="I will review the migration patch tomorrow morning."),
        ]
    )
    answer = EmbeddedAsker().answer(state, "Who is the caterer for the summer party?")
    assert not answer.answered and answer.text == NO_ANSWER
    assert answer.turn_ids == [] and answer.confidence == 0.0


def test_the_index_follows_a_growing_meeting() -> None:
    state = MeetingState("m")
    asker = EmbeddedAsker()
    state.add(Utterance(id=0, speaker="Ann", text="Let us start with the budget review."))
    assert not asker.answer(state, "Who will book the conference venue?").answered
    state.add(Utterance(id=1, speaker="Ben", text="I will book the conference venue in Lisbon next week."))
    answer = asker.answer(state, "Who will book the conference venue?")
    assert answer.answered and answer.text.startswith("Ben") and answer.turn_ids == [1]


SECRET = BackgroundItem(
    context="if the venue comes up", information="We are negotiating a discount of 40 percent with Hotel Miramar.",
    shareable=False,
)
PRINCIPAL = Profile(name="Ann Lee", label="Ann", background=[SECRET])


def test_private_notes_reach_the_principal_only() -> None:
    state = MeetingState("m")
    state.add(Utterance(id=0, speaker="Ben", text="We still need a hotel for the venue of the offsite."))
    asker = EmbeddedAsker()
    question = "Which hotel discount are we negotiating for the venue?"
    mine = asker.answer(state, question, PRINCIPAL, "principal")
    assert "Miramar" in mine.text and mine.background_items == [0]
    shared = asker.answer(state, question, PRINCIPAL, "meeting")
    assert "Miramar" not in shared.text and "40" not in shared.text and shared.background_items == []


def test_outbound_text_withholds_a_private_item_from_the_meeting() -> None:
    leak = "They get 40 percent off at Hotel Miramar."
    assert outbound_text(leak, PRINCIPAL, "meeting", shown=[]) == WITHHELD
    assert outbound_text(leak, PRINCIPAL, "principal", shown=[]) == leak
    # What was said in the meeting is no secret, even when a private note says it too.
    assert outbound_text(leak, PRINCIPAL, "meeting", shown=["Hotel Miramar gives us 40 percent off."]) == leak


def test_prepare_builds_the_index_a_question_would_otherwise_wait_for() -> None:
    state = MeetingState("m")
    asker = EmbeddedAsker()
    state.add(Utterance(id=0, speaker="Ann", text="The budget review is on Monday."))
    assert asker.stale(state)
    asker.prepare(state)
    assert not asker.stale(state)
    state.add(Utterance(id=1, speaker="Ben", text="I will send the budget figures on Friday."))
    assert asker.stale(state)
    assert asker.answer(state, "Who will send the budget figures?").turn_ids == [1]
    assert not asker.stale(state)


def test_an_empty_meeting_answers_nothing() -> None:
    answer = EmbeddedAsker().answer(MeetingState("empty"), "Who will write the notes?")
    assert not answer.answered and answer.text == NO_ANSWER


def test_what_the_meeting_is_about_names_its_recurring_words_and_its_opening(release: MeetingState) -> None:
    answer = EmbeddedAsker().answer(release, "What was the purpose of the meeting?")
    assert answer.answered and answer.turn_ids == [5] and "release planning" in answer.text
    assert "crash" in answer.text.split("opened")[0]


def test_a_number_counting_what_was_asked_beats_the_first_number() -> None:
    state = MeetingState("m")
    state.add(Utterance(id=0, speaker="Ann", text="One of the reviewers wrote twice. So far three papers were accepted to the workshop."))
    answer = EmbeddedAsker().answer(state, "How many papers were accepted to the workshop?")
    assert answer.text.startswith("three papers") and answer.turn_ids == [0]


def test_may_the_verb_is_no_date() -> None:
    state = MeetingState("m")
    state.add(Utterance(id=0, speaker="Ann", text="The financial report may be late, the deadline is the end of June."))
    answer = EmbeddedAsker().answer(state, "When is the deadline of the financial report?")
    assert answer.text.startswith("end of June")


def test_who_names_the_speaker_not_the_person_greeted() -> None:
    state = MeetingState("who-greeted", attendees=["S1", "S2"], names={"S1": "Carol Jones", "S2": "Dmitri Volkov"})
    state.extend(
        [
            Utterance(id=0, speaker="S1", text="Let's start with the partner updates."),
            Utterance(id=1, speaker="S2", text="Hi Carol, I'm here for Northwind, their speech translation partner."),
            Utterance(id=2, speaker="S1", text="Great, welcome."),
        ]
    )
    answer = EmbeddedAsker().answer(state, "Who is here for Northwind?")
    assert answer.answered and answer.text.startswith("Dmitri Volkov") and answer.turn_ids == [1]
