"""Watchers and the approval rules on their own: a slow watcher is dropped, never the meeting; the bot's view."""

from __future__ import annotations

import asyncio

from delegate.models import Decision, Scenario, Utterance
from delegate.server.approval import HeldSpeech, expire, for_bot, resolve
from delegate.server.protocol import UtteranceEvent
from delegate.server.watch import Watchers


def _event(i: int) -> UtteranceEvent:
    return UtteranceEvent(meeting_id="m", utterance=Utterance(id=i, speaker="Bob", text=f"turn {i}"))


async def test_a_watcher_that_falls_behind_is_dropped_and_the_others_get_everything() -> None:
    watchers = Watchers(limit=3)
    slow = watchers.subscribe([])
    fast = watchers.subscribe([_event(0)])
    got: list[int] = []
    for i in range(1, 6):
        watchers.publish(_event(i))  # never waits, whoever reads or not
        while (event := await asyncio.wait_for(fast.next(), 1)) is not None:
            got.append(event.utterance.id)
            if event.utterance.id == i:
                break
    assert got == [0, 1, 2, 3, 4, 5]
    assert slow.dropped and len(watchers) == 1
    assert await slow.next() is None, "a dropped watcher's stream ends at once"
    watchers.close()
    assert await fast.next() is None
    late = watchers.subscribe([_event(0)])
    assert (await late.next()) == _event(0) and await late.next() is None


DECISION = Decision(
    utterance_id=4, scenario=Scenario.explicit_cue, speak="It lands on Friday.", reason="asked", confidence=0.9,
    engine="local", used_background=[0],
)


def test_the_bot_gets_held_speech_only_once_approved_and_silence_otherwise() -> None:
    held = HeldSpeech(utterance_id=4, proposed=DECISION.speak, expires_at=0)
    assert for_bot(DECISION, None) == (DECISION, "none")
    assert for_bot(DECISION, held) is None
    approved = for_bot(DECISION, resolve(held, "approve"))
    assert approved is not None and approved[0].speak == DECISION.speak and approved[1] == "approved"
    edited = for_bot(DECISION, resolve(held, "approve", " Friday, for sure. "))
    assert edited is not None and edited[0].speak == "Friday, for sure." and edited[1] == "edited"
    same = resolve(held, "approve", DECISION.speak)
    assert same.status == "approved", "an edit that changes nothing is an approval"
    for settled in (resolve(held, "reject"), expire(held, "timeout")):
        view = for_bot(DECISION, settled)
        assert view is not None and view[0].speak == "" and view[0].used_background == []
        assert view[1] == settled.status and settled.text == DECISION.speak
