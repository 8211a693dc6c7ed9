"""Contacts export (MPCBench shape): who is who (name, e-mail, title, team)."""

from __future__ import annotations

from pathlib import Path

from delegate.sources.items import Person, Shape
from delegate.sources.reading import load_json, records


class _Contact(Shape):
    name: str
    email: str
    title: str = ""
    team: str = ""
    manager: str | None = None


def read_contacts(path: Path) -> list[Person]:
    raw = load_json(path)
    return [Person(name=c.name, email=c.email.casefold(), title=c.title, team=c.team) for c in records(path, raw, "contacts", _Contact)]
