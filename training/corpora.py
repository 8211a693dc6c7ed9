"""Meetings to learn turn-taking from: QMSum (AMI, ICSI, committees), the ELITR dev set and our fixtures.

Every meeting becomes a `TrainingMeeting`: utterances, speaker labels, display names and the profiles
that exist for it. AMI and ICSI speakers are roles or letters ("Project Manager", "PhD A") that are
never said in the talk, so they become opaque labels and their name features stay off; committee
speakers keep their full names ("Hon. Bill Blair"), which the chair does say.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from delegate.models import Profile, Utterance

Corpus = Literal["ami", "icsi", "committee", "elitr", "fixture"]
CORPORA: tuple[Corpus, ...] = ("ami", "icsi", "committee", "elitr", "fixture")

_MARK = re.compile(r"\{[a-z_ ]+\}")
_SPACE_BEFORE = re.compile(r"\s+([,.?!;:])")


class TrainingMeeting(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    meeting_id: str
    corpus: Corpus
    utterances: list[Utterance]
    attendees: list[str]
    names: dict[str, str] = Field(default_factory=dict)
    profiles: dict[str, Profile] = Field(default_factory=dict)


def corpus_of(meeting_id: str) -> Corpus:
    if meeting_id.startswith(("ES", "IS", "TS")):
        return "ami"
    if meeting_id.startswith("B"):
        return "icsi"
    return "committee"


KEPT_CHARS = 1500
"""Of a speech longer than twice this, its opening and its close are kept: where it is addressed and handed over."""


def _clean(text: str) -> str:
    text = _SPACE_BEFORE.sub(r"\1", " ".join(_MARK.sub(" ", text).split()))
    if len(text) > 2 * KEPT_CHARS:
        text = f"{text[:KEPT_CHARS]} ... {text[-KEPT_CHARS:]}"
    return text


def qmsum_meeting(path: Path) -> TrainingMeeting:
    raw = json.loads(path.read_text(encoding="utf-8"))
    meeting_id = path.stem
    corpus = corpus_of(meeting_id)
    labels: dict[str, str] = {}
    utterances: list[Utterance] = []
    for turn in raw["meeting_transcripts"]:
        text = _clean(turn["content"])
        if not text:
            continue
        label = labels.setdefault(turn["speaker"], f"SPEAKER{len(labels) + 1}")
        utterances.append(Utterance(id=len(utterances), speaker=label, text=text))
    names = {label: speaker for speaker, label in labels.items()} if corpus == "committee" else {}
    return TrainingMeeting(meeting_id=meeting_id, corpus=corpus, utterances=utterances, attendees=list(labels.values()), names=names)


def bench_meetings(folder: Path, corpus: Corpus) -> list[TrainingMeeting]:
    from benchmark.scoring.data import load

    out = []
    for m in load(folder):
        attendees = list(dict.fromkeys([*m.attendees, *(u.speaker for u in m.utterances)]))
        profiles = {label: m.profile(label) for label in m.profiles}
        out.append(
            TrainingMeeting(meeting_id=m.meeting_id, corpus=corpus, utterances=m.utterances, attendees=attendees, names=dict(m.names), profiles=profiles)
        )
    return out


def load_all(qmsum: Path | None, elitr: Path | None, fixtures: Path | None) -> list[TrainingMeeting]:
    """Every meeting found, in a fixed order (QMSum train then val, ELITR, fixtures)."""
    out: list[TrainingMeeting] = []
    if qmsum is not None:
        for split in ("train", "val"):
            out.extend(qmsum_meeting(f) for f in sorted((qmsum / split).glob("*.json")))
    if elitr is not None:
        out.extend(bench_meetings(elitr, "elitr"))
    if fixtures is not None:
        out.extend(bench_meetings(fixtures, "fixture"))
    return out
