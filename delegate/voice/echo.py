"""Is a transcript the delegate hearing itself? A bot that sends the meeting's mixed audio sends the
delegate's own voice back; its transcript overlaps the delegate's speech in time and says its words.

The text test is RapidFuzz's `partial_ratio` (best alignment of the shorter text inside the longer one),
so a fragment of a long reply counts. `ECHO_MIN_RATIO` was measured on tiny.en transcripts of the shipped
voice speaking the fixture benchmark's replies (`benchmark.intelligibility`): see `tests/delegate/voice`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz, utils

ECHO_MIN_RATIO = 70.0
"""partial_ratio (0-100) from which a transcript is taken for the delegate's own words."""
ECHO_MIN_WORDS = 3
"""A final needs this many words to be taken for an echo: "Friday?" said back by a person is a turn."""
ECHO_MARGIN_S = 1.5
"""Slack on both sides of a speech window: the bot's round trip and the recogniser's cut at silence."""


class SpokenWindow(BaseModel):
    """What the delegate said, and when it was heard, in seconds on the server's monotonic clock."""

    model_config = ConfigDict(frozen=True)

    utterance_id: int
    text: str
    start: float
    end: float


def echo_ratio(heard: str, said: str) -> float:
    """How well `heard` matches a stretch of `said`, 0-100, case and punctuation aside."""
    return fuzz.partial_ratio(heard, said, processor=utils.default_process)


def find_echo(
    heard: str,
    start: float,
    end: float,
    windows: Iterable[SpokenWindow],
    *,
    final: bool = True,
    min_ratio: float = ECHO_MIN_RATIO,
) -> SpokenWindow | None:
    """The speech `heard` (from `start` to `end`, same clock) echoes, if any. A partial transcript (`final`
    false) may be short: the first words of the delegate's own voice must not stop it."""
    if final and len(heard.split()) < ECHO_MIN_WORDS:
        return None
    best: tuple[float, SpokenWindow] | None = None
    for w in windows:
        if start > w.end + ECHO_MARGIN_S or end < w.start - ECHO_MARGIN_S:
            continue
        ratio = echo_ratio(heard, w.text)
        if ratio >= min_ratio and (best is None or ratio > best[0]):
            best = (ratio, w)
    return best[1] if best else None
