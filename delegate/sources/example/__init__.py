"""The example workplace shipped in the package (`delegate/sources/example/`, written by us: a made-up
company's mail, calendar, tickets, an .ics and an .mbox), for `delegate brief --example` and for the
console when no DELEGATE_SOURCES_DIR is set."""

from __future__ import annotations

from pathlib import Path

from delegate.resources import package_path

EXAMPLE_PRINCIPAL = "maya@kestrel.example"
"""Whose workplace it is: Maya Okafor, Harbor's firmware lead."""
EXAMPLE_EVENT = "harbor-review"
"""The meeting she is briefed for: the Harbor 2.4 release review."""


def example_folder() -> Path:
    return package_path("delegate.sources.example")
