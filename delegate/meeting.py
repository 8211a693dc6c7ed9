"""MeetingState: the meeting so far, kept incrementally so one utterance costs the same at minute 1 and minute 90."""

from __future__ import annotations

import datetime as dt
from collections import Counter, deque
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from delegate.guard import QUOTABLE_TURNS
from delegate.language.similarity import embedding
from delegate.language.text import tokens
from delegate.models import Utterance

# Turns this short that carry no content ("Yeah.", "Okay.", "Mhm.") do not take the floor.
_BACKCHANNEL = frozenset(
    "yes yeah yep ok okay right sure mhm mm hmm uh um eh ehm ah oh good great fine thanks thank you no nope "
    "alright all so and well exactly true i see".split()
)


def is_backchannel(text: str) -> bool:
    # A backchannel is a few short words; anything long is not one, and is not worth a cache entry.
    return len(text) <= 120 and _short_backchannel(text)


@lru_cache(maxsize=16384)
def _short_backchannel(text: str) -> bool:
    toks = [t for t in tokens(text) if not t.startswith("[")]
    return len(toks) <= 4 and all(t in _BACKCHANNEL for t in toks)


@dataclass(frozen=True, slots=True)
class Turn:
    """A substantive turn (backchannels skipped) with its position in the meeting."""

    utterance: Utterance
    index: int


LONG_TEXT_CHARS = 2000
"""A latest turn longer than this is analysed (decided on, its action items found) in a worker thread, so
that one long turn does not hold up the other meetings of the process."""


@dataclass
class MeetingState:
    """The transcript so far and the few running summaries the decision needs.

    Every field is updated in O(1) per utterance; nothing here scans the whole history.
    """

    meeting_id: str
    attendees: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """Display names for speaker labels (and for `[LABEL]` masks in text)."""
    recent_window: int = 12
    date: dt.date | None = None
    """The day the meeting takes place, when known: what "by Friday" counts from."""

    utterances: list[Utterance] = field(default_factory=list)
    recent: deque[Turn] = field(init=False)
    """The last substantive turns, newest last."""
    last_turn_index: dict[str, int] = field(default_factory=dict)
    """Index (into `utterances`) of each speaker's last substantive turn."""
    replies: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(a, b): how often b took the floor right after a: who talks with whom."""
    replies_after: Counter[str] = field(default_factory=Counter)
    """a: how often someone else took the floor right after a (the sum of `replies[(a, *)]`)."""
    said: dict[str, list[int]] = field(default_factory=dict)
    """Indices of each speaker's substantive turns: what they already said."""
    spoken_items: dict[str, set[int]] = field(default_factory=dict)
    """Background items the delegate already spoke for each principal (by speaker label)."""
    turn_count: int = 0
    """Substantive turns so far."""
    topic_sum: np.ndarray | None = None
    """Sum of the embeddings of every substantive turn: what the meeting as a whole is about
    (up to date after `settle_topics()`)."""
    voice_sums: dict[str, np.ndarray] = field(default_factory=dict)
    """Per speaker, the sum of the embeddings of their own substantive turns: what they talk about
    (up to date after `settle_topics()`)."""
    _unsettled: list[Utterance] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.recent = deque(maxlen=self.recent_window)

    def add(self, utterance: Utterance) -> None:
        """Take the next final utterance. Ids must grow; the caller (session, replay) checks that."""
        index = len(self.utterances)
        self.utterances.append(utterance)
        if utterance.speaker not in self.attendees:
            self.attendees.append(utterance.speaker)
        if is_backchannel(utterance.text):
            return
        previous = self.recent[-1].utterance.speaker if self.recent else None
        if previous is not None and previous != utterance.speaker:
            self.replies[(previous, utterance.speaker)] += 1
            self.replies_after[previous] += 1
        self.recent.append(Turn(utterance, index))
        self.last_turn_index[utterance.speaker] = index
        self.said.setdefault(utterance.speaker, []).append(index)
        self.turn_count += 1
        self._unsettled.append(utterance)

    def settle_topics(self) -> None:
        """Add the turns taken since the last call to `topic_sum` and `voice_sums`.

        Deferred from `add` so that a long turn is embedded where the decision runs (a worker thread
        for long turns), not on the event loop; each turn is embedded once, as it would be anyway.
        """
        for utterance in self._unsettled:
            vec = embedding(utterance.text)
            self.topic_sum = vec.astype(np.float32) if self.topic_sum is None else self.topic_sum + vec
            own = self.voice_sums.get(utterance.speaker)
            self.voice_sums[utterance.speaker] = vec.astype(np.float32) if own is None else own + vec
        self._unsettled.clear()

    def extend(self, utterances: list[Utterance]) -> None:
        for u in utterances:
            self.add(u)

    def quotable(self) -> list[str]:
        """What the meeting said lately: the privacy guard lets the delegate quote these turns."""
        return [u.text for u in self.utterances[-QUOTABLE_TURNS:]]

    @property
    def last(self) -> Utterance | None:
        return self.utterances[-1] if self.utterances else None

    @property
    def last_id(self) -> int | None:
        return self.utterances[-1].id if self.utterances else None

    def __len__(self) -> int:
        return len(self.utterances)

    def recent_speakers(self, n: int) -> list[str]:
        """Speakers of the last `n` substantive turns, newest first, without repeats."""
        seen: list[str] = []
        for turn in reversed(self.recent):
            if turn.utterance.speaker not in seen:
                seen.append(turn.utterance.speaker)
            if len(seen) >= n:
                break
        return seen

    def turns_since(self, speaker: str) -> int | None:
        """How many utterances ago `speaker` last took a substantive turn (None: never)."""
        i = self.last_turn_index.get(speaker)
        return None if i is None else len(self.utterances) - 1 - i

    def said_by(self, speaker: str, last: int | None = None) -> list[Utterance]:
        """The substantive turns of `speaker` (the most recent `last` of them if given)."""
        idx = self.said.get(speaker, [])
        if last is not None:
            idx = idx[-last:]
        return [self.utterances[i] for i in idx]

    def note_spoken(self, speaker: str, items: list[int]) -> None:
        self.spoken_items.setdefault(speaker, set()).update(items)

    def display_name(self, label: str) -> str:
        return self.names.get(label, label)
