"""Who does this turn address? Attendees spoken to by name, several at once, or else the one being answered.

Built on `delegate.language.names.find`, which tells addressed from mentioned names for one person. This module
asks it for every attendee and adds what one person at a time cannot see:

- names *coordinated* with an addressed name are addressed too: in "Anna and Ben, could you ...", `find`
  reads "Anna and" as a mention, but she is spoken to together with Ben;
- masks of people who have not spoken yet ("[PERSON9], can you ...") are attendees as well;
- a turn that names nobody addresses the person it answers: the last other speaker of a substantive
  turn (the exchange), with a lower score.

The cue detector asks "is someone other than the principal spoken to by name?" and the action extractor
"who is this request for?"; both read the same `Addressee` list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from delegate.language.names import Reference, find
from delegate.language.text import MASK
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance

EXCHANGE_SCORE = 0.5
"""Confidence of an addressee inferred from turn-taking rather than said."""

# Between two names spoken to together: "Anna and Ben", "Anna, Ben", "Anna, and also Ben", "Anna or Ben".
_COORDINATION = re.compile(r"^\s*(?:,\s*)?(?:(?:and|or|&)\s+)?(?:also\s+)?$|^\s*,\s*$", re.I)


class Addressee(BaseModel):
    """One attendee a turn is spoken to."""

    model_config = ConfigDict(frozen=True)

    label: str
    how: Literal["name", "together", "exchange"]
    """`name`: addressed by name; `together`: named alongside an addressed name ("Anna and Ben, ...");
    `exchange`: nobody is named and the turn answers this person."""
    score: float
    surface: str = ""
    """The words that named them (empty for `exchange`)."""


# Titles and roles around a display name ("Hon. Bill Blair", "Lynne Neagle AM"): not what people are called by.
_TITLES = frozenset("the hon hon. right mr mr. mrs mrs. ms ms. dr dr. prof prof. sir dame lord lady am mp mla ms msp".split())
# Parenthesised asides in a display name ("Ann Smith (Chair)").
_PARENS = re.compile(r"\([^()]*(?:\([^()]*\)[^()]*)*\)")


@lru_cache(maxsize=8192)
def person(label: str, display: str) -> Profile:
    """An attendee as a name to look for: the display name without titles, its first and last word as aliases.

    The one rule of how an attendee who is not the principal can be named, for addressing and turn-taking alike.
    """
    words = [w for w in _PARENS.sub(" ", display).split() if w.lower() not in _TITLES]
    name = " ".join(words) or display
    aliases = [words[0], words[-1]] if len(words) > 1 else []
    return Profile(name=name, label=label, aliases=aliases)


@dataclass
class Roster:
    """The attendees as they can be named in speech, and how a description writes them."""

    labels: tuple[str, ...] = ()
    names: dict[str, str] = field(default_factory=dict)
    known: dict[str, Profile] = field(default_factory=dict)
    """Profiles that say more than a display name (the principal's, with aliases), by speaker label."""
    _by_word: dict[str, str] = field(default_factory=dict, init=False)
    _kinds: frozenset[str] = field(default=frozenset(), init=False)
    _others: dict[str, frozenset[str]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._kinds = frozenset(label.rstrip("0123456789") for label in self.labels if MASK.fullmatch(f"[{label}]"))
        words = {label: frozenset(w.lower() for n in self._spellings(label) for w in n.split()) for label in self.labels}
        everyone = frozenset().union(*words.values())
        for label in self.labels:
            display = self.names.get(label, label)
            for word in {display, display.split()[0] if display.split() else display, label}:
                self._by_word.setdefault(word.lower(), label)
            self._others[label] = everyone - words[label]

    def _spellings(self, label: str) -> list[str]:
        known = self.known.get(label)
        return [known.name, *known.aliases] if known is not None else [self.names.get(label, label)]

    def others(self, label: str) -> frozenset[str]:
        """Name words of everyone but `label`: never taken for a garbled form of their name."""
        return self._others.get(label, frozenset())

    @classmethod
    def of(cls, meeting: MeetingState, known: tuple[Profile, ...] = ()) -> Roster:
        return cls(labels=tuple(meeting.attendees), names=dict(meeting.names),
                   known={p.speaker_label: p for p in known})

    def stale(self, meeting: MeetingState) -> bool:
        """Someone new spoke or names changed: rebuild (bounded by the attendee count)."""
        return len(self.labels) != len(meeting.attendees) or self.names != meeting.names

    def profile(self, label: str) -> Profile:
        known = self.known.get(label)
        return known if known is not None else person(label, self.names.get(label, label))

    def spoken(self, label: str) -> str:
        """How a description names someone: their display name when the meeting has one; a label that is a
        name already ("Peter") as it is; a de-identified label ("PERSON3") as the transcript writes it."""
        name = self.names.get(label)
        if name and name != label:
            return name
        return f"[{label}]" if MASK.fullmatch(f"[{label}]") else label

    def resolve(self, word: str) -> str | None:
        """The label of a mask (`[PERSON3]`), a display name or a first name, if it is an attendee's."""
        m = MASK.fullmatch(word.strip())
        if m:
            return m.group(1) if m.group(1).rstrip("0123456789") in self._kinds else None
        return self._by_word.get(word.strip().lower())

    def candidates(self, text: str) -> Iterable[str]:
        """Attendees, then labels of masks in `text` of people who have not spoken yet (masks of the attendees'
        kind: `[PERSON9]` in a meeting of `PERSONk` labels, never `[ORGANIZATION1]`)."""
        yield from self.labels
        known = set(self.labels)
        for m in MASK.finditer(text):
            label = m.group(1)
            if label not in known and label.rstrip("0123456789") in self._kinds:
                known.add(label)
                yield label


_INTRODUCES = re.compile(
    r"\b(?:i'?m|i am|call me|my name is|my name's|this is|they call me|known as)[\s,]*$", re.IGNORECASE
)
"""Words before a name that make it the speaker's own: "I'm Abigail ... you can call me Abbie"."""


def _introduction(text: str, at: int, surface: str) -> bool:
    """Whether the name heard as `surface` at `at` in `text` is the speaker introducing themselves, not an
    address (the surface may carry the words before the name: "I'm Anna")."""
    before = text[:at] + " ".join(surface.split()[:-1])
    return _INTRODUCES.search(before.rstrip() + " ") is not None


def named(text: str, speaker: str, roster: Roster, unheard: frozenset[str] = frozenset()) -> list[Addressee]:
    """Attendees `text` speaks to by name, in the order they are named; never the speaker nor anyone whose
    name the recogniser checked against the audio and found not said (`unheard`, lower-case)."""
    hits: list[tuple[int, str, str, Reference, float]] = []
    for label in roster.candidates(text):
        if label == speaker:
            continue
        hit = find(text, roster.profile(label), roster.others(label), unheard=unheard)
        if hit.reference is Reference.absent:
            continue
        hits.append((text.find(hit.surface), label, hit.surface, hit.reference, hit.score))
    addressed = [h for h in hits if h[3] is Reference.addressed and not _introduction(text, h[0], h[2])]
    if not addressed:
        return []
    out = {h[1]: Addressee(label=h[1], how="name", score=h[4], surface=h[2]) for h in addressed}
    # Grow the group from each addressed name through coordinated neighbours, both ways.
    spans = sorted((h for h in hits if h[0] >= 0), key=lambda h: h[0])
    changed = True
    while changed:
        changed = False
        for a, b in zip(spans, spans[1:], strict=False):
            between = text[a[0] + len(a[2]) : b[0]]
            if not _COORDINATION.match(between):
                continue
            for inside, other in ((a, b), (b, a)):
                if inside[1] in out and other[1] not in out:
                    out[other[1]] = Addressee(label=other[1], how="together", score=other[4] * 0.9, surface=other[2])
                    changed = True
    order = {h[1]: h[0] for h in spans}
    return sorted(out.values(), key=lambda x: order.get(x.label, 0))


def answered(meeting: MeetingState, utterance: Utterance) -> str | None:
    """Who `utterance` answers: the speaker of the last substantive turn by someone else."""
    for turn in reversed(meeting.recent):
        if turn.utterance.id != utterance.id and turn.utterance.speaker != utterance.speaker:
            return turn.utterance.speaker
    return None


def addressees(meeting: MeetingState, utterance: Utterance, roster: Roster | None = None,
               text: str | None = None) -> list[Addressee]:
    """Who `utterance` (or the part `text` of it) is spoken to: by name, else the person it answers.

    Pass a `roster` to reuse one across calls (it must be current: see `Roster.stale`)."""
    roster = roster if roster is not None else Roster.of(meeting)
    by_name = named(text if text is not None else utterance.text, utterance.speaker, roster, utterance.unheard)
    if by_name:
        return by_name
    other = answered(meeting, utterance)
    return [] if other is None else [Addressee(label=other, how="exchange", score=EXCHANGE_SCORE)]
