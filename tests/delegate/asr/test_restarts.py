"""Words the recogniser invents at the end of a clip: the real failure patterns of issue 24, and what is
said twice for real, which must stay."""

from __future__ import annotations

import pytest

from delegate.asr.restarts import drop_loop, drop_restart, join_segments, spoken_segments

TS = 50363  # timestamp_begin of the English-only tokenizer: token TS + k is k * 20 ms
EOT = 50256


@pytest.mark.parametrize(
    ("heard", "kept"),
    [
        # Streamed finals of the real-speech set before the fix (Harvard list 72, JFK, the shipped voice).
        ("The long journey home took a year. The long- journey", "The long journey home took a year."),
        ("A gold ring will please most any girl. A gold-ring", "A gold ring will please most any girl."),
        ("A pink shell was found on the sandy beach. A pink shelf was found", "A pink shell was found on the sandy beach."),
        ("She saw a cat in the neighbor's house. She saw", "She saw a cat in the neighbor's house."),
        ("When you hear the bell. When you", "When you hear the bell."),
        ("the migration finishes on Friday. The migration finishes on", "the migration finishes on Friday."),
        ("It ends Friday. It ends Friday. It ends", "It ends Friday."),
        ("We ship it. We ship it? We ship", "We ship it."),
        ("so the plan so the plan", "so the plan"),
        # Said twice for real, or not the opening: kept.
        ("Thanks. Thanks.", "Thanks. Thanks."),
        ("The data is ready. The data was late.", "The data is ready. The data was late."),
        ("I think so. I think we should ship it on Friday", "I think so. I think we should ship it on Friday"),
        ("Peter, can you check it? Peter", "Peter, can you check it? Peter"),
        ("", ""),
    ],
)
def test_a_near_repeat_of_the_opening_at_the_end_is_dropped(heard: str, kept: str) -> None:
    assert drop_restart(heard) == kept


@pytest.mark.parametrize(
    ("looping", "kept"),
    [
        ("9 7 9 7 9 7 9 7 9", "9 7"),
        ("3 3 3 3 3 3 3", "3"),
        ("And so my fellow Americans. And so my fellow Americans. And", "And so my fellow Americans."),
        ("Good morning everyone, thanks for joining", "Good morning everyone, thanks for joining"),
    ],
)
def test_a_loop_is_said_once(looping: str, kept: str) -> None:
    assert drop_loop(looping) == kept


def test_a_stretch_that_starts_after_the_speech_is_dropped() -> None:
    # "<0.00> Come quickly.<2.00><2.00> Come quickly." over 0.84 s of speech: the second one is padding.
    tokens = [TS, 1, 2, TS + 100, TS + 100, 1, 2, EOT]
    assert spoken_segments(tokens, timestamp_begin=TS, eot=EOT, speech_end_s=0.84) == [[1, 2]]
    # Two stretches both inside the speech are both kept, in order.
    tokens = [TS, 1, TS + 30, TS + 30, 3, 4, TS + 60]
    assert spoken_segments(tokens, timestamp_begin=TS, eot=EOT, speech_end_s=1.5) == [[1], [3, 4]]


def test_a_stretch_that_starts_an_earlier_one_over_is_dropped() -> None:
    assert join_segments(["When you hear the bell.", "When you hear the bell."]) == "When you hear the bell."
    assert join_segments(["Ask not what your country", "can do for you."]) == "Ask not what your country can do for you."
