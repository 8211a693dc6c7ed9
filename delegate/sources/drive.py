"""Drive export (MPCBench shape): each document in parts of a few lines, seen by its owner and those it is shared with."""

from __future__ import annotations

import re
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


_ITEM = re.compile(r"^([-*•]|\d{1,2}[.)])\s")
"""A line that opens a list item: never a wrapped line's continuation."""


def _lines(content: str) -> list[str]:
    """The document's lines, a line wrapped mid-sentence joined back to the line it continues (indented, or
    opening in lower case after a line with no end)."""
    out: list[str] = []
    for raw in content.splitlines():
        line = raw.strip()
        if not line:
            continue
        wrapped = not _ITEM.match(line) and (raw[:1].isspace() or line[0].islower() or line[0] in "(,")
        if out and wrapped and out[-1][-1] not in ".!?:;":
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return out


def parts(content: str) -> list[str]:
    """The document in parts of about `PART_CHARS`, one line of the document a line of its part, each ended."""
    out: list[str] = []
    current: list[str] = []
    for line in _lines(content):
        if current and sum(len(x) for x in current) + len(line) > PART_CHARS:
            out.append("\n".join(current))
            current = []
        current.append(line if line[-1] in ".!?:;" else line + ".")
    if current:
        out.append("\n".join(current))
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
