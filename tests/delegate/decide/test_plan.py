"""The reply plan: what a turn addressed to the principal asks of them, on turns of our own."""

from __future__ import annotations

import pytest

from delegate.decide.reply.plan import TurnKind, plan_for, read_turn
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance

TURNS = [
    ("Maya, when do we ship Harbor 2.4 to Leeds?", TurnKind.question),
    ("Who has the dock restart steps, Maya?", TurnKind.question),
    ("Maya, do you know roughly how many robots failed?", TurnKind.question),
    ("Maya, are we shipping RC3 as it is, or is another build coming?", TurnKind.question),
    ("Maya, is the lidar dropout fixed?", TurnKind.yes_no),
    ("So the soak test passed on all twelve, right?", TurnKind.yes_no),
    ("Maya, can you send the release notes to Lena today?", TurnKind.request),
    ("Thanks. Maya, could you schedule the rollback drill for next week?", TurnKind.request),
    ("Maya, please circulate the decision after the call.", TurnKind.request),
    ("Maya, are you there?", TurnKind.presence),
    ("Can you hear us, Maya?", TurnKind.presence),
    ("Maya, thanks, that's helpful.", TurnKind.thanks),
    ("Great, thanks Maya.", TurnKind.thanks),
    ("Maya, anything else from your side before we decide?", TurnKind.invitation),
    ("Dev, thanks for that. Maya, over to you.", TurnKind.invitation),
    ("OK, so, Maya, um -", TurnKind.invitation),
    ("Maya, what do you think about shipping before the dock patch?", TurnKind.opinion),
    ("Any thoughts on the battery numbers, Maya?", TurnKind.opinion),
    ("Maya, is it true Lena is handing in her notice?", TurnKind.sensitive),
    ("Maya, any news on the reorg?", TurnKind.sensitive),
    ("Maya, the site team in Leeds is ready for us.", TurnKind.none),
    ("Yeah.", TurnKind.none),
]


@pytest.mark.parametrize(("text", "kind"), TURNS)
def test_each_kind_of_turn_is_read_from_its_words(text: str, kind: TurnKind) -> None:
    assert read_turn(text).kind is kind


def test_the_asking_sentence_decides_not_the_thanks_before_it() -> None:
    plan = read_turn("Thanks Tomas, that's clear. Maya, can you book the room?")
    assert plan.kind is TurnKind.request and "book the room" in plan.asked


def test_and_you_takes_its_kind_from_the_question_before_it() -> None:
    maya = Profile(name="Maya Okafor", aliases=["Maya"])
    state = MeetingState("m", attendees=["Maya Okafor", "Tomas Reyes", "Lena Park"])
    state.extend([
        Utterance(id=0, speaker="Tomas Reyes", text="Lena, is the soak test finished?"),
        Utterance(id=1, speaker="Lena Park", text="Yes, this morning."),
        Utterance(id=2, speaker="Tomas Reyes", text="And you, Maya?"),
    ])
    assert plan_for(state, maya).kind is TurnKind.yes_no


def test_of_several_questions_the_one_that_names_the_principal_decides() -> None:
    names = frozenset({"maya"})
    plan = read_turn("Who from the dock team can help? Maya, would that be you on Thursday?", names=names)
    assert plan.kind is TurnKind.yes_no and "Maya" in plan.asked
