"""The turn-taking training set: after every substantive turn, for each candidate, "do they take the next turn?".

Candidates are the meeting's attendees but the speaker; in large meetings (committees of 100) only the
recent speakers, anyone the turn names, and a seeded sample of the rest. The label needs no annotation:
it is whether the next substantive turn is theirs. Features are `delegate.decide.turn_taking.features`, the
very function the delegate runs for its principal.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from delegate.addressing import person
from delegate.decide.turn_taking import (
    FEATURES,
    READER_FEATURES,
    TreeArrays,
    TurnTakingModel,
    addressing,
    brief_texts,
    brief_vectors,
    features,
    reader_features,
    references,
)
from delegate.meeting import MeetingState, is_backchannel
from delegate.models import Profile
from training.briefs import briefs
from training.corpora import TrainingMeeting

if TYPE_CHECKING:
    from benchmark.scoring.data import BenchMeeting

_ALWAYS = TurnTakingModel(features=list(FEATURES), trees=[TreeArrays(feature=[-1], threshold=[0.0], left=[0], right=[0], value=[0.0])],
                          threshold=0.0, trained_on={})
"""A model that always grants the floor (probability 0.5): `detect` with it says whether the model would be asked."""

MAX_CANDIDATES = 12
SAMPLED_OUTSIDERS = 4


_FIELDS = ("x", "e", "y", "meeting", "corpus", "case")


@dataclass
class Rows:
    x: np.ndarray
    """`FEATURES` of each row."""
    e: np.ndarray
    """The reader's encoder features (`READER_FEATURES` but the first); NaN where the meeting was not read."""
    y: np.ndarray
    meeting: np.ndarray
    """Meeting id of each row."""
    corpus: np.ndarray
    case: np.ndarray
    """Whether the row is a benchmark case (matched, engaged negative or swapped principal) rather than a natural moment."""

    def __len__(self) -> int:
        return len(self.y)

    def take(self, mask: np.ndarray) -> Rows:
        return Rows(*(getattr(self, f)[mask] for f in _FIELDS))

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        return Rows(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))

    def save(self, path: str) -> None:
        np.savez_compressed(path, **{f: getattr(self, f) for f in _FIELDS})

    @staticmethod
    def read(path: str) -> Rows:
        d = np.load(path, allow_pickle=False)
        return Rows(*(d[f] for f in _FIELDS))

    @staticmethod
    def of(xs: list[list[float]], es: list[list[float]], ys: list[int], meeting_id: str, corpus: str, case: bool) -> Rows:
        n = len(ys)
        return Rows(
            np.asarray(xs, dtype=np.float32).reshape(n, len(FEATURES)),
            np.asarray(es, dtype=np.float32).reshape(n, len(READER_FEATURES) - 1),
            np.asarray(ys, dtype=np.int8),
            np.asarray([meeting_id] * n),
            np.asarray([corpus] * n),
            np.full(n, case),
        )


def next_speakers(meeting: TrainingMeeting) -> list[str | None]:
    """For each utterance, the speaker of the next substantive turn after it (None at the end)."""
    out: list[str | None] = [None] * len(meeting.utterances)
    nxt: str | None = None
    for i in range(len(meeting.utterances) - 1, -1, -1):
        out[i] = nxt
        if not is_backchannel(meeting.utterances[i].text):
            nxt = meeting.utterances[i].speaker
    return out


def candidates(state: MeetingState, named: set[str], rng: random.Random) -> list[str]:
    last = state.last
    assert last is not None
    others = [a for a in state.attendees if a != last.speaker]
    if len(others) <= MAX_CANDIDATES:
        return others
    keep = [s for s in state.recent_speakers(9) if s != last.speaker][:8]
    keep += [a for a in others if a in named and a not in keep]
    rest = [a for a in others if a not in keep]
    return keep + rng.sample(rest, min(SAMPLED_OUTSIDERS, len(rest)))


_NOT_READ = [float("nan")] * (len(READER_FEATURES) - 1)


class _Reading:
    """The encoder's view of one meeting: every turn embedded once, in batches, and each brief once."""

    def __init__(self, meeting: TrainingMeeting, profiles: dict[str, Profile]) -> None:
        from delegate.language.encoder import shipped as encoder

        texts = list(dict.fromkeys(u.text for u in meeting.utterances if not is_backchannel(u.text)))
        self.turns = dict(zip(texts, encoder().encode(texts, batch=64), strict=True))
        self.briefs = {label: brief_vectors(*brief_texts(p)) for label, p in profiles.items()}

    def features(self, text: str, label: str) -> list[float]:
        return reader_features(self.turns[text], self.briefs[label])


def meeting_rows(meeting: TrainingMeeting, seed: int = 0, read: bool = False) -> Rows:
    """Every candidate after every substantive turn, each with a brief (the meeting's own, or one made by
    `training.briefs`); with `read`, the encoder's features too."""
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    rng = random.Random(seed * 1_000_003 + zlib.crc32(meeting.meeting_id.encode()))
    profiles = briefs(meeting.attendees, meeting.names, meeting.utterances, meeting.meeting_id, meeting.profiles, seed)
    reading = _Reading(meeting, profiles) if read else None
    nxt = next_speakers(meeting)
    xs: list[list[float]] = []
    es: list[list[float]] = []
    ys: list[int] = []
    for i, u in enumerate(meeting.utterances):
        state.add(u)
        if is_backchannel(u.text) or nxt[i] is None:
            continue
        refs = references(state)
        for label in candidates(state, set(refs), rng):
            who = profiles.get(label) or person(label, state.display_name(label))
            # The principals of our benchmark files are looked for as the delegate looks for its principal.
            xs.append(features(state, who, addressing(state, who, refs, garbles=label in meeting.profiles)))
            es.append(reading.features(u.text, label) if reading is not None and label in profiles else _NOT_READ)
            ys.append(int(nxt[i] == label))
    return Rows.of(xs, es, ys, meeting.meeting_id, meeting.corpus, case=False)


def case_rows(bench: BenchMeeting, corpus: str, seed: int = 0) -> Rows:
    """The benchmark's own cases of a meeting as rows: matched (they spoke) against engaged negatives and swapped
    principals (they did not), decided by the model (no name settles them), each with its encoder features."""
    from benchmark.scoring.runner import state_for
    from benchmark.scoring.variants import derive
    from delegate.decide.cues import detect
    from delegate.language.encoder import shipped as encoder

    xs: list[list[float]] = []
    es: list[list[float]] = []
    ys: list[int] = []
    for c in derive(bench, seed):
        if c.variant not in ("matched", "mismatched"):
            continue
        state = state_for(bench, c)
        profile = bench.profile(c.principal, c.names)
        if detect(state, profile, _ALWAYS).floor == 0.0:
            continue  # a name or a backchannel decided: the model is not asked
        assert state.last is not None
        xs.append(features(state, profile, addressing(state, profile)))
        es.append(reader_features(encoder().encode([state.last.text])[0], brief_vectors(*brief_texts(profile))))
        ys.append(int(c.variant == "matched"))
    return Rows.of(xs, es, ys, bench.meeting_id, corpus, case=True)


def build(meetings: list[TrainingMeeting], seed: int = 0, read: bool = False) -> Rows:
    return Rows.concat([meeting_rows(m, seed, read) for m in meetings])
