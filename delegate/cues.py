"""The scenario of the latest utterance for a principal: explicit cue, implicit cue, chime-in, or none.

- explicit cue: the utterance addresses the principal by name (mask, name, alias, initials, or a name
  garbled by speech recognition in a vocative slot).
- implicit cue: a question or request that, from the flow of the exchange, falls to the principal: they
  are the speaker's partner in the current exchange and the turn is handed back to them.
- chime-in: the talk reached the principal's intents or background, and nobody else holds the floor.
- none: anything else — in particular a question addressed by name to someone else is never theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from delegate import names
from delegate.meeting import MeetingState, is_backchannel
from delegate.models import Profile, Scenario, Utterance
from delegate.relevance import topical
from delegate.text import tokens

_QUESTION_WORDS = frozenset("what how when where why which who whom whose".split())
_AUX_START = frozenset("do does did can could would will is are was were have has should shall may might".split())
_REQUEST = re.compile(
    r"\b(can you|could you|would you|will you|do you|did you|are you|have you|were you|please|let me know|"
    r"what do you think|your (?:view|opinion|take|status|update)|any (?:idea|comments?|thoughts|questions?|updates?)|"
    r"tell us|what about you|how about you|you think|right\?|isn't it|don't you|yes\?|no\?)\b",
    re.IGNORECASE,
)
_TRAILING_CUT = re.compile(r"(?:-|–|—|\.\.\.)\s*$")


@dataclass(frozen=True, slots=True)
class Cue:
    scenario: Scenario
    confidence: float
    reason: str
    topical: float = 0.0


def is_question(text: str) -> bool:
    """A question or request: a question mark, a question word or auxiliary opening a clause, or a request phrase."""
    if "?" in text or _REQUEST.search(text):
        return True
    toks = tokens(text)
    return bool(toks) and (toks[0] in _QUESTION_WORDS or toks[0] in _AUX_START) and len(toks) > 2


def _addresses_you(text: str) -> bool:
    return any(t in ("you", "your", "you're", "you've", "you'll", "you'd") for t in tokens(text))


@lru_cache(maxsize=4096)
def _person(label: str, display: str) -> Profile:
    parts = display.split()
    aliases = [parts[0]] if len(parts) > 1 else []
    return Profile(name=display, label=label, aliases=aliases)


def addressed_others(meeting: MeetingState, utterance: Utterance, principal: Profile) -> list[str]:
    """Labels of other attendees this utterance addresses by name."""
    out = []
    for label in meeting.attendees:
        if label in (principal.speaker_label, utterance.speaker):
            continue
        other = _person(label, meeting.display_name(label))
        if names.find(utterance.text, other).reference is names.Reference.addressed:
            out.append(label)
    return out


def _query(meeting: MeetingState) -> str:
    """The talk right now: the latest utterance and the substantive turn before it."""
    last = meeting.last
    assert last is not None
    recent = [t.utterance for t in list(meeting.recent)[-2:]]
    texts = [u.text for u in recent if u.id != last.id][-1:] + [last.text]
    return " ".join(texts)


class CueThresholds:
    """Weights of the implicit-cue and chime-in scores, and where they tip into speaking."""

    implicit = 0.55
    chime_in = 0.47
    partner_topical_floor = 0.30


def detect(meeting: MeetingState, principal: Profile, th: type[CueThresholds] = CueThresholds) -> Cue:
    last = meeting.last
    if last is None:
        return Cue(Scenario.none, 1.0, "nothing said yet")
    me = principal.speaker_label
    if last.speaker == me:
        return Cue(Scenario.none, 0.95, "the principal has just spoken")

    hit = names.find(last.text, principal)
    if hit.reference is names.Reference.addressed:
        how = {"garbled": f"heard '{hit.surface}', taken for their name"}.get(hit.form, f"named as '{hit.surface}'")
        return Cue(Scenario.explicit_cue, 0.9 * hit.score + 0.1, f"addressed by name ({how})")

    others = addressed_others(meeting, last, principal)
    if others:
        who = ", ".join(meeting.display_name(o) for o in others)
        return Cue(Scenario.none, 0.9, f"addressed to {who}, not to the principal")

    question = is_question(last.text)
    if hit.reference is names.Reference.mentioned and question:
        return Cue(Scenario.explicit_cue, 0.6, f"a question that names the principal ('{hit.surface}')")

    if is_backchannel(last.text):
        return Cue(Scenario.none, 0.8, "a backchannel: the floor has not moved")

    topic = topical(_query(meeting), principal)
    speakers = meeting.recent_speakers(4)
    rank = speakers.index(me) if me in speakers else -1
    cut_off = bool(_TRAILING_CUT.search(last.text))

    # Implicit cue: the principal is the speaker's partner in this exchange and the turn comes back to them.
    implicit = 0.0
    if rank == 1:
        implicit = 0.45
    elif rank == 2:
        implicit = 0.2
    if implicit:
        implicit += 0.2 if question else 0.0
        implicit += 0.1 if _addresses_you(last.text) else 0.0
        implicit += 0.25 * max(0.0, topic - th.partner_topical_floor)
        implicit -= 0.15 if cut_off else 0.0
        if implicit >= th.implicit:
            why = "asked right after the principal spoke" if question else "the exchange hands the turn back"
            return Cue(Scenario.implicit_cue, min(implicit, 0.95), why, topic)

    # Chime-in: the talk reached what the principal knows or wants, and nobody else holds the floor.
    chime = topic - (0.1 if cut_off else 0.0) - (0.05 if question and rank < 0 else 0.0)
    if chime >= th.chime_in:
        return Cue(Scenario.chime_in, min(chime, 0.9), "the discussion reached the principal's topics", topic)

    return Cue(Scenario.none, 0.7, "nothing here for the principal", topic)
