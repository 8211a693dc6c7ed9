"""Drive export (MPCBench shape): each document in parts of a few lines, seen by its owner and those it is shared with."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import Field

from delegate.sources.items import Shape, SourceItem, emails
from delegate.sources.reading import load_json, records

PART_CHARS = 600
"""A document is cut into parts of about this many characters at line ends, so that a part answers one thing."""


class _File(Shape):
    id: str
    name: str
    owner: str = ""
    shared_with: list[str] = Field(default_factory=list)
    modifiedTime: datetime | None = None  # noqa: N815 (the export's name)
    content: str = ""


def parts(content: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for line in (x.strip() for x in content.splitlines()):
        if not line:
            continue
        if current and sum(len(x) for x in current) + len(line) > PART_CHARS:
            out.append(" ".join(current))
            current = []
        current.append(line if line[-1] in ".!?:;" else line + ".")
    if current:
        out.append(" ".join(current))
    return out


def read_drive(path: Path) -> list[SourceItem]:
    raw = load_json(path)
    items = []
    for f in records(path, raw, "files", _File):
        audience = emails([f.owner, *f.shared_with])
        for k, part in enumerate(parts(f.content)):
            items.append(
                SourceItem(
                    source="drive",
                    id=f.id if k == 0 else f"{f.id}#{k + 1}",
                    date=f.modifiedTime,
                    title=f"Document: {f.name}",
                    text=part,
                    audience=audience,
                )
            )
    return items
