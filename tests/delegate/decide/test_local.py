from delegate.decide import build_engine
from delegate.decide.local import LocalEngine
from delegate.decide.reply.compose import HOLDING_LINE
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario, Utterance

AMARA = Profile(
    name="Amara Okafor",
    label="P4",
    intents=["When marketing can announce the release"],
    background=[
        BackgroundItem(context="When the launch date is discussed", information="Marketing needs five working days of notice before any launch announcement."),
        BackgroundItem(context="When the launch date is discussed", information="We are being acquired; nobody may know yet.", shareable=False),
    ],
)


async def test_speaks_on_explicit_cue_with_grounded_words():
    s = MeetingState("m", names={"P1": "Dana", "P4": "Amara Okafor"})
    s.add(Utterance(id=0, speaker="P1", text="We want to launch on the 14th."))
    s.add(Utterance(id=1, speaker="P1", text="Amara, does the launch date work for marketing?"))
    d = await LocalEngine().decide(s, AMARA)
    assert d.spoke and d.scenario is Scenario.explicit_cue
    assert "five working days" in d.speak
    assert "acquired" not in d.speak
    assert d.used_background == [0]
    assert d.utterance_id == 1 and d.engine == "local" and d.reason


async def test_stays_silent_when_not_concerned():
    s = MeetingState("m", names={"P1": "Dana", "P2": "Rohan"})
    s.add(Utterance(id=0, speaker="P1", text="Rohan, did the database backup finish last night?"))
    d = await build_engine("local").decide(s, AMARA)
    assert not d.spoke and d.scenario is Scenario.none


async def test_a_profile_without_background_raises_an_intent_or_stays_silent():
    bare = Profile(name="Amara Okafor", label="P4", intents=["When marketing can announce the release"])
    s = MeetingState("m", names={"P1": "Dana", "P4": "Amara Okafor"})
    s.add(Utterance(id=0, speaker="P1", text="That's the release plan. Amara, anything from your side on the release?"))
    d = await LocalEngine().decide(s, bare)
    assert d.spoke and d.used_intents == [0] and d.used_background == []
    # Asked the very question the intent asks, raising it would put the question back (issue 39): a holding line.
    s.add(Utterance(id=1, speaker="P1", text="Amara, when can marketing announce the release?"))
    d = await LocalEngine().decide(s, bare)
    assert d.speak == HOLDING_LINE and d.used_intents == []
    empty = Profile(name="Amara Okafor", label="P4")
    d = await LocalEngine().decide(s, empty)
    assert d.spoke and "follow up" in d.speak  # the holding line: named, but nothing to answer with


async def test_an_unrelated_direct_question_gets_a_holding_line_not_an_agenda_item():
    bare = Profile(name="Amara Okafor", label="P4", intents=["When marketing can announce the release", "", "?"])
    s = MeetingState("m", names={"P1": "Dana", "P4": "Amara Okafor"})
    s.add(Utterance(id=0, speaker="P1", text="Amara, did you feed the office cat this morning?"))
    d = await LocalEngine().decide(s, bare)
    assert d.spoke and d.used_intents == [] and "follow up" in d.speak


async def test_a_long_turn_is_decided_off_the_loop_with_the_same_result() -> None:
    import asyncio

    from delegate.decide.local import LocalEngine
    from delegate.meeting import LONG_TEXT_CHARS, MeetingState
    from delegate.models import BackgroundItem, Profile, Utterance

    alice = Profile(
        name="Alice Smith",
        aliases=["Alice"],
        background=[BackgroundItem(context="if asked about the migration", information="The migration ends Friday.")],
    )
    meeting = MeetingState("long")
    text = "We went through the whole plan again. " * 80 + "Alice, when does the migration end?"
    assert len(text) > LONG_TEXT_CHARS
    meeting.add(Utterance(id=0, speaker="Bob", text=text))
    engine = LocalEngine()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    beat = asyncio.create_task(ticker())
    decision = await engine.decide(meeting, alice)
    beat.cancel()
    expected = engine.decide_now(meeting, alice)
    assert decision.model_dump(exclude={"latency_ms"}) == expected.model_dump(exclude={"latency_ms"})
    assert decision.spoke and ticks > 1  # the loop went on while the thread decided
