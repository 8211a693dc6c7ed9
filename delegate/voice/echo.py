"""Is a transcript the delegate hearing itself? A bot that sends the meeting's mixed audio sends the
delegate's own voice back; its transcript overlaps the delegate's speech in time and says its words.

The text test is RapidFuzz's `partial_ratio` (best alignment of the shorter text inside the longer one),
so a fragment of a long reply counts. `ECHO_MIN_RATIO` was measured with `python -m benchmark.intelligibility`
on the fixture benchmark: tiny.en transcripts of the shipped voice saying the delegate's replies (pieces of
up to 15 s, 3 words or more) score 82.5 at the lowest, 98 at the median; the meeting's own turns of 3 words
or more against the replies of the same meeting reach 80 in 0.3% of pairs (people restating what the
principal's notes say), and those count only if they overlap the delegate's speech in time.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz, utils
from text_to_num import alpha2digit

ECHO_MIN_RATIO = 80.0
"""partial_ratio (0-100) from which a transcript is taken for the delegate's own words."""
ECHO_MIN_WORDS = 3
"""A final needs this many words to be taken for an echo: "Friday?" said back by a person is a turn."""
ECHO_MIN_COVERAGE = 50.0
"""Share (0-100) of a final's words that the speech must contain: a longer turn that merely holds a stretch
like the delegate's short reply ("…the numbers yesterday" against "It ships on Thursday") is a person's."""
ECHO_MARGIN_S = 1.5
"""Slack on both sides of a speech window: the bot's round trip and the recogniser's cut at silence."""


class SpokenWindow(BaseModel):
    """What the delegate said, and when it was heard, in seconds on the server's monotonic clock."""

    model_config = ConfigDict(frozen=True)

    utterance_id: int
    text: str
    start: float
    end: float


def _plain(text: str) -> str:
    """Lower case, no punctuation, numbers as digits ("two hundred" is heard as "200")."""
    return utils.default_process(alpha2digit(text, "en", threshold=0))


def echo_ratio(heard: str, said: str) -> float:
    """How well `heard` matches a stretch of `said`, 0-100, case, punctuation and number spelling aside."""
    return fuzz.partial_ratio(_plain(heard), _plain(said))


def word_coverage(heard: str, said: str) -> float:
    """Share (0-100) of the words of `heard` that `said` contains: a partial transcript decoded greedily may
    repeat itself ("on track to the data collection, the data is"), which no single stretch matches."""
    words = _plain(heard).split()
    known = set(_plain(said).split())
    return 100.0 * sum(w in known for w in words) / len(words) if words else 0.0


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
    false) may be short, and counts when most of its words are the speech's: it only decides whether the
    delegate stops (the final that follows is judged strictly)."""
    if final and len(heard.split()) < ECHO_MIN_WORDS:
        return None
    best: tuple[float, SpokenWindow] | None = None
    for w in windows:
        if start > w.end + ECHO_MARGIN_S or end < w.start - ECHO_MARGIN_S:
            continue
        if final:
            ratio = echo_ratio(heard, w.text) if word_coverage(heard, w.text) >= ECHO_MIN_COVERAGE else 0.0
        else:
            ratio = max(echo_ratio(heard, w.text), word_coverage(heard, w.text))
        if ratio >= min_ratio and (best is None or ratio > best[0]):
            best = (ratio, w)
    return best[1] if best else None
