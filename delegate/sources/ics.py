"""iCalendar (RFC 5545) files: events with their recurrences expanded over a window (`icalendar`, `recurring-ical-events`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import icalendar
import recurring_ical_events

from delegate.sources.items import CalendarEvent, SourceError

WINDOW = (datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
MAX_OCCURRENCES = 5000
"""An unbounded rule (`RRULE:FREQ=DAILY` with no end) stops here rather than expanding for ever."""


def _address(value: object) -> str:
    return str(value).removeprefix("mailto:").removeprefix("MAILTO:").strip().casefold()


def _moment(value: date | datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)


def read_ics(path: Path, window: tuple[datetime, datetime] = WINDOW) -> list[CalendarEvent]:
    """Every occurrence of every VEVENT in `window`; an occurrence of a recurring event gets the id `UID@start`."""
    try:
        calendar = icalendar.Calendar.from_ical(path.read_bytes())
    except OSError as e:
        raise SourceError(f"{path}: cannot read: {e.strerror or e}") from e
    except ValueError as e:
        raise SourceError(f"{path}: not an iCalendar file: {e}") from e
    out: list[CalendarEvent] = []
    repeating = {str(e.get("UID", "")) for e in calendar.walk("VEVENT") if "RRULE" in e or "RDATE" in e or "RECURRENCE-ID" in e}
    try:
        occurrences = recurring_ical_events.of(calendar).between(*window)
    except Exception as e:  # the library raises its own errors for a broken RRULE or date
        raise SourceError(f"{path}: cannot expand the events: {e}") from e
    for n, event in enumerate(occurrences):
        if n == MAX_OCCURRENCES:
            break
        uid = str(event.get("UID", ""))
        try:
            start = _moment(event.decoded("DTSTART"))
            end = _moment(event.decoded("DTEND")) if "DTEND" in event else start + timedelta(hours=1)
        except (KeyError, ValueError) as e:
            raise SourceError(f"{path}: event {uid or n}: no usable DTSTART/DTEND: {e}") from e
        attendees = event.get("ATTENDEE", [])
        attendees = attendees if isinstance(attendees, list) else [attendees]
        out.append(
            CalendarEvent(
                id=f"{uid}@{start:%Y%m%dT%H%M%SZ}" if uid in repeating else uid,
                summary=str(event.get("SUMMARY", "")),
                description=str(event.get("DESCRIPTION", "")),
                start=start,
                end=end,
                organizer=_address(event["ORGANIZER"]) if "ORGANIZER" in event else None,
                attendees=tuple(_address(a) for a in attendees),
                private=str(event.get("CLASS", "PUBLIC")).upper() in {"PRIVATE", "CONFIDENTIAL"},
            )
        )
    return out
