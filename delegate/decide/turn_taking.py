"""Is the floor this person's now? The features of "they take the next turn" and the learned model over them.

The same `features()` serves training (every candidate of every turn of ~200 real meetings, see
`training`) and run time (the principal, after each utterance), so what the model learned is
what it sees. Every feature reads the incremental summaries of `MeetingState` (recent turns, reply
counts, running topic vectors) and the latest utterance: the cost does not grow with the meeting.

The model is a small gradient-boosted tree ensemble (LightGBM at training time) stored as plain arrays
in `delegate/weights/turn_taking.json` and evaluated here with a few lines of Python.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from delegate.addressing import person
from delegate.decide.relevance import Query, embedding_topical, topicals
from delegate.language import names
from delegate.language.text import tokens, word_count
from delegate.meeting import MeetingState
from delegate.models import Profile

_QUESTION_WORDS = frozenset("what how when where why which who whom whose".split())
_AUX_START = frozenset("do does did can could would will is are was were have has should shall may might".split())
_REQUEST = re.compile(
    r"\b(can you|could you|would you|will you|do you|did you|are you|have you|were you|please|let me know|"
    r"what do you think|your (?:view|opinion|take|status|update)|any (?:idea|comments?|thoughts|questions?|updates?)|"
    r"tell us|what about you|how about you|you think|right\?|isn't it|don't you|yes\?|no\?)\b",
    re.IGNORECASE,
)
_TRAILING_CUT = re.compile(r"(?:-|–|—|\.\.\.)\s*$")
RECENT = 8
"""Distinct recent speakers a candidate's recency is measured against."""


def is_question(text: str) -> bool:
    """A question or request: a question mark, a question word or auxiliary opening a clause, or a request phrase."""
    if "?" in text or _REQUEST.search(text):
        return True
    toks = tokens(text)
    return bool(toks) and (toks[0] in _QUESTION_WORDS or toks[0] in _AUX_START) and len(toks) > 2


def is_cut_off(text: str) -> bool:
    return bool(_TRAILING_CUT.search(text))


def _addresses_you(text: str) -> bool:
    return any(t in ("you", "your", "you're", "you've", "you'll", "you'd") for t in tokens(text))


def _cos(a: np.ndarray | None, b: np.ndarray | None) -> float:
    if a is None or b is None:
        return 0.0
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return max(0.0, float(np.dot(a, b)) / (na * nb)) if na and nb else 0.0


def current_talk(meeting: MeetingState) -> Query:
    """The talk right now: the latest utterance and the substantive turn before it."""
    last = meeting.last
    assert last is not None
    before = [t.utterance.text for t in list(meeting.recent)[-2:] if t.utterance.id != last.id][-1:]
    return Query.of([*before, last.text])


@dataclass(frozen=True, slots=True)
class Addressing:
    """Who the latest utterance speaks to, by name, as seen from one candidate."""

    hit: names.NameHit
    """The strongest reference to the candidate."""
    others_addressed: int
    others_named: int

    @property
    def me(self) -> names.Reference:
        return self.hit.reference


def references(meeting: MeetingState) -> dict[str, names.Reference]:
    """How the latest utterance refers to each attendee but its speaker (absent ones left out)."""
    last = meeting.last
    assert last is not None
    said = set(tokens(last.text))
    out = {}
    for label in meeting.attendees:
        if label == last.speaker:
            continue
        other = person(label, meeting.display_name(label))
        forms = names.forms_of(other)
        # Others are found by what is written, not by garbles: a cheap test keeps 100-person meetings fast.
        if said.isdisjoint(forms.words) and said.isdisjoint(forms.masks) and said.isdisjoint(forms.initials):
            continue
        ref = names.find(last.text, other).reference
        if ref is not names.Reference.absent:
            out[label] = ref
    return out


@lru_cache(maxsize=256)
def _name_words(people: tuple[tuple[str, str], ...]) -> frozenset[str]:
    return frozenset(w.lower() for label, display in people for w in person(label, display).name.split())


def addressing(
    meeting: MeetingState, candidate: Profile, refs: dict[str, names.Reference] | None = None, garbles: bool = True
) -> Addressing:
    """How the latest utterance refers to the candidate and to the other attendees.

    With `garbles`, the candidate is looked for by their own names and aliases, garbled ones included
    (the principal); without, as `references` found them.
    """
    last = meeting.last
    assert last is not None
    me = candidate.speaker_label
    refs = references(meeting) if refs is None else refs
    if not garbles or last.speaker == me:
        ref = refs.get(me, names.Reference.absent)
        hit = names.ABSENT if ref is names.Reference.absent else names.NameHit(ref, "name", "", 1.0)
    else:
        own = {w.lower() for n in (candidate.name, *candidate.aliases) for w in n.split()}
        others_words = _name_words(tuple((a, meeting.display_name(a)) for a in meeting.attendees)) - own
        hit = names.find(last.text, candidate, others_words)
    others = [r for label, r in refs.items() if label != me]
    return Addressing(hit, sum(r is names.Reference.addressed for r in others), len(others))


FEATURES: tuple[str, ...] = (
    "question",
    "you",
    "cut_off",
    "length",
    "distinct_speakers",
    "attendees",
    "partner",
    "recency",
    "turns_since",
    "never_spoke",
    "replies_share",
    "reverse_share",
    "talk_share",
    "pair_share",
    "followed_own_question",
    "own_turn_length",
    "addressed_me",
    "named_me",
    "mentioned_me",
    "others_addressed",
    "others_named",
    "voice_talk",
    "voice_last",
    "meeting_talk",
    "voice_meeting",
    "voice_gain",
    "turns_in_last6",
    "has_profile",
    "topic",
    "topic_last",
    "topic_meeting",
    "topic_gain",
)


def features(meeting: MeetingState, candidate: Profile, addr: Addressing | None = None) -> list[float]:
    """The features of "`candidate` takes the next turn" after the latest utterance, in `FEATURES` order."""
    last = meeting.last
    assert last is not None
    me = candidate.speaker_label
    recent = [t.utterance for t in meeting.recent]
    speakers = [u.speaker for u in recent][-6:]
    recent_speakers = meeting.recent_speakers(RECENT)
    mine = meeting.said_by(me, last=1)
    since = meeting.turns_since(me)
    after_last = meeting.replies_after[last.speaker]
    after_me = meeting.replies_after[me]
    addr = addr or addressing(meeting, candidate)
    talk = current_talk(meeting)
    meeting.settle_topics()
    voice = meeting.voice_sums.get(me)
    last_query = Query.of([last.text])
    voice_last = _cos(last_query.vector, voice)
    voice_meeting = _cos(voice, meeting.topic_sum)
    has_profile = bool(candidate.background or candidate.intents)
    topic = topic_last = topic_meeting = 0.0
    if has_profile:
        topic, topic_last = topicals([talk, last_query], candidate)
        if meeting.topic_sum is not None:
            norm = float(np.linalg.norm(meeting.topic_sum))
            topic_meeting = embedding_topical(meeting.topic_sum / norm, candidate) if norm else 0.0
    return [
        float(is_question(last.text)),
        float(_addresses_you(last.text)),
        float(is_cut_off(last.text)),
        min(word_count(last.text), 80) / 80,
        len(set(speakers)) / 6,
        min(math.log(max(len(meeting.attendees), 1)) / math.log(100), 1.0),
        float(recent_speakers[1:2] == [me]),
        1.0 / (recent_speakers.index(me) + 1) if me in recent_speakers else 0.0,
        min(math.log1p(since) / math.log1p(200), 1.0) if since is not None else 1.0,
        float(since is None),
        meeting.replies[(last.speaker, me)] / after_last if after_last else 0.0,
        meeting.replies[(me, last.speaker)] / after_me if after_me else 0.0,
        len(meeting.said.get(me, ())) / meeting.turn_count if meeting.turn_count else 0.0,
        sum(1 for s in speakers if s in (me, last.speaker)) / max(len(speakers), 1),
        float(bool(mine) and is_question(mine[-1].text)),
        min(word_count(mine[-1].text), 80) / 80 if mine else 0.0,
        float(addr.me is names.Reference.addressed),
        float(addr.me is names.Reference.named),
        float(addr.me is names.Reference.mentioned),
        min(addr.others_addressed, 3) / 3,
        min(addr.others_named, 3) / 3,
        _cos(talk.vector, voice),
        voice_last,
        _cos(talk.vector, meeting.topic_sum),
        voice_meeting,
        voice_last - voice_meeting,
        sum(1 for s in speakers if s == me) / 6,
        float(has_profile),
        topic,
        topic_last,
        topic_meeting,
        topic_last - topic_meeting,
    ]


class TreeArrays(BaseModel):
    """One regression tree as parallel arrays; a node with `feature` -1 is a leaf holding `value`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]


class TurnTakingModel(BaseModel):
    """A boosted tree ensemble over `FEATURES` giving the log-odds that the candidate takes the next turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = "turn-taking/1"
    features: list[str]
    trees: list[TreeArrays]
    threshold: float
    """Probability from which the floor is taken to be theirs (chosen on held-out training meetings)."""
    trained_on: dict[str, int]
    """Meetings per corpus the model was fitted on."""

    def check(self) -> TurnTakingModel:
        if tuple(self.features) != FEATURES:
            raise ValueError("turn-taking weights were trained on other features; retrain them")
        return self

    def log_odds(self, x: list[float]) -> float:
        z = 0.0
        for t in self.trees:
            node = 0
            feature, threshold, left, right = t.feature, t.threshold, t.left, t.right
            while feature[node] >= 0:
                node = left[node] if x[feature[node]] <= threshold[node] else right[node]
            z += t.value[node]
        return z

    def probability(self, x: list[float]) -> float:
        return 1.0 / (1.0 + math.exp(-self.log_odds(x)))

    @classmethod
    def read(cls, path: Path) -> TurnTakingModel:
        return cls.model_validate(json.loads(path.read_text(encoding="utf-8"))).check()


WEIGHTS_FILE = "turn_taking.json"


@cache
def shipped() -> TurnTakingModel:
    """The model shipped in the package (`delegate/weights/turn_taking.json`)."""
    data = resources.files("delegate.weights").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return TurnTakingModel.model_validate(json.loads(data)).check()
