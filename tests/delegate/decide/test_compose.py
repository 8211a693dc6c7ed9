from delegate.decide.cues import Cue
from delegate.decide.reply.compose import compose
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario, Utterance

SECRET = "I am interviewing with another company next week."
PROFILE = Profile(
    name="Tomasz Kowalski",
    label="P3",
    intents=["Who covers on-call during the release weekend"],
    background=[
        BackgroundItem(context="When the on-call rota for the release weekend is discussed", information=SECRET, shareable=False),
        BackgroundItem(
            context="When the on-call rota for the release weekend is discussed",
            information="I can't take the on-call shift on the release weekend; Jisen offered to swap with me.",
        ),
        BackgroundItem(context="When the backend migration is discussed", information="The database migration finished on Monday without downtime."),
    ],
)


def state(rows: list[tuple[str, str]]) -> MeetingState:
    s = MeetingState("m")
    for i, (who, text) in enumerate(rows):
        s.add(Utterance(id=i, speaker=who, text=text))
    return s


def test_never_speaks_a_non_shareable_item():
    s = state([("P1", "Who is on call during the release weekend? Tomasz, can you take the on-call shift?")])
    out = compose(s, PROFILE, Cue(Scenario.explicit_cue, 0.9, ""), s.last.text)
    assert "interviewing" not in out.text
    assert 0 not in out.used_background
    assert 1 in out.used_background


def test_picks_the_item_that_answers():
    s = state([("P1", "How did the database migration go on Monday?")])
    out = compose(s, PROFILE, Cue(Scenario.implicit_cue, 0.9, ""), s.last.text)
    assert out.used_background[0] == 2
    assert "migration" in out.text


def test_does_not_repeat_what_the_principal_already_said():
    s = state([
        ("P1", "How did the database migration go?"),
        ("P3", "The database migration finished on Monday without downtime."),
        ("P1", "Great. And the database migration, anything else about it?"),
    ])
    out = compose(s, PROFILE, Cue(Scenario.implicit_cue, 0.9, ""), s.last.text)
    assert 2 not in out.used_background


def test_does_not_repeat_what_the_delegate_already_said():
    s = state([("P1", "How did the database migration go?")])
    s.note_spoken("P3", [2])
    out = compose(s, PROFILE, Cue(Scenario.implicit_cue, 0.9, ""), s.last.text)
    assert 2 not in out.used_background


def test_short():
    long_item = BackgroundItem(context="When the plan is discussed", information=" ".join(["This is a long sentence about the plan."] * 20))
    p = Profile(name="X", background=[long_item])
    s = state([("P1", "What is the plan?")])
    out = compose(s, p, Cue(Scenario.implicit_cue, 0.9, ""), s.last.text)
    assert 0 < len(out.text.split()) <= 60


def test_an_item_meant_for_a_question_is_held_back_from_a_chime_in():
    p = Profile(
        name="Sirui Zhao",
        background=[BackgroundItem(context="If asked about travel", information="I have a visa appointment in Prague this Friday.")],
    )
    s = state([("P1", "Travel to Prague this Friday is being planned: who needs a visa appointment?")])
    volunteered = compose(s, p, Cue(Scenario.chime_in, 0.6, ""), s.last.text)
    asked = compose(s, p, Cue(Scenario.implicit_cue, 0.9, ""), s.last.text)
    assert volunteered.text == ""
    assert "visa appointment" in asked.text


def test_a_second_item_joins_only_when_it_answers_the_same_question():
    s = state([("P1", "Tomasz, how did the database migration go on Monday?")])
    out = compose(s, PROFILE, Cue(Scenario.explicit_cue, 0.9, ""), s.last.text)
    assert out.used_background == [2]
    assert out.text.endswith(".")


def test_of_two_items_on_the_subject_the_one_that_answers_is_said():
    profile = Profile(name="Tomasz Kowalski", label="P3", background=[
        BackgroundItem(context="When the paper is discussed", information="Papers on speech translation are hard to review for our community."),
        BackgroundItem(context="When the paper is discussed", information="The reviewers accepted the paper with minor revisions last night."),
    ])
    s = state([("P1", "Has anyone heard back from the reviewers about our paper?")])
    out = compose(s, profile, Cue(Scenario.implicit_cue, 0.9, ""), s.last.text)
    assert out.used_background[0] == 1 and "accepted" in out.text
