"""The readings decisions need are done in a worker thread, batched across meetings, and change no decision."""

import asyncio
import threading

import pytest

from delegate.decide.local import LocalEngine
from delegate.decide.reading import BatchedReading
from delegate.language.deferred import NotReadYet, deferred
from delegate.language.encoder import shipped
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Utterance

ALICE = Profile(
    name="Alice",
    background=[
        BackgroundItem(context="if asked about the migration", information="The migration ends on Friday."),
        BackgroundItem(context="if asked about hiring", information="Two engineers start in March."),
    ],
)


def meeting(k: int, question: str) -> MeetingState:
    state = MeetingState(f"reading-{k}", attendees=["Alice", "Bob"])
    state.add(Utterance(id=0, speaker="Bob", text="Morning all."))
    state.add(Utterance(id=1, speaker="Bob", text=question))
    return state


QUESTIONS = [
    "Alice, when does the storage migration of the billing cluster end?",
    "Alice, how many engineers join the payments team this spring?",
]


def test_inside_deferred_an_unread_text_is_named_not_read() -> None:
    enc = shipped()
    text = "The quarterly offsite moves to the lakeside venue in Bergen."
    enc.forget([text])
    with deferred(), pytest.raises(NotReadYet) as missing:
        enc.encode([text])
    assert missing.value.texts == [text] and not enc.cached(text)
    missing.value.read(missing.value.texts)
    with deferred():
        assert enc.encode([text]).shape == (1, enc.dim)  # read now: no exception


async def test_two_meetings_readings_run_as_one_batch_in_a_worker_and_decide_as_on_the_loop(monkeypatch) -> None:
    engine = LocalEngine()
    enc = shipped()
    enc.forget(QUESTIONS)
    threads: set[int] = set()
    forward = enc._forward

    def spy(ids):  # the real forward pass; only where it ran is noted
        threads.add(threading.get_ident())
        return forward(ids)

    monkeypatch.setattr(enc, "_forward", spy)
    before = engine.reading.batches
    aside = await asyncio.gather(*(engine.decide(meeting(k, q), ALICE) for k, q in enumerate(QUESTIONS)))
    # The turn is read first, then (once a cue is found) the answer selector reads the items against it: two rounds of
    # reading, each one batch for both meetings (one meeting at a time would take four).
    assert engine.reading.batches - before <= 2
    assert threads and threading.get_ident() not in threads
    on_loop = [engine.decide_now(meeting(k, q), ALICE) for k, q in enumerate(QUESTIONS)]
    assert [d.model_dump(exclude={"latency_ms"}) for d in aside] == [d.model_dump(exclude={"latency_ms"}) for d in on_loop]
    assert all(d.scenario == "explicit_cue" and d.speak for d in aside)


async def test_a_cancelled_decision_leaves_the_batch_to_the_others() -> None:
    engine = LocalEngine()
    shipped().forget(QUESTIONS)
    first = asyncio.create_task(engine.decide(meeting(0, QUESTIONS[0]), ALICE))
    second = asyncio.create_task(engine.decide(meeting(1, QUESTIONS[1]), ALICE))
    await asyncio.sleep(0)
    first.cancel()
    decision = await second
    assert decision.utterance_id == 1 and first.cancelled()
    assert shipped().cached(QUESTIONS[0])  # read all the same: the next moment that needs it finds it


async def test_a_decision_goes_on_once_its_own_texts_are_read_not_after_the_whole_batch() -> None:
    calls: list[list[str]] = []
    release = threading.Event()

    def read(texts: list[str]) -> None:  # a reader whose second job is slow
        calls.append(list(texts))
        if len(calls) > 1:
            release.wait(10)

    reading = BatchedReading()
    first = asyncio.create_task(reading.read(NotReadYet(["a"], read)))
    second = asyncio.create_task(reading.read(NotReadYet([f"b{k}" for k in range(8)], read)))
    await asyncio.wait_for(first, 10)
    assert not second.done()  # its last texts are still being read
    release.set()
    await asyncio.wait_for(second, 10)
    assert reading.batches == 1 and calls[0][0] == "a" and sum(map(len, calls)) == 9
