"""Google Calendar export (MPCBench shape) into events and source items."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import Field

from delegate.sources.items import CalendarEvent, Shape, SourceItem, emails
from delegate.sources.reading import load_json, records


class _Event(Shape):
    id: str
    summary: str = ""
    description: str = ""
    location: str = ""
    start: datetime
    end: datetime | None = None
    organizer: str | None = None
    attendees: list[str] = Field(default_factory=list)
    private: bool = False


def event_item(event: CalendarEvent) -> SourceItem:
    """An event as a source item, seen by its organizer and attendees; a private event is private."""
    when = event.start.strftime("%a %d %b %Y %H:%M %Z").strip()
    return SourceItem(
        source="calendar",
        id=event.id,
        date=event.start,
        title=f"Calendar: {event.summary} ({when})",
        text=f"{event.summary}, {when}. {event.description}".strip(),
        audience=emails([*(event.attendees), *([event.organizer] if event.organizer else [])]),
        private_reason="a private calendar event" if event.private else None,
    )


def read_calendar(path: Path) -> list[CalendarEvent]:
    raw = load_json(path)
    return [
        CalendarEvent(
            id=e.id,
            summary=e.summary,
            description=e.description,
            start=e.start,
            end=e.end,
            organizer=e.organizer,
            attendees=tuple(a.casefold() for a in e.attendees),
            private=e.private,
        )
        for e in records(path, raw, "events", _Event)
    ]
