"""What was heard of a reply cut short: the whole sentences played, then the words of the cut one.

Within the sentence being played when it was cut, words are taken as evenly spread over its characters
(speech runs at a roughly even rate of characters): a word counts as said when its last character falls
before the share of the sentence that had played. An approximation, to the word, for the audit log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from delegate.voice.base import SpokenSentence

_WORD = re.compile(r"\S+")


def said_until(sentences: Sequence[SpokenSentence], played_s: float) -> str:
    """The text of `sentences` heard in the first `played_s` seconds of their audio."""
    said: list[str] = []
    start = 0.0
    for sentence in sentences:
        if played_s >= start + sentence.seconds:
            said.append(sentence.text)
            start += sentence.seconds
            continue
        share = (played_s - start) / sentence.seconds if sentence.seconds > 0 else 0.0
        reached = share * len(sentence.text)
        words = [m.group() for m in _WORD.finditer(sentence.text) if m.end() <= reached]
        if words:
            said.append(" ".join(words))
        break
    return " ".join(said)
