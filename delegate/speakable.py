"""Would a person say this aloud in a meeting? The defects no colleague speaks, found by rule.

An e-mail address, a URL, a ticket key (ABC-123), a field dump ("status Done, priority Minor"), a letter's
greeting or sign-off, a header in capitals, list bullets, more than `MAX_SENTENCES` sentences or more than
`MAX_WORDS` words. Every spoken reply is checked: the embedded engine phrases to pass it, an LLM's reply
that fails it falls back, and the benchmarks count what fails.
"""

from __future__ import annotations

import re

MAX_WORDS = 60
"""Principals' own turns in the ELITR meetings run about 50 words."""
MAX_SENTENCES = 4

DEFECTS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"),
    "url": re.compile(r"\bhttps?://|\bwww\.\w", re.I),
    "ticket_key": re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"),
    "field_dump": re.compile(r"\b(status|priority|assigned to|assignee|reporter|due)\s*[:=]?\s*\w+\s*[,;)]", re.I),
    "greeting": re.compile(r"^\s*(hi|hello|hey|dear|good (morning|afternoon))\b[^.!?\n]{0,30}[,!\n]", re.I | re.M),
    "sign_off": re.compile(
        r"(^|\n|[.!?]\s+)(thanks|thank you|best|cheers|regards|kind regards|best regards)\s*[,!.]?\s*(\n|$|[A-Z][a-z]+\.?\s*$)", re.I
    ),
    "caps_header": re.compile(r"\b[A-Z]{3,}(\s+[A-Z]{3,}){1,}\s*:"),
    "bullets": re.compile(r"(^|\n)\s*([-*•]|\d+[.)])\s+\S"),
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentence_count(text: str) -> int:
    return len([s for s in _SENTENCE_END.split(text.strip()) if s])


def defects(text: str, max_words: int = MAX_WORDS, max_sentences: int = MAX_SENTENCES) -> list[str]:
    """The defects of `text` as a spoken reply, by name (empty: a colleague could say it)."""
    out = [name for name, rule in DEFECTS.items() if rule.search(text)]
    if len(text.split()) > max_words:
        out.append("too_long")
    if sentence_count(text) > max_sentences:
        out.append("too_many_sentences")
    return out


def speakable(text: str) -> bool:
    return not defects(text)
