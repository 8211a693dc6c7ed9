"""Jira export (MPCBench shape): one item per issue, its status and its latest comments first."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import Field

from delegate.sources.items import Shape, SourceItem
from delegate.sources.reading import load_json, records

COMMENTS_KEPT = 3


class _Comment(Shape):
    author: str = ""
    created: datetime | None = None
    body: str


class _Issue(Shape):
    key: str
    summary: str
    description: str = ""
    status: str = ""
    assignee: str | None = None
    priority: str | None = None
    due: str | None = None
    updated: datetime | None = None
    labels: list[str] = Field(default_factory=list)
    comments: list[_Comment] = Field(default_factory=list)


def issue_text(issue: _Issue) -> str:
    facts = [f"status {issue.status}" if issue.status else "", f"priority {issue.priority}" if issue.priority else "",
             f"assigned to {issue.assignee}" if issue.assignee else "", f"due {issue.due}" if issue.due else ""]
    head = f"{issue.key} {issue.summary} ({', '.join(f for f in facts if f)})."
    # The latest comment first: a later word on an issue corrects an earlier one.
    latest = sorted(issue.comments, key=lambda c: c.created or datetime.min.replace(tzinfo=None), reverse=True)[:COMMENTS_KEPT]
    return " ".join([head, issue.description.strip(), *(c.body.strip() for c in latest)]).strip()


def read_jira(path: Path) -> list[SourceItem]:
    raw = load_json(path)
    return [
        SourceItem(source="jira", id=i.key, date=i.updated, title=f"Jira {i.key}: {i.summary}", text=issue_text(i))
        for i in records(path, raw, "issues", _Issue)
    ]
