"""Load `delegate-bench/1` meeting files and import raw ELITR transcripts into utterances."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from delegate.models import BackgroundItem, Profile, Scenario, Utterance
from delegate.resources import package_path

FORMAT = "delegate-bench/1"
FIXTURES = package_path("benchmark", "fixtures")

Variant = Literal["matched", "mismatched", "noisy_name"]


class BenchDataError(ValueError):
    """A benchmark file that cannot be used; the message names the file and the field."""


class ProfileSpec(BaseModel):
    """A principal's profile as stored in a benchmark file (name and aliases come from `names`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str | None = None
    aliases: list[str] = Field(default_factory=list)
    intents: list[str] = Field(default_factory=list)
    background: list[BackgroundItem] = Field(default_factory=list)


class Case(BaseModel):
    """A snapshot of the meeting after which the principal should speak (or stay silent)."""

    model_config = ConfigDict(frozen=True)

    id: str
    variant: Variant = "matched"
    scenario: Scenario
    principal: str
    last_utterance: int = Field(ge=0)
    response_utterances: list[int] = Field(default_factory=list)
    expected_points: list[str] = Field(default_factory=list)
    edits: dict[int, str] = Field(default_factory=dict)
    names: dict[str, str] | None = None
    """Display names for this case only (noisy-name variants give labels realistic names)."""
    derived_from: str | None = None

    @property
    def expects_speech(self) -> bool:
        return self.variant != "mismatched"


class BenchMeeting(BaseModel):
    """One meeting file: the transcript, the principals' profiles and the cases."""

    model_config = ConfigDict(frozen=True)

    format: Literal["delegate-bench/1"]
    meeting_id: str
    source: str = ""
    attendees: list[str]
    names: dict[str, str] = Field(default_factory=dict)
    facilitators: list[str] = Field(default_factory=list)
    date: dt.date | None = None
    """The day of the meeting, when the source gives it."""
    utterances: list[Utterance]
    profiles: dict[str, ProfileSpec] = Field(default_factory=dict)
    cases: list[Case] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> BenchMeeting:
        ids = [u.id for u in self.utterances]
        if ids != list(range(len(ids))):
            bad = next(i for i, uid in enumerate(ids) if uid != i)
            raise ValueError(f"utterances[{bad}].id is {ids[bad]}; ids must be 0, 1, 2, ... in order")
        n = len(ids)
        for k, case in enumerate(self.cases):
            where = f"cases[{k}] ({case.id})"
            if case.principal not in self.profiles:
                raise ValueError(f"{where}.principal {case.principal!r} has no entry in profiles")
            if case.last_utterance >= n:
                raise ValueError(f"{where}.last_utterance {case.last_utterance} is past the last utterance ({n - 1})")
            for r in case.response_utterances:
                if not case.last_utterance < r < n:
                    raise ValueError(f"{where}.response_utterances has {r}, not after last_utterance and within the meeting")
            for e in case.edits:
                if not 0 <= e <= case.last_utterance:
                    raise ValueError(f"{where}.edits has utterance {e}, outside the snapshot")
        return self

    def display_name(self, label: str, names: dict[str, str] | None = None) -> str:
        return (names if names is not None else self.names).get(label, label)

    def profile(self, label: str, names: dict[str, str] | None = None) -> Profile:
        """The principal's full profile: display name and aliases from `names` unless the spec gives them."""
        spec = self.profiles[label]
        name = spec.name or self.display_name(label, names)
        aliases = list(spec.aliases)
        parts = name.split()
        if len(parts) > 1 and parts[0] not in aliases:
            aliases.append(parts[0])
        if label != name and label not in aliases:
            aliases.append(label)
        return Profile(name=name, label=label, aliases=aliases, intents=spec.intents, background=spec.background)

    def snapshot(self, case: Case) -> list[Utterance]:
        """Utterances 0..last_utterance with the case's edits applied."""
        out = self.utterances[: case.last_utterance + 1]
        if not case.edits:
            return list(out)
        return [u.model_copy(update={"text": case.edits[u.id]}) if u.id in case.edits else u for u in out]


def _format_error(path: Path, err: ValidationError) -> str:
    lines = [f"{path}: not a valid {FORMAT} file"]
    for e in err.errors()[:10]:
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        lines.append(f"  {loc}: {e['msg']}")
    return "\n".join(lines)


def load_meeting(path: Path) -> BenchMeeting:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise BenchDataError(f"{path}: cannot read: {e}") from e
    except json.JSONDecodeError as e:
        raise BenchDataError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    if not isinstance(raw, dict):
        raise BenchDataError(f"{path}: expected a JSON object at the top level")
    if raw.get("format") != FORMAT:
        raise BenchDataError(f"{path}: format: expected {FORMAT!r}, found {raw.get('format')!r}")
    try:
        return BenchMeeting.model_validate(raw)
    except ValidationError as e:
        raise BenchDataError(_format_error(path, e)) from e


def load(path: Path | str | None = None) -> list[BenchMeeting]:
    """Load one file or every `*.json` file of a folder (default: the shipped fixtures)."""
    p = Path(path) if path is not None else FIXTURES
    if p.is_dir():
        files = sorted(f for f in p.glob("*.json") if f.is_file())
        if not files:
            raise BenchDataError(f"{p}: no *.json meeting files in this folder")
        return [load_meeting(f) for f in files]
    if not p.exists():
        raise BenchDataError(f"{p}: no such file or folder")
    return [load_meeting(p)]


_TURN = re.compile(r"^\((PERSON\d+|[A-Z][A-Za-z0-9_]*)\)\s*(.*)$")


def import_elitr_transcript(text: str) -> list[Utterance]:
    """Turn an ELITR `transcript_MAN*.txt` into utterances: `(PERSONk)` opens a turn, other lines continue it."""
    turns: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        m = _TURN.match(line)
        if m:
            turns.append((m.group(1), [m.group(2)] if m.group(2) else []))
        elif turns:
            turns[-1][1].append(line)
    out: list[Utterance] = []
    for speaker, parts in turns:
        body = " ".join(p for p in parts if p).strip()
        if body:
            out.append(Utterance(id=len(out), speaker=speaker, text=body))
    return out
