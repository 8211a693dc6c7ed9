"""A draft brief for one meeting, built from the principal's sources: background items with provenance,
private by default, the later of two conflicting facts kept.

The draft is a `Profile` the principal reviews before the meeting (`delegate brief`, the console): each
item says where it comes from (source, item id, date) and, when it may not be said, why.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from delegate.language.similarity import embedding
from delegate.language.text import content_words
from delegate.models import BackgroundItem, Profile
from delegate.sources.items import CalendarEvent, SourceItem, Sources
from delegate.sources.privacy import why_private
from delegate.sources.supersede import superseded

MAX_ITEMS = 100
"""Background items in a brief (the server's `max_background_items` default)."""
PRIVATE_SHARE = 0.2
"""Of the brief, at most this share goes to private items: the delegate may reason with them (and the
guard knows their terms), never say them."""
MAX_CHARS = 2000
"""Per item text (the server's `max_item_chars` default)."""
RECENT_DAYS = 14.0
"""An item this many days older than the meeting weighs half as much as one from the day before."""


class Meeting(BaseModel):
    """The meeting to brief for: a calendar event, or a title, time and attendee list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(min_length=1)
    start: datetime | None = None
    description: str = ""
    attendees: tuple[str, ...] = ()
    """E-mail addresses (a name is looked up in the contacts)."""
    event_id: str | None = None

    @classmethod
    def of_event(cls, event: CalendarEvent) -> Meeting:
        people = (*event.attendees, *([event.organizer] if event.organizer else []))
        return cls(title=event.summary, start=event.start, description=event.description,
                   attendees=tuple(dict.fromkeys(people)), event_id=event.id)


class Superseded(BaseModel):
    model_config = ConfigDict(frozen=True)

    item_id: str
    by: str


class Brief(BaseModel):
    """The draft: the profile, and what was left out because a later item corrects it."""

    model_config = ConfigDict(frozen=True)

    profile: Profile
    meeting: Meeting
    superseded: list[Superseded] = Field(default_factory=list)
    considered: int = 0
    """Source items dated before the meeting (or events of any date) that were weighed."""


def _attendee_emails(meeting: Meeting, sources: Sources) -> frozenset[str]:
    out = set()
    for a in meeting.attendees:
        address = a if "@" in a else sources.email_of(a)
        if address:
            out.add(address.casefold())
    return frozenset(out)


def _before(item: SourceItem, meeting: Meeting) -> bool:
    # Booked events after the meeting still tell what is planned; messages after it did not exist yet.
    return item.source == "calendar" or meeting.start is None or item.date is None or item.date <= meeting.start


def _relevance(items: list[SourceItem], meeting: Meeting, attendees: frozenset[str]) -> np.ndarray:
    """How much each item matters for the meeting: its subject, who saw it, how recent it is."""
    topic = f"{meeting.title}. {meeting.description}"
    query = embedding(topic)
    topic_words = content_words(topic)
    scores = []
    for item in items:
        text = f"{item.title}. {item.text}"
        cos = max(0.0, float(embedding(text) @ query))
        words = content_words(text)
        shared = len(words & topic_words) / max(min(len(words), len(topic_words)), 1)
        seen = 1.0 if item.audience is None else len(item.audience & attendees) / max(len(attendees), 1)
        age = (meeting.start - item.date).total_seconds() / 86400 if meeting.start and item.date else RECENT_DAYS
        recency = 0.5 ** (max(age, 0.0) / RECENT_DAYS)
        scores.append(0.45 * cos + 0.25 * min(shared * 2, 1.0) + 0.15 * seen + 0.15 * recency)
    return np.array(scores)


def background_item(item: SourceItem, why: str | None) -> BackgroundItem:
    return BackgroundItem(
        context=item.title[:MAX_CHARS],
        information=item.text[:MAX_CHARS],
        shareable=why is None,
        source=item.source,
        item_id=item.id,
        date=item.date.isoformat() if item.date else None,
        why_private=why,
    )


def live_items(sources: Sources, meeting: Meeting, principal_email: str) -> tuple[list[SourceItem], dict[str, str | None], dict[str, str]]:
    """The items that existed before the meeting and no later item corrects; why each is private (None:
    shareable); which items were left out as corrected, and by what."""
    attendees = _attendee_emails(meeting, sources)
    pool = [i for i in sources.items if _before(i, meeting)]
    why = {i.id: why_private(i, attendees, principal_email) for i in pool}
    replaced = superseded([i for i in pool if why[i.id] is None])
    return [i for i in pool if i.id not in replaced], why, replaced


def build_brief(
    sources: Sources, meeting: Meeting, principal_email: str, principal_name: str | None = None, max_items: int = MAX_ITEMS
) -> Brief:
    """The draft brief: the items that matter most for `meeting`, private ones marked with why."""
    attendees = _attendee_emails(meeting, sources)
    live, why, replaced = live_items(sources, meeting, principal_email)
    score = _relevance(live, meeting, attendees) if live else np.zeros(0)
    order = [live[k] for k in np.argsort(-score, kind="stable")]
    private_cap = int(max_items * PRIVATE_SHARE)
    chosen_private = [i for i in order if why[i.id] is not None][:private_cap]
    chosen_public = [i for i in order if why[i.id] is None][: max_items - len(chosen_private)]
    chosen = set(id(i) for i in (*chosen_private, *chosen_public))
    # The brief reads in time order: the principal reviews it as a story.
    ordered = sorted((i for i in live if id(i) in chosen), key=lambda i: (i.date is None, i.date))
    background = [background_item(i, why[i.id]) for i in ordered]
    name = principal_name or sources.name_of(principal_email)
    first = name.split()[0] if name.split() else name
    profile = Profile(name=name, aliases=[first] if first != name else [], background=background)
    return Brief(
        profile=profile,
        meeting=meeting,
        superseded=[Superseded(item_id=k, by=v) for k, v in replaced.items()],
        considered=len(live) + len(replaced),
    )
