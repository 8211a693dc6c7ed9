"""A later fact corrects an earlier one: which older items a newer item on the same subject replaces.

Two signs, both readable in any organisation's sources: a newer item that says it changes something
("moved", "slipped", "instead", "no longer", ...) and is about the same thing as an older one (close in
meaning, sharing their rare terms such as an issue key or a product name); or a newer version of the same
document ("Test Report v2" after "Test Report v1").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from delegate.language.similarity import embedding
from delegate.language.text import content_words
from delegate.sources.items import SourceItem

SAME_SUBJECT = 0.5
"""Embedding cosine from which two items are about the same thing."""
SHARED_WORDS = 0.5
"""...and the share of the smaller item's content words they share."""

_CHANGE = re.compile(
    r"\b(moved?|moving|slipp(?:ed|ing)|slips?|push(?:ed)? (?:back|out)|postponed?|reschedul\w+|delay(?:ed|s)?|"
    r"changed?|instead|no longer|now (?:is|are|on|at|from)|revised|updated?|correction|corrected|"
    r"replac(?:es|ed)|supersed\w+|not .{0,20} any ?more|rather than|new date|latest)\b",
    re.IGNORECASE,
)
_VERSION = re.compile(r"\bv(?:ersion)?\s*\d+(?:\.\d+)*\b|\([^)]*\)|\bdraft\b|\bfinal\b", re.IGNORECASE)


def says_change(text: str) -> bool:
    return bool(_CHANGE.search(text))


def document_key(title: str) -> str:
    """A document's name without its version ("Test Report v2 (RC3)" and "Test Report v1 (RC1)" share it)."""
    return " ".join(_VERSION.sub(" ", title).casefold().split())


def superseded(items: Sequence[SourceItem]) -> dict[str, str]:
    """Older item id -> the id of the newer item that corrects it. Give only items that may be said: a
    correction the meeting may not hear must not silence the fact it corrects."""
    dated = [i for i in items if i.date is not None]
    dated.sort(key=lambda i: i.date)  # type: ignore[arg-type,return-value]
    out: dict[str, str] = {}
    versions: dict[str, list[SourceItem]] = {}
    for item in dated:
        if item.source == "drive":
            versions.setdefault(document_key(item.title), []).append(item)
    for parts in versions.values():
        newest = parts[-1]
        out.update({p.id: newest.id.partition("#")[0] for p in parts if p.title != newest.title})
    if not dated:
        return out
    matrix = np.stack([embedding(i.text) for i in dated])
    words = [content_words(i.text) for i in dated]
    cos = matrix @ matrix.T
    for new in range(len(dated)):
        if dated[new].id in out or not says_change(dated[new].text):
            continue
        for old in range(new):
            if dated[old].id in out or dated[old].date == dated[new].date or dated[old].source == "calendar":
                continue
            shared = len(words[old] & words[new]) / max(min(len(words[old]), len(words[new])), 1)
            if cos[old, new] >= SAME_SUBJECT and shared >= SHARED_WORDS:
                out[dated[old].id] = dated[new].id
    return out
