from delegate.decide.cues import detect, is_question
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario, Speaking, Utterance

PRIYA = Profile(
    name="Priya Raman",
    label="P2",
    aliases=["Priya"],
    intents=["Whether the crash fix can ship in release 5.4"],
    background=[
        BackgroundItem(
            context="When the crash on Android 14 is discussed",
            information="The crash comes from the image cache on Android 14; my fix is merged and QA verified it on Tuesday.",
        ),
        BackgroundItem(context="When the app store review is discussed", information="Apple review usually takes two days for us."),
    ],
)
NAMES = {"P1": "Dana Smith", "P2": "Priya Raman", "P3": "Tomasz Kowalski", "P4": "Amara Okafor"}


def meeting(rows: list[tuple[str, str]]) -> MeetingState:
    s = MeetingState("m", attendees=list(NAMES), names=NAMES)
    for i, (who, text) in enumerate(rows):
        s.add(Utterance(id=i, speaker=who, text=text))
    return s


def test_explicit_cue_by_name():
    s = meeting([("P1", "Let's start with QA."), ("P1", "Priya, where are we with the Android crash?")])
    assert detect(s, PRIYA).scenario is Scenario.explicit_cue


def test_question_named_to_someone_else_is_never_theirs():
    s = meeting([
        ("P2", "The crash fix is merged."),
        ("P1", "Good."),
        ("P1", "Tomasz, can you tell us whether the Android crash is still reproducible?"),
    ])
    cue = detect(s, PRIYA)
    assert cue.scenario is Scenario.none
    assert "Tomasz" in cue.reason


def test_implicit_cue_from_the_exchange():
    s = meeting([
        ("P1", "What is the status of the Android crash in the image cache?"),
        ("P2", "I found the cause in the image cache, the fix is in review."),
        ("P1", "And is the fix verified by QA on Android 14 already?"),
    ])
    assert detect(s, PRIYA).scenario is Scenario.implicit_cue


def test_chime_in_when_the_talk_reaches_their_topic():
    s = meeting([
        ("P1", "Let's plan the launch."),
        ("P2", "I am here for the crash topic."),
        ("P3", "Marketing wants the launch on the 14th."),
        ("P4", "Then we must submit to the app store early, I am not sure how long the app store review takes for us."),
    ])
    forward = PRIYA.model_copy(update={"speaking": Speaking.forward})
    cue = detect(s, forward)
    assert cue.scenario is Scenario.chime_in
    elsewhere = forward.model_copy(update={
        "intents": ["Who brings the cake to the office party"],
        "background": [BackgroundItem(context="When the office party is discussed", information="The party room is booked for Friday.")],
    })
    other = detect(s, elsewhere)
    assert other.scenario is Scenario.none and other.floor < cue.floor


def test_none_when_unrelated_and_not_involved():
    s = meeting([("P3", "The office party is on Friday."), ("P4", "I will bring the cake and the drinks for everyone.")])
    assert detect(s, PRIYA).scenario is Scenario.none


def test_none_right_after_the_principal_spoke():
    s = meeting([("P1", "Priya, status?"), ("P2", "The fix is merged.")])
    assert detect(s, PRIYA).scenario is Scenario.none


def test_garbled_name_is_an_explicit_cue():
    s = meeting([("P1", "Okay."), ("P1", "Pria, could you give us the update on the crash?")])
    assert detect(s, PRIYA).scenario is Scenario.explicit_cue


def test_is_question():
    assert is_question("Could you send it?")
    assert is_question("It works, right?")
    assert not is_question("It works fine now.")


def test_a_turn_naming_the_principal_among_others_addresses_them_too():
    s = meeting([("P3", "The release notes are drafted."), ("P1", "Tomasz and Priya, could you check the crash fix before Friday?")])
    assert detect(s, PRIYA).scenario is Scenario.explicit_cue
    s = meeting([("P3", "The release notes are drafted."), ("P1", "So Tomasz, and also Priya, please check the crash fix.")])
    assert detect(s, PRIYA).scenario is Scenario.explicit_cue
    s = meeting([("P3", "The release notes are drafted."), ("P1", "Priya and Tomasz, could you check the crash fix before Friday?")])
    assert detect(s, PRIYA).scenario is Scenario.explicit_cue
    s = meeting([("P3", "The release notes are drafted."), ("P1", "As Priya said, Tomasz, could you check the crash fix?")])
    assert detect(s, PRIYA).scenario is Scenario.none


def test_an_outsider_does_not_chime_in_on_the_meetings_general_topic():
    s = meeting([
        ("P2", "Morning all, I can stay for the first half only."),
        ("P1", "Today is all about release 5.4: scope, dates and the launch."),
        ("P3", "Release 5.4 scope is frozen, the release branch is cut."),
        ("P1", "Good. Is the release 5.4 changelog written?"),
        ("P3", "Half of it, the release notes for 5.4 need the marketing texts."),
        ("P4", "Marketing texts for the 5.4 release come on Monday."),
        ("P1", "Then the release notes for 5.4 are ready by Tuesday?"),
        ("P3", "Yes, if the marketing texts come on Monday, the notes for release 5.4 are done Tuesday."),
        ("P1", "Tomasz, who signs off the release notes for 5.4?"),
        ("P3", "I do, together with Amara from marketing."),
        ("P1", "And the translations of the 5.4 release notes, are they planned?"),
    ])
    assert detect(s, PRIYA).scenario is Scenario.none


def test_each_rule_can_be_switched_off_for_the_ablation_and_a_named_principal_stays_answered():
    from delegate.decide.cues import Rules

    elsewhere = meeting([("P2", "The crash fix is merged."), ("P1", "Tomasz, can you tell us whether the crash is still reproducible?")])
    assert "Tomasz" not in detect(elsewhere, PRIYA, rules=Rules(addressed_elsewhere=False)).reason
    backchannel = meeting([("P2", "The crash fix is merged."), ("P1", "Okay.")])
    assert detect(backchannel, PRIYA).floor > 0  # no rule settles a backchannel: the floor model is asked
    named = meeting([("P1", "Let's start with QA."), ("P1", "Priya, where are we with the Android crash?")])
    off = Rules(addressed_elsewhere=False, partner_implicit=False)
    assert detect(named, PRIYA, rules=off).scenario is Scenario.explicit_cue


CHIME_IN = [
    ("P1", "Let's plan the launch."),
    ("P2", "I am here for the crash topic."),
    ("P3", "Marketing wants the launch on the 14th."),
    ("P4", "Then we must submit to the app store early, I am not sure how long the app store review takes for us."),
]


def test_each_speaking_level_asks_its_own_margin_of_the_same_floor():
    s = meeting(CHIME_IN)
    at = {level: detect(s, PRIYA.model_copy(update={"speaking": level})) for level in Speaking}
    # One verdict of the floor model, read against three bars: only `forward` chimes in on a margin this thin.
    assert len({c.margin for c in at.values()}) == 1 and at[Speaking.forward].margin > 0
    assert at[Speaking.forward].scenario is Scenario.chime_in
    assert at[Speaking.balanced].scenario is Scenario.none and "balanced" in at[Speaking.balanced].reason
    assert at[Speaking.addressed].scenario is Scenario.none


def test_a_named_principal_is_answered_at_every_level():
    s = meeting([("P1", "Let's start with QA."), ("P1", "Priya, where are we with the Android crash?")])
    for level in Speaking:
        assert detect(s, PRIYA.model_copy(update={"speaking": level})).scenario is Scenario.explicit_cue


def test_addressed_answers_a_question_only_right_after_the_principal_spoke():
    from delegate.decide.speaking import LEVELS, admits

    addressed = LEVELS[Speaking.addressed]
    clear = addressed.asked + 0.1
    assert admits(addressed, clear, question=True, partner=True)
    assert not admits(addressed, clear, question=True, partner=False)
    assert not admits(addressed, clear, question=False, partner=True)
    assert not admits(addressed, 10.0, question=False, partner=False)
    assert not admits(addressed, addressed.asked - 0.1, question=True, partner=True)
