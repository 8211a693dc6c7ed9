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

import numpy as np

from delegate.addressing import person
from delegate.decide.turn_taking import FEATURES, addressing, features, references
from delegate.meeting import MeetingState, is_backchannel
from training.corpora import TrainingMeeting

MAX_CANDIDATES = 12
SAMPLED_OUTSIDERS = 4


@dataclass
class Rows:
    x: np.ndarray
    y: np.ndarray
    meeting: np.ndarray
    """Meeting id of each row."""
    corpus: np.ndarray

    def __len__(self) -> int:
        return len(self.y)

    def take(self, mask: np.ndarray) -> Rows:
        return Rows(self.x[mask], self.y[mask], self.meeting[mask], self.corpus[mask])

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        return Rows(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("x", "y", "meeting", "corpus")))

    def save(self, path: str) -> None:
        np.savez_compressed(path, x=self.x, y=self.y, meeting=self.meeting, corpus=self.corpus)

    @staticmethod
    def read(path: str) -> Rows:
        d = np.load(path, allow_pickle=False)
        return Rows(d["x"], d["y"], d["meeting"], d["corpus"])


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


def meeting_rows(meeting: TrainingMeeting, seed: int = 0) -> Rows:
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    rng = random.Random(seed * 1_000_003 + zlib.crc32(meeting.meeting_id.encode()))
    nxt = next_speakers(meeting)
    xs: list[list[float]] = []
    ys: list[int] = []
    for i, u in enumerate(meeting.utterances):
        state.add(u)
        if is_backchannel(u.text) or nxt[i] is None:
            continue
        refs = references(state)
        for label in candidates(state, set(refs), rng):
            # The principals of our benchmark files are looked for as the delegate looks for its principal.
            profile = meeting.profiles.get(label)
            who = profile or person(label, state.display_name(label))
            xs.append(features(state, who, addressing(state, who, refs, garbles=profile is not None)))
            ys.append(int(nxt[i] == label))
    n = len(ys)
    return Rows(
        np.asarray(xs, dtype=np.float32).reshape(n, len(FEATURES)),
        np.asarray(ys, dtype=np.int8),
        np.asarray([meeting.meeting_id] * n),
        np.asarray([meeting.corpus] * n),
    )


def build(meetings: list[TrainingMeeting], seed: int = 0) -> Rows:
    return Rows.concat([meeting_rows(m, seed) for m in meetings])
