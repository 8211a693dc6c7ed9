"""A small sources folder written by the tests (Slack, contacts, Jira, Drive JSON) beside the shipped .ics and .mbox fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
DEV = Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmark" / "workplace-dev"

PEOPLE = [("U1", "Ana Ruiz", "ana@example.org"), ("U2", "Ben Cho", "ben@example.org"), ("U3", "Cleo Diaz", "cleo@example.org")]
SLACK = {
    "workspace_name": "Example",
    "users": [{"id": i, "name": n, "email": e, "tz": "UTC"} for i, n, e in PEOPLE],
    "channels": [
        {"id": "C1", "name": "lumen", "type": "public", "members": ["U1", "U2", "U3"]},
        {"id": "D1", "name": "dm-ana-ben", "type": "dm", "members": ["U1", "U2"]},
    ],
    "messages": [
        {"id": "s1", "channel": "C1", "user": "U2", "ts": "2025-03-06T10:00:00Z", "text": "QA signed off the Lumen release candidate: 212 of 214 tests pass.", "reactions": []},
        {"id": "s2", "channel": "D1", "user": "U2", "ts": "2025-03-07T10:00:00Z", "text": "Between us: Cleo is moving to the Oslo office in May, she hasn't told the team yet."},
    ],
}
CONTACTS = {"contacts": [{"name": n, "email": e, "title": "Engineer", "team": "Lumen"} for _, n, e in PEOPLE]}


def write_sources(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "slack.json").write_text(json.dumps(SLACK), encoding="utf-8")
    (folder / "contacts.json").write_text(json.dumps(CONTACTS), encoding="utf-8")
    for name in ("calendar.ics", "mail.mbox"):
        shutil.copy(FIXTURES / name, folder / name)
    return folder


@pytest.fixture
def slack_export() -> dict:
    return json.loads(json.dumps(SLACK))


@pytest.fixture
def sources_dir(tmp_path: Path) -> Path:
    return write_sources(tmp_path / "sources")


@pytest.fixture
def dev() -> Path:
    if not (DEV / "sources").is_dir():
        pytest.skip("the workplace-dev scenario is not here (../shared/benchmark/workplace-dev)")
    return DEV
