"""Whether the material chosen for a reply really answers the question asked, and what to say when it does not.

The nearest item of a large brief is often about the topic without answering the question ("how many
customers are on older phones?" met with the SDK's memory bug). A question's informative words say what
it asks about, and a rare word says more than a common one ("expedited", "MOB-431" against "good",
"need"): an item answers when it carries most of that weight. When no item the principal may say does,
the brief's private items and the live lookup are asked too: an answer found only in a private item, or
nowhere, gets a holding line. The same line for both, so that a refusal gives nothing private away: the
line is chosen by what the question asks (a fact to check later, or someone's private matter or a rumour,
which a colleague declines whatever they know), never by what the brief holds.

Only for a brief built from sources (its items carry a `source`) or a meeting with a live lookup: a brief
the principal wrote is their own choice for this meeting, its items written as cues and often answering
in other words than the question's, which a word check would wrongly refuse (on the replay fixtures it
cost loose recall 0.58 -> 0.47); a brief drafted from a mass of sources holds much that is near a
question without answering it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from wordfreq import zipf_frequency

from delegate.decide.cues import Cue, is_question
from delegate.decide.relevance import Query
from delegate.decide.reply.compose import Composition, compose, holding_line
from delegate.language.questions import NUMBER, TEMPORAL, QuestionType, personal_matter, question_type
from delegate.language.text import STOPWORDS, stem, tokens
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario

_SENTENCE = re.compile(r"(?<=[.!?])\s+")

ANSWERED = 0.5
"""An item answers a question when it carries at least half of the question's informative weight."""
COMMON_ZIPF = 6.0
"""A word this common in English (a million uses per billion words: "good", "take") tells nothing of what is asked."""
RARE_WEIGHT = 4.0
"""The weight of a word English hardly knows (a product, a ticket key): never more, so one odd token cannot decide alone."""
MIN_ASKED = 2.0
"""A sentence must weigh this much (about two informative words) to be something asked about."""
LOOKED_UP = 5
"""Items the live lookup brings per question."""


class Lookup(Protocol):
    """Search over the principal's allowed sources, built once per meeting (`delegate.sources.lookup`)."""

    def search(self, text: str, limit: int) -> Sequence[BackgroundItem]: ...


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    used_background: list[int] = field(default_factory=list)
    used_intents: list[int] = field(default_factory=list)
    used_sources: list[str] = field(default_factory=list)
    """Item ids of the sources the live lookup brought (outside the brief)."""
    why: str = ""


def _asked(question: str, names: frozenset[str]) -> dict[str, float]:
    """The question's informative words (stemmed), each with its weight: rarer in English weighs more."""
    out: dict[str, float] = {}
    for word in tokens(question):
        if word in STOPWORDS or word in names or (len(word) < 2 and not word.isdigit()) or word.startswith("["):
            continue
        word = word.rstrip("'")
        weight = min(COMMON_ZIPF - zipf_frequency(word, "en"), RARE_WEIGHT)
        if weight > 0:
            key = stem(word)
            out[key] = max(out.get(key, 0.0), weight)
    return out


def _parts(question: str, names: frozenset[str]) -> list[dict[str, float]]:
    """What a turn asks, sentence by sentence ("Priya, crash numbers first. Are we where we need to be?"
    asks about its first sentence); sentences that say too little to be asked about are left out, and a
    turn with none is taken whole."""
    sentences = [s for s in _SENTENCE.split(question) if s.strip()]
    parts = [_asked(s, names) for s in sentences]
    kept = [p for p in parts if sum(p.values()) >= MIN_ASKED]
    # What is asked is the question itself: "Sofia has been brilliant on this release. Is she up for
    # promotion?" asks about a promotion, not about the release its preamble names.
    asking = [p for s, p in zip(sentences, parts, strict=True) if s.rstrip().endswith("?") and sum(p.values()) >= MIN_ASKED]
    kept = asking or kept
    whole = _asked(question, names)
    return kept or ([whole] if whole else [])


def coverage(asked: dict[str, float], item: BackgroundItem) -> float:
    """The share of the question's weight that `item` carries (its words, stemmed, in context or information)."""
    total = sum(asked.values())
    if not total:
        return 0.0
    words = _item_words(item.context, item.information)
    return sum(w for k, w in asked.items() if k in words) / total


@lru_cache(maxsize=4096)
def _item_words(context: str, information: str) -> frozenset[str]:
    return frozenset(stem(w.rstrip("'")) for w in tokens(f"{context} {information}"))


def answered(parts: list[dict[str, float]], kind: QuestionType, item: BackgroundItem) -> float:
    """How well `item` answers the turn: its coverage of the sentence it answers best; nothing when the
    question asks when or how many and the item says no time or number."""
    text = f"{item.context} {item.information}"
    if (kind is QuestionType.when and not TEMPORAL.search(text)) or (kind is QuestionType.howmany and not NUMBER.search(text)):
        return 0.0
    return max((coverage(p, item) for p in parts), default=0.0)


def _names(meeting: MeetingState, principal: Profile) -> frozenset[str]:
    # Names address people; they do not say what is asked ("Priya, where did that land?").
    people = [principal.name, *principal.aliases, *meeting.names.values()]
    return frozenset(t for p in people for t in tokens(p))


def settle(meeting: MeetingState, principal: Profile, cue: Cue, words: Composition, talk: str | Query, lookup: Lookup | None) -> Answer:
    """The reply to give for `cue`: `words` when they answer it, else an answer from the items (and the live
    lookup) that do, else the holding line. Only questions are checked; a remark is answered as composed."""
    last = meeting.last
    kept = Answer(words.text, words.used_background, words.used_intents)
    # A question answered with the principal's own point (an intent) is theirs to raise, not a fact to check.
    if last is None or cue.scenario is Scenario.none or words.used_intents or not is_question(last.text):
        return kept
    if lookup is None and not any(b.source for b in principal.background):
        return kept
    if personal_matter(last.text):
        # Someone's private matters or a rumour: declined, whatever the records hold (a brief drafted from
        # sources holds what the principal knows, not what they would say of a colleague in a meeting).
        if cue.scenario is Scenario.chime_in:
            return Answer("", why="a private matter")
        return Answer(holding_line(last.text), why="a private matter, so a holding line")
    asked = _parts(last.text, _names(meeting, principal))
    if not asked:
        return kept
    kind = question_type(last.text)
    brief = principal.background
    if words.used_background and max(answered(asked, kind, brief[k]) for k in words.used_background) >= ANSWERED:
        return kept
    in_brief = {b.item_id for b in brief if b.item_id}
    found = [b for b in (lookup.search(last.text, LOOKED_UP) if lookup else ()) if b.item_id not in in_brief]
    candidates = [*brief, *found]
    answering = sorted(
        (k for k, b in enumerate(candidates) if answered(asked, kind, b) >= ANSWERED),
        key=lambda k: -answered(asked, kind, candidates[k]),
    )
    sayable = [k for k in answering if candidates[k].shareable]
    if sayable:
        # Same indices as brief + lookup, the items that do not answer hidden: what the meeting noted as
        # already said (by index) still reads right.
        keep = set(sayable)
        background = [b if k in keep else b.model_copy(update={"shareable": False}) for k, b in enumerate(candidates)]
        reply = compose(meeting, principal.model_copy(update={"background": background, "intents": []}), cue, talk)
        if reply.text:
            picked = reply.used_background
            return Answer(
                reply.text,
                used_background=[k for k in picked if k < len(brief)],
                used_sources=[candidates[k].item_id or "" for k in picked if k >= len(brief)],
                why="answers the question" + (" from the sources (live lookup)" if any(k >= len(brief) for k in picked) else ""),
            )
    if cue.scenario is Scenario.chime_in:
        return Answer("", why="nothing the principal may say answers it")
    # The same line and reason whether a private item answers or nothing does: a refusal must not tell which.
    return Answer(holding_line(last.text), why="nothing the principal may say answers it, so a holding line")
