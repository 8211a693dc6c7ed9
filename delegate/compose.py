"""What to say: the background items and intents that answer the current discussion, short and natural.

Never an item marked `shareable: false`, never an item the principal (or the delegate for them) already
said in this meeting, at most `max_words` words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from delegate.cues import Cue, is_question
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario
from delegate.relevance import Match, rank_background, rank_intents
from delegate.similarity import embedding
from delegate.text import tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Composition:
    text: str
    used_background: list[int] = field(default_factory=list)
    used_intents: list[int] = field(default_factory=list)
    grounding: float = 0.0
    """How well the chosen material answers the talk (the best item's relevance)."""


class ComposeSettings:
    max_words = 55
    item_floor = 0.30
    """Below this relevance an item is not worth saying."""
    second_item_ratio = 0.85
    """A second item is added when it scores at least this share of the first and fits in the word budget."""
    already_said = 0.80
    """Cosine above which an item counts as already said by the principal."""
    recent_turns_checked = 40


def _already_said(meeting: MeetingState, principal: Profile, k: int, s: type[ComposeSettings]) -> bool:
    if k in meeting.spoken_items.get(principal.speaker_label, set()):
        return True
    turns = meeting.said_by(principal.speaker_label, s.recent_turns_checked)
    if not turns:
        return False
    item = embedding(principal.background[k].information)
    sims = np.array([float(np.dot(item, embedding(u.text))) for u in turns])
    return bool(sims.max() >= s.already_said)


def _trim(text: str, budget: int) -> str:
    """Whole sentences up to `budget` words; the first sentence cut at a word boundary if it alone is longer."""
    out: list[str] = []
    used = 0
    for sentence in _SENTENCE_END.split(text.strip()):
        n = len(sentence.split())
        if used + n > budget:
            if not out:
                words = sentence.split()[:budget]
                out.append(" ".join(words).rstrip(",;:") + "…")
            break
        out.append(sentence)
        used += n
    return " ".join(out)


def _opener(cue: Cue, last_text: str) -> str:
    if cue.scenario is Scenario.chime_in:
        return "If I may add — "
    toks = tokens(last_text)
    if is_question(last_text) and toks and toks[0] in ("do", "does", "did", "is", "are", "was", "were", "can", "could", "have", "has"):
        return "Yes — "
    return ""


def compose(meeting: MeetingState, principal: Profile, cue: Cue, query: str, s: type[ComposeSettings] = ComposeSettings) -> Composition:
    """The words the principal would say now, or an empty text when nothing grounded fits."""
    last = meeting.last
    assert last is not None
    ranked: list[Match] = [
        m for m in rank_background(query, principal) if m.score >= s.item_floor and not _already_said(meeting, principal, m.index, s)
    ]
    parts: list[str] = []
    used: list[int] = []
    budget = s.max_words
    if ranked:
        first = ranked[0]
        text = _trim(principal.background[first.index].information, budget)
        parts.append(text)
        used.append(first.index)
        budget -= len(text.split())
        for m in ranked[1:2]:
            info = principal.background[m.index].information
            if m.score >= s.second_item_ratio * first.score and len(info.split()) <= budget:
                parts.append(info)
                used.append(m.index)
    grounding = ranked[0].score if ranked else 0.0
    intents: list[int] = []
    if not parts:
        top = rank_intents(query, principal)[:1]
        if top and (top[0].score >= s.item_floor or cue.scenario is not Scenario.chime_in):
            intent = principal.intents[top[0].index].rstrip(".?")
            parts.append(f"I'd like to raise one thing: {intent[0].lower() + intent[1:]}?")
            intents.append(top[0].index)
            grounding = top[0].score
    if not parts:
        return Composition("")
    return Composition(_opener(cue, last.text) + " ".join(parts), used, intents, grounding)
