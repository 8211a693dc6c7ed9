"""`POST /v1/briefs` and `GET /v1/sources/events` on a real server: a draft brief from the configured sources
folder only, with provenance and privacy; refused without a folder, for a path, for an unknown event."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from testkit.live import LiveServer

FIXTURES = Path(__file__).resolve().parents[1] / "sources" / "fixtures"
TOKEN = "briefs-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
PEOPLE = [("Ana Ruiz", "ana@example.org"), ("Ben Cho", "ben@example.org"), ("Cleo Diaz", "cleo@example.org")]


def sources_folder(root: Path) -> Path:
    """The shipped .ics and .mbox fixtures and a contacts file: a principal's exports."""
    folder = root / "sources"
    folder.mkdir(parents=True)
    for name in ("calendar.ics", "mail.mbox"):
        shutil.copy(FIXTURES / name, folder / name)
    contacts = {"contacts": [{"name": n, "email": e} for n, e in PEOPLE]}
    (folder / "contacts.json").write_text(json.dumps(contacts), encoding="utf-8")
    return folder


@pytest.fixture
def live(make_server: Callable[..., LiveServer], tmp_path: Path) -> LiveServer:
    return make_server(api_tokens=TOKEN, sources_dir=sources_folder(tmp_path))


def test_a_draft_for_an_event_carries_provenance_privacy_and_corrections(live: LiveServer) -> None:
    events = httpx.get(f"{live.url}/v1/sources/events", headers=HEADERS).json()
    assert {e["id"] for e in events} >= {"review", "dentist"} and next(e for e in events if e["id"] == "dentist")["private"]
    r = httpx.post(f"{live.url}/v1/briefs", headers=HEADERS, json={"principal": "ana@example.org", "event_id": "review"})
    assert r.status_code == 200, r.text
    draft = r.json()
    items = {b["item_id"]: b for b in draft["profile"]["background"]}
    assert draft["profile"]["name"] == "Ana Ruiz" and draft["title"] == "Launch review"
    assert items["m2@example.org"]["source"] == "gmail" and items["m2@example.org"]["shareable"]
    assert items["m2@example.org"]["context"].startswith("Mail from Ana Ruiz")
    assert not items["dentist"]["shareable"] and items["dentist"]["why_private"] == "a private calendar event"
    assert draft["superseded"] == {"m1@example.org": "m2@example.org"} and "m1@example.org" not in items
    assert {a["name"] for a in draft["attendees"]} == {"Ben Cho", "Cleo Diaz"}


def test_a_draft_for_a_title_time_and_attendees(live: LiveServer) -> None:
    body = {"principal": "ana@example.org", "title": "Lumen launch check", "start": "2025-03-12T15:00:00+00:00", "attendees": ["Ben Cho"]}
    draft = httpx.post(f"{live.url}/v1/briefs", headers=HEADERS, json=body).json()
    assert draft["event_id"] is None and [a["email"] for a in draft["attendees"]] == ["ben@example.org"]
    assert any(b["item_id"] == "m2@example.org" and b["shareable"] for b in draft["profile"]["background"])


def test_mistakes_get_one_clear_error(live: LiveServer, make_server: Callable[..., LiveServer]) -> None:
    post = lambda body, url=live.url: httpx.post(f"{url}/v1/briefs", headers=HEADERS, json=body)  # noqa: E731
    unknown = post({"principal": "ana@example.org", "event_id": "nope"})
    assert unknown.status_code == 404 and "No calendar event 'nope'" in unknown.json()["detail"]
    # A client never names a folder: the field does not exist.
    path = post({"principal": "ana@example.org", "event_id": "review", "sources_dir": "/etc"})
    assert path.status_code == 422 and "sources_dir" in path.json()["detail"]
    both = post({"principal": "ana@example.org", "event_id": "review", "title": "x"})
    assert both.status_code == 422 and "either event_id or title" in both.json()["detail"]
    assert httpx.post(f"{live.url}/v1/briefs", json={"principal": "ana@example.org", "event_id": "review"}).status_code == 401
    # Without DELEGATE_SOURCES_DIR the server drafts from the example workplace, and says so.
    bare = make_server(api_tokens=TOKEN, db_path=live.settings.db_path.with_name("other.sqlite"))
    off = post({"principal": "ana@example.org", "event_id": "review"}, bare.url)
    assert off.status_code == 404 and "example workplace (set DELEGATE_SOURCES_DIR" in off.json()["detail"]


def test_without_a_sources_folder_the_example_workplace_is_offered(make_server: Callable[..., LiveServer]) -> None:
    bare = make_server(api_tokens=TOKEN)
    info = httpx.get(f"{bare.url}/v1/sources", headers=HEADERS).json()
    assert info == {"example": True, "principal": "maya@kestrel.example"}
    events = httpx.get(f"{bare.url}/v1/sources/events", headers=HEADERS).json()
    assert "harbor-review" in [e["id"] for e in events]
    draft = httpx.post(f"{bare.url}/v1/briefs", headers=HEADERS, json={"principal": info["principal"], "event_id": "harbor-review"}).json()
    assert draft["profile"]["name"] == "Maya Okafor" and draft["title"] == "Harbor 2.4 release review"
    assert sorted(a["name"] for a in draft["attendees"]) == ["Dev Iyer", "Lena Park", "Tomas Reyes"]


def test_with_a_sources_folder_the_example_is_not_offered(live: LiveServer) -> None:
    assert httpx.get(f"{live.url}/v1/sources", headers=HEADERS).json() == {"example": False, "principal": None}
