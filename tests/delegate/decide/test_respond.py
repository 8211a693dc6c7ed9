"""What the embedded engine says to each kind of turn (issue 39), through the real engine and, once, a real
loopback server: nothing to thanks, "Yes, I'm here" to a presence check, a request acknowledged and its action
item proposed, a private matter declined, and an answer drawn from one item of a brief that holds several."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from delegate.actions.extractor import ActionExtractor
from delegate.config import Settings
from delegate.decide.local import LocalEngine
from delegate.decide.reply.compose import HOLDING_LINE, PRIVATE_LINE
from delegate.decide.reply.respond import NOTHING_MORE_LINE, PRESENT_LINE, acknowledgement
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Decision, Profile, Utterance
from testkit.live import join, open_ws, say, start_server

MAYA = Profile(
    name="Maya Okafor",
    aliases=["Maya"],
    background=[
        BackgroundItem(context="Lidar dropout on older robots", information="The lidar dropout on older robots is fixed in release candidate 3."),
        BackgroundItem(context="Leeds ship date", information="Harbor 2.4 ships to Leeds on Wednesday 18 March. The dock patch lands first, on 12 March."),
        BackgroundItem(context="Soak test", information="The soak test ran 48 hours on twelve robots; eleven were clean."),
        BackgroundItem(context="Rollback drill", information="I can't run the rollback drill next week: I am at the Leeds site all week."),
    ],
)
ATTENDEES = ["Maya Okafor", "Tomas Reyes", "Lena Park"]
ENGINE = LocalEngine()


def _decide(*turns: tuple[str, str], profile: Profile = MAYA) -> Decision:
    state = MeetingState("plan", attendees=ATTENDEES)
    state.extend([Utterance(id=n, speaker=who, text=text) for n, (who, text) in enumerate(turns)])
    return asyncio.run(ENGINE.decide(state, profile))


def test_thanks_get_nothing_not_a_holding_line() -> None:
    d = _decide(("Maya Okafor", "The lidar fix is in release candidate 3."), ("Tomas Reyes", "Maya, thanks, that's helpful."))
    assert d.speak == "" and "thanks" in d.reason


def test_a_presence_check_gets_yes_im_here() -> None:
    assert _decide(("Tomas Reyes", "Maya, are you there?")).speak == PRESENT_LINE


def test_a_request_is_acknowledged_in_its_words_and_its_action_proposed() -> None:
    request = "Maya, can you send the release notes to Lena today?"
    d = _decide(("Tomas Reyes", request))
    assert d.speak.startswith("Sure, I'll send the release notes to Lena") and d.speak != HOLDING_LINE
    # Its action item: proposed to the principal from the request, and their acknowledgement adds no second one.
    extractor = ActionExtractor(principal="Maya Okafor")
    state = MeetingState("plan", attendees=ATTENDEES)
    state.add(Utterance(id=0, speaker="Tomas Reyes", text=request))
    proposed = extractor.observe(state)
    assert [(a.assignees, a.for_principal) for a in proposed] == [(["Maya Okafor"], True)]
    assert "release notes" in proposed[0].description.lower()
    state.add(Utterance(id=1, speaker="Maya Okafor", text=d.speak))
    extractor.observe(state)
    assert len(extractor.actions) == 1


def test_a_request_the_notes_say_they_cannot_take_is_declined_with_their_reason() -> None:
    d = _decide(("Lena Park", "Maya, could you run the rollback drill next week?"))
    assert "can't" in d.speak and "Sure" not in d.speak and d.used_background == [3]


def test_a_private_matter_is_declined_never_promised() -> None:
    d = _decide(("Tomas Reyes", "Maya, is it true Lena is handing in her notice?"))
    assert d.speak == PRIVATE_LINE and "follow up" not in d.speak


def test_an_invitation_with_nothing_that_fits_gets_nothing_more_from_me() -> None:
    bare = Profile(name="Maya Okafor", aliases=["Maya"])
    assert _decide(("Tomas Reyes", "Maya, anything else from your side before we decide?"), profile=bare).speak == NOTHING_MORE_LINE


def test_a_yes_no_question_about_a_state_starts_with_yes_or_no() -> None:
    one = Profile(name="Maya Okafor", aliases=["Maya"], background=[MAYA.background[0]])
    d = _decide(("Tomas Reyes", "Maya, is the lidar dropout fixed?"), profile=one)
    assert d.speak.startswith("Yes") and d.used_background == [0]


def test_the_holding_line_only_for_a_question_nothing_answers() -> None:
    bare = Profile(name="Maya Okafor", aliases=["Maya"])
    assert _decide(("Tomas Reyes", "Maya, how much do the new charging docks cost?"), profile=bare).speak == HOLDING_LINE
    assert _decide(("Tomas Reyes", "Maya, the Leeds team is ready for us."), profile=bare).speak == ""


@pytest.mark.parametrize(
    "question",
    [
        "Maya, when does Harbor 2.4 ship to Leeds, and is the soak test done?",
        "Maya, where are we on the release: lidar, soak test, Leeds?",
        "Maya, give us the state of the release.",
    ],
)
def test_a_reply_answers_from_one_item_never_sentences_of_two_joined(question: str) -> None:
    d = _decide(("Tomas Reyes", question))
    assert d.speak and len(d.used_background) == 1, d
    item = MAYA.background[d.used_background[0]]
    # Every sentence said is the item's own (the opener aside).
    said = [s.strip(" .").lower() for s in d.speak.replace("If I may add — ", "").split(". ") if s.strip(" .")]
    assert all(s in item.information.lower() for s in said), (d.speak, item.information)


def test_over_a_real_loopback_server_thanks_presence_and_request_get_what_a_colleague_says(tmp_path: Path) -> None:
    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="", log_level="warning", engine="local", voice=False))
    principal = {"name": "Alice Smith", "aliases": ["Alice"], "intents": [], "background": [
        {"context": "if asked about the database migration", "information": "The migration finishes on Friday."},
    ]}

    async def run() -> list[str]:
        async with await open_ws(live, "plan-live") as ws:
            await join(ws, principal, attendees=["Bob"])
            turns = ["Alice, are you there?", "Alice, when does the migration finish?", "Great, thanks Alice.",
                     "Alice, can you send the migration runbook to Bob today?"]
            return [(await say(ws, n, "Bob", text))["decision"]["speak"] for n, text in enumerate(turns)]

    try:
        present, answer, thanks, ack = asyncio.run(run())
    finally:
        live.stop()
    assert present == PRESENT_LINE and "Friday" in answer and thanks == "" and ack.startswith("Sure, I'll send the migration runbook")


def test_a_request_said_back_names_people_without_mask_brackets() -> None:
    state = MeetingState("plan", attendees=["PERSON2", "PERSON4"], names={"PERSON2": "Dana", "PERSON4": "Rohan"})
    state.add(Utterance(id=0, speaker="PERSON4", text="[PERSON2], could you send the minutes to [PERSON4] tomorrow?"))
    d = asyncio.run(ENGINE.decide(state, Profile(name="Dana", label="PERSON2")))
    assert d.speak.startswith("Sure, I'll send the minutes to") and "[" not in d.speak and "Rohan" in d.speak


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        ("Maya, can you send me the release notes?", "Sure, I'll send you the release notes."),
        ("So please click the link and check that you can clone it.", "Sure, I'll click the link and check that I can clone it."),
        ("Could you make sure that we we test it for you?", "Sure, I'll make sure that we test it for me."),
    ],
)
def test_a_request_is_said_back_with_its_people_turned_round(request_: str, said: str) -> None:
    assert acknowledgement(request_) == said
