"""A principal's sources folder: every file a reader knows, read once, each item kept once (by id)."""

from __future__ import annotations

import re
from pathlib import Path

from delegate.sources.calendar import event_item, read_calendar
from delegate.sources.contacts import read_contacts
from delegate.sources.drive import read_drive
from delegate.sources.gmail import read_gmail
from delegate.sources.ics import read_ics
from delegate.sources.items import CalendarEvent, Person, SourceError, SourceItem, Sources
from delegate.sources.jira import read_jira
from delegate.sources.mbox import read_eml, read_mbox
from delegate.sources.slack import read_slack

_ADDRESS = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+")


def _named(item: SourceItem, names: dict[str, str]) -> SourceItem:
    """The item's title with the people it names by e-mail address named by name ("Mail from Sofia
    Marchetti", not "sofia.m@..."): a reply draws on the title, and people say names."""
    title = _ADDRESS.sub(lambda m: names.get(m.group(0).casefold(), m.group(0)), item.title)
    return item if title == item.title else item.model_copy(update={"title": title})


def load_sources(folder: Path) -> Sources:
    """Read `folder`; the MPCBench JSON files first, then .ics, .mbox and .eml files (the same event or mail
    exported twice is kept once, by its id)."""
    if not folder.is_dir():
        raise SourceError(f"{folder}: no such folder")
    items: list[SourceItem] = []
    events: list[CalendarEvent] = []
    people: list[Person] = []
    read: list[str] = []

    def there(name: str) -> Path | None:
        path = folder / name
        if path.is_file():
            read.append(name)
            return path
        return None

    if p := there("contacts.json"):
        people += read_contacts(p)
    if p := there("slack.json"):
        slack_items, slack_people = read_slack(p)
        items += slack_items
        people += slack_people
    if p := there("gmail.json"):
        items += read_gmail(p)
    if p := there("calendar.json"):
        events += read_calendar(p)
    if p := there("jira.json"):
        items += read_jira(p)
    if p := there("drive.json"):
        items += read_drive(p)
    for path in sorted(folder.glob("*.ics")):
        read.append(path.name)
        events += read_ics(path)
    for path in sorted(folder.glob("*.mbox")):
        read.append(path.name)
        items += read_mbox(path)
    for path in sorted(folder.glob("*.eml")):
        read.append(path.name)
        items.append(read_eml(path))
    if not read:
        raise SourceError(f"{folder}: no source files (slack.json, gmail.json, calendar.json, contacts.json, jira.json, drive.json, *.ics, *.mbox, *.eml)")
    unique_events = list({e.id: e for e in reversed(events)}.values())[::-1]
    items += [event_item(e) for e in unique_events]
    unique_items = list({i.id: i for i in reversed(items)}.values())[::-1]
    unique_people = list({p.email.casefold(): p for p in reversed(people)}.values())[::-1]
    names = {p.email.casefold(): p.name for p in unique_people}
    unique_items = [_named(i, names) for i in unique_items]
    return Sources(items=tuple(unique_items), events=tuple(unique_events), people=tuple(unique_people), files=tuple(read))
