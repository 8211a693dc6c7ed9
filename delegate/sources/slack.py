"""Slack export (MPCBench shape): messages of public channels are seen by the organisation; DMs and private channels are private."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from delegate.sources.items import Person, Shape, SourceError, SourceItem, emails
from delegate.sources.reading import load_json, records


class _User(Shape):
    id: str
    name: str
    email: str = ""


class _Channel(Shape):
    id: str
    name: str
    type: Literal["public", "private", "dm"] = "public"
    members: list[str] = Field(default_factory=list)


class _Message(Shape):
    id: str
    channel: str
    user: str
    ts: datetime
    text: str
    thread_ts: str | None = None


def read_slack(path: Path) -> tuple[list[SourceItem], list[Person]]:
    raw = load_json(path)
    users = {u.id: u for u in records(path, raw, "users", _User)}
    channels = {c.id: c for c in records(path, raw, "channels", _Channel)}
    items = []
    for k, m in enumerate(records(path, raw, "messages", _Message)):
        channel = channels.get(m.channel)
        if channel is None:
            raise SourceError(f"{path}: messages[{k}] ({m.id}): channel {m.channel!r} is not in 'channels'")
        author = users[m.user].name if m.user in users else m.user
        others = [users[u].name for u in channel.members if u in users and u != m.user]
        if channel.type == "dm":
            where, why = f"direct message between {author} and {', '.join(others)}", "a direct message"
        elif channel.type == "private":
            where, why = f"#{channel.name}", f"posted in the private channel #{channel.name}"
        else:
            where, why = f"#{channel.name}", None
        members = emails([users[u].email for u in channel.members if u in users])
        items.append(
            SourceItem(
                source="slack",
                id=m.id,
                date=m.ts,
                title=f"Slack {where}, {author}",
                text=m.text,
                audience=None if channel.type == "public" else members,
                private_reason=why,
            )
        )
    people = [Person(name=u.name, email=u.email) for u in users.values() if u.email]
    return items, people
