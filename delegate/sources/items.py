"""What every reader returns: source items with who could see them, calendar events, people."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

SourceKind = Literal["slack", "gmail", "calendar", "jira", "drive"]


class SourceError(ValueError):
    """A source file that cannot be read; the message names the file and the item that failed."""


class SourceItem(BaseModel):
    """One thing the principal could know: a message, a mail, an event, an issue, a part of a document."""

    model_config = ConfigDict(frozen=True)

    source: SourceKind
    id: str
    date: datetime | None = None
    title: str
    """What the item is about, in a few words (a channel and author, a subject, an issue key and summary)."""
    text: str
    audience: frozenset[str] | None = None
    """The e-mail addresses that could see it; None: everyone in the organisation (a public channel, an issue)."""
    private_reason: str | None = None
    """Why the item is private whoever attends (a direct message, a private channel, a private event)."""


class CalendarEvent(BaseModel):
    """A meeting of the principal's calendar."""

    model_config = ConfigDict(frozen=True)

    id: str
    summary: str
    description: str = ""
    start: datetime
    end: datetime | None = None
    organizer: str | None = None
    attendees: tuple[str, ...] = ()
    private: bool = False


class Person(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    email: str
    title: str = ""
    team: str = ""


class Sources(BaseModel):
    """Everything read from one principal's sources folder."""

    model_config = ConfigDict(frozen=True)

    items: tuple[SourceItem, ...] = ()
    events: tuple[CalendarEvent, ...] = ()
    people: tuple[Person, ...] = ()
    files: tuple[str, ...] = ()
    """The files read, by name."""

    def event(self, event_id: str) -> CalendarEvent | None:
        return next((e for e in self.events if e.id == event_id), None)

    def name_of(self, email: str) -> str:
        person = next((p for p in self.people if p.email.casefold() == email.casefold()), None)
        return person.name if person else email.split("@")[0].replace(".", " ").title()

    def email_of(self, name: str) -> str | None:
        person = next((p for p in self.people if p.name.casefold() == name.casefold()), None)
        return person.email if person else None


class Shape(BaseModel):
    """Base of the readers' input models: unknown fields are ignored (exports grow fields), known ones checked."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def emails(values: list[str] | tuple[str, ...]) -> frozenset[str]:
    return frozenset(v.strip().casefold() for v in values if v and v.strip())
