"""Gmail export (MPCBench shape): one item per message, seen by its sender and recipients."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import Field

from delegate.sources.items import Shape, SourceItem, emails
from delegate.sources.reading import load_json, records


class _Message(Shape):
    id: str
    sender: str = Field(alias="from")
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    date: datetime
    subject: str = ""
    body: str = ""


class _Thread(Shape):
    id: str
    subject: str = ""
    labels: list[str] = Field(default_factory=list)
    messages: list[_Message] = Field(default_factory=list)


def mail_item(message_id: str, sender: str, to: list[str], cc: list[str], date: datetime | None, subject: str, body: str) -> SourceItem:
    """A mail as a source item; shared by the Gmail JSON and the mbox readers."""
    return SourceItem(
        source="gmail",
        id=message_id,
        date=date,
        title=f"Mail from {sender}: {subject}".strip(),
        text=body.strip(),
        audience=emails([sender, *to, *cc]),
    )


def read_gmail(path: Path) -> list[SourceItem]:
    raw = load_json(path)
    return [
        mail_item(m.id, m.sender, m.to, m.cc, m.date, m.subject or t.subject, m.body)
        for t in records(path, raw, "threads", _Thread)
        for m in t.messages
    ]
