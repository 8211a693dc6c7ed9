"""The readers on real files: our .ics and .mbox fixtures, and the workplace-dev scenario's exports when present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delegate.sources.folder import load_sources
from delegate.sources.gmail import read_gmail
from delegate.sources.ics import read_ics
from delegate.sources.items import SourceError
from delegate.sources.mbox import read_mbox
from delegate.sources.slack import read_slack

FIXTURES = Path(__file__).parent / "fixtures"


def test_ics_expands_a_weekly_recurrence_into_its_occurrences() -> None:
    events = read_ics(FIXTURES / "calendar.ics")
    standups = sorted((e for e in events if e.summary == "Team standup"), key=lambda e: e.start)
    assert [e.start.day for e in standups] == [3, 10, 17, 24]
    assert [e.id for e in standups][:2] == ["standup@20250303T090000Z", "standup@20250310T090000Z"]
    assert standups[0].attendees == ("ben@example.org",) and standups[0].organizer == "ana@example.org"
    assert standups[0].description == "What we did, what we do next."  # RFC 5545 escapes undone


def test_ics_marks_a_private_event() -> None:
    by_id = {e.id: e for e in read_ics(FIXTURES / "calendar.ics")}
    assert by_id["dentist"].private and not by_id["review"].private
    assert set(by_id["review"].attendees) == {"ben@example.org", "cleo@example.org", "ana@example.org"}


def test_mbox_reads_addresses_dates_and_unicode_bodies() -> None:
    mails = {m.id: m for m in read_mbox(FIXTURES / "mail.mbox")}
    assert set(mails) == {"m1@example.org", "m2@example.org", "m3@example.org"}
    assert mails["m2@example.org"].audience == frozenset({"ana@example.org", "ben@example.org"})
    assert mails["m2@example.org"].date is not None and mails["m2@example.org"].date.day == 10
    assert "crème brûlées" in mails["m3@example.org"].text  # quoted-printable decoded


def test_unknown_fields_are_ignored_and_a_bad_item_is_named(tmp_path: Path, slack_export: dict) -> None:
    slack = slack_export
    good = tmp_path / "slack.json"
    good.write_text(json.dumps({**slack, "exported_by": "admin"}), encoding="utf-8")
    items, _ = read_slack(good)
    assert [i.id for i in items] == ["s1", "s2"]
    bad = tmp_path / "bad" / "slack.json"
    bad.parent.mkdir()
    broken = {**slack, "messages": [slack["messages"][0], {"id": "s9", "channel": "C1", "user": "U1", "ts": "yesterday", "text": "x"}]}
    bad.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(SourceError, match=r"slack\.json: messages\[1\] \(s9\): ts"):
        read_slack(bad)


def test_a_folder_with_no_source_file_says_what_it_looked_for(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no source files"):
        load_sources(tmp_path)


def test_dev_ics_and_mbox_hold_the_same_events_and_mail_as_the_json(dev: Path) -> None:
    src = dev / "sources"
    calendar = json.loads((src / "calendar.json").read_text(encoding="utf-8"))["events"]
    ics = {e.id: e for e in read_ics(src / "calendar.ics")}
    assert set(ics) == {e["id"] for e in calendar}
    for e in calendar:
        assert ics[e["id"]].private == e["private"]
        assert ics[e["id"]].start.isoformat().replace("+00:00", "Z") == e["start"]
        assert set(ics[e["id"]].attendees) == set(e["attendees"])
    from_json = {m.id: m for m in read_gmail(src / "gmail.json")}
    from_mbox = {m.id: m for m in read_mbox(src / "mail.mbox")}
    assert set(from_mbox) == set(from_json)
    assert all(from_mbox[k].text == from_json[k].text and from_mbox[k].audience == from_json[k].audience for k in from_json)


def test_dev_folder_reads_every_source_once(dev: Path) -> None:
    sources = load_sources(dev / "sources")
    ids = [i.id for i in sources.items]
    assert len(ids) == len(set(ids))
    assert {i.source for i in sources.items} == {"slack", "gmail", "calendar", "jira", "drive"}
    assert sources.event("ev25") is not None and sources.name_of("priya.raman@tidewell.example") == "Priya Raman"


def test_mail_is_titled_with_the_senders_name_from_the_contacts(sources_dir: Path) -> None:
    mail = {i.id: i for i in load_sources(sources_dir).items if i.source == "gmail"}
    assert mail["m2@example.org"].title == "Mail from Ana Ruiz: Re: Lumen launch date"
    # Someone the contacts do not know keeps their address: nothing is made up.
    assert mail["m3@example.org"].title.startswith("Mail from dee@example.org")
