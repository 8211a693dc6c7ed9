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
        ref = names.find(last.text, other, unheard=last.unheard).reference
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
        hit = names.find(last.text, candidate, others_words, unheard=last.unheard)
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


READER_FEATURES: tuple[str, ...] = (
    "cheap_log_odds",
    "enc_item",
    "enc_context",
    "enc_intent",
    "enc_gain",
    "enc_items",
)
"""What the reader adds to `FEATURES`: the cheap model's verdict and how the latest turn reads against the brief."""


def brief_texts(candidate: Profile) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The shareable items' information, their non-empty contexts, and the intents: what the reader compares."""
    items = [b for b in candidate.background if b.shareable]
    return tuple(b.information for b in items), tuple(b.context for b in items if b.context.strip()), tuple(candidate.intents)


def reader_features(last_vector: np.ndarray, brief: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[float]:
    """How the latest turn (a unit sentence vector) reads against the brief's items, contexts and intents.

    `enc_gain`: the best item against the mean item — one item answering the turn, not a brief that is all
    on the meeting's subject.
    """
    info, contexts, intents = brief
    cos_info = info @ last_vector if len(info) else np.zeros(0)
    best = float(cos_info.max()) if len(cos_info) else 0.0
    return [
        best,
        float((contexts @ last_vector).max()) if len(contexts) else 0.0,
        float((intents @ last_vector).max()) if len(intents) else 0.0,
        best - float(cos_info.mean()) if len(cos_info) else 0.0,
        min(math.log1p(len(info)) / math.log1p(20), 1.0),
    ]


class TreeArrays(BaseModel):
    """One regression tree as parallel arrays; a node with `feature` -1 is a leaf holding `value`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]


def _walk(trees: list[TreeArrays], x: list[float]) -> float:
    z = 0.0
    for t in trees:
        node = 0
        feature, threshold, left, right = t.feature, t.threshold, t.left, t.right
        while feature[node] >= 0:
            node = left[node] if x[feature[node]] <= threshold[node] else right[node]
        z += t.value[node]
    return z


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


class Reader(BaseModel):
    """The second opinion for uncertain moments: trees over `FEATURES` + `READER_FEATURES` (the sentence encoder's view).

    Asked only when the cheap model's probability lies in `gate` and the candidate has a brief; its own
    probability and `threshold` then decide.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    features: list[str]
    trees: list[TreeArrays]
    threshold: float
    gate: tuple[float, float]
    """Cheap probabilities from which to which the reader is asked (chosen so it reads a bounded share of moments)."""

    def log_odds(self, x: list[float]) -> float:
        return _walk(self.trees, x)

    def probability(self, x: list[float]) -> float:
        return _sigmoid(self.log_odds(x))


class TextStack(BaseModel):
    """Where the cheap model is unsure (`gate`), the floor reader reads the turns: its log-odds and the cheap
    model's, weighed by `cheap`, `text` and `bias` (a logistic regression fitted on held-out predictions), decide."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cheap: float
    text: float
    bias: float
    threshold: float
    gate: tuple[float, float]
    """Cheap probabilities from which to which the floor reader is asked (a bounded share of moments: its cost)."""

    def probability(self, cheap_log_odds: float, text_log_odds: float) -> float:
        return _sigmoid(self.cheap * cheap_log_odds + self.text * text_log_odds + self.bias)


class TurnTakingModel(BaseModel):
    """A boosted tree ensemble over `FEATURES` giving the log-odds that the candidate takes the next turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = "turn-taking/2"
    features: list[str]
    trees: list[TreeArrays]
    threshold: float
    """Probability from which the floor is taken to be theirs (chosen on held-out training meetings)."""
    trained_on: dict[str, int]
    """Meetings per corpus the model was fitted on."""
    reader: Reader | None = None
    text: TextStack | None = None
    """The floor reader's place, when it has one: asked before `reader`, which it then replaces."""

    def check(self) -> TurnTakingModel:
        if tuple(self.features) != FEATURES:
            raise ValueError("turn-taking weights were trained on other features; retrain them")
        if self.reader is not None and tuple(self.reader.features) != FEATURES + READER_FEATURES:
            raise ValueError("turn-taking reader weights were trained on other features; retrain them")
        return self

    def log_odds(self, x: list[float]) -> float:
        return _walk(self.trees, x)

    def probability(self, x: list[float]) -> float:
        return _sigmoid(self.log_odds(x))

    def gated(self, p: float, has_brief: bool) -> bool:
        """Whether the reader should read this moment: the cheap model is unsure and there is a brief to read against."""
        return self.reader is not None and has_brief and self.reader.gate[0] <= p <= self.reader.gate[1]

    @classmethod
    def read(cls, path: Path) -> TurnTakingModel:
        return cls.model_validate(json.loads(path.read_text(encoding="utf-8"))).check()


WEIGHTS_FILE = "turn_taking.json"


@cache
def shipped() -> TurnTakingModel:
    """The model shipped in the package (`delegate/weights/turn_taking.json`)."""
    data = resources.files("delegate.weights").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return TurnTakingModel.model_validate(json.loads(data)).check()


@lru_cache(maxsize=512)
def brief_vectors(info: tuple[str, ...], contexts: tuple[str, ...], intents: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A brief's texts as sentence vectors, embedded once per brief (one batch) and kept."""
    from delegate.language.encoder import HIDDEN
    from delegate.language.encoder import shipped as encoder

    vecs = encoder().encode([*info, *contexts, *intents]) if info or contexts or intents else np.zeros((0, HIDDEN), dtype=np.float32)
    a, b = len(info), len(info) + len(contexts)
    return vecs[:a], vecs[a:b], vecs[b:]


def read_brief(candidate: Profile) -> None:
    """Embed the candidate's brief now (at join), so that the first uncertain moment, and the first reply
    ranked by `relevance.read_items`, pay only for their own turn."""
    from delegate.language.encoder import shipped as encoder

    if candidate.background or candidate.intents:
        brief_vectors(*brief_texts(candidate))
        items = candidate.background
        encoder().encode([*(b.information for b in items), *(b.context or b.information for b in items)])


@dataclass(frozen=True, slots=True)
class Floor:
    """The model's verdict on "is the floor theirs now?"."""

    probability: float
    threshold: float
    read: bool
    """Whether a reading model (the floor reader, or the sentence encoder's reader) decided, rather than the cheap model."""

    @property
    def taken(self) -> bool:
        return self.probability >= self.threshold


def floor(
    meeting: MeetingState, candidate: Profile, addr: Addressing, model: TurnTakingModel, read: bool = True, text: bool = True
) -> Floor:
    """The cheap model first; where it is unsure, the floor reader reads the last turns (with `text` and weights that
    hold its stack), else the encoder's reader reads the turn against the brief. `read=False`
    (`DELEGATE_FLOOR_READER=off`): the cheap model alone, a fraction of the CPU."""
    x = features(meeting, candidate, addr)
    z = model.log_odds(x)
    p = _sigmoid(z)
    if not read:
        return Floor(p, model.threshold, False)
    stack = model.text if text else None
    if stack is not None:
        if not stack.gate[0] <= p <= stack.gate[1]:
            return Floor(p, model.threshold, False)
        from delegate.decide import floor_reader

        zt = float(floor_reader.shipped().log_odds([floor_reader.reading(meeting, candidate)])[0])
        return Floor(stack.probability(z, zt), stack.threshold, True)
    has_brief = bool(x[FEATURES.index("has_profile")])
    if not model.gated(p, has_brief):
        return Floor(p, model.threshold, False)
    from delegate.language.encoder import shipped as encoder

    assert model.reader is not None and meeting.last is not None
    last_vector = encoder().encode([meeting.last.text])[0]
    extra = reader_features(last_vector, brief_vectors(*brief_texts(candidate)))
    return Floor(model.reader.probability([*x, z, *extra]), model.reader.threshold, True)
