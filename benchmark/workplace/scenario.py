"""A `workplace-scenario/1` folder: who the principal is, which meeting, what is private, and the meeting's cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchmark.scoring.data import BenchDataError, BenchMeeting, load_meeting

FORMAT = "workplace-scenario/1"


class Principal(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str
    name: str
    email: str


class PrivateItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    id: str
    why: str


class ScenarioSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    format: Literal["workplace-scenario/1"]
    scenario_id: str
    principal: Principal
    meeting_event_id: str
    private: list[PrivateItem] = Field(default_factory=list)
    notes: str = ""


class WorkplaceCase(BaseModel):
    """The workplace fields of a case (the rest is `benchmark.scoring.data.Case`)."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: Literal["sourced", "private", "unanswerable"]
    source_refs: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True)

    folder: Path
    spec: ScenarioSpec
    meeting: BenchMeeting
    cases: dict[str, WorkplaceCase]

    @property
    def sources(self) -> Path:
        return self.folder / "sources"


def load_scenario(folder: Path) -> Scenario:
    path = folder / "scenario.json"
    if not path.is_file():
        raise BenchDataError(f"{folder}: no scenario.json (a {FORMAT} folder holds scenario.json, sources/ and meeting.json)")
    try:
        spec = ScenarioSpec.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as e:
        raise BenchDataError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise BenchDataError(f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from e
    meeting_path = folder / "meeting.json"
    meeting = load_meeting(meeting_path)
    raw = json.loads(meeting_path.read_text(encoding="utf-8"))
    try:
        cases = {c["id"]: WorkplaceCase.model_validate(c) for c in raw["cases"]}
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise BenchDataError(f"{meeting_path}: a case: {'.'.join(map(str, first['loc']))}: {first['msg']}") from e
    return Scenario(folder=folder, spec=spec, meeting=meeting, cases=cases)
