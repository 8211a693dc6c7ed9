"""Whether a source item may be said in a given meeting, and why not: private unless shown shareable.

An item is shareable in a meeting only when nothing marks it private and someone else in that meeting
could already see it: a public channel, an issue, or a mail, document or event that reached at least one
other attendee. A direct message, a private channel, a private event, anything marked confidential, and
a mail, document or event no other attendee saw are private; the delegate may reason with them, never
say them.
"""

from __future__ import annotations

import re

from delegate.sources.items import SourceItem

_CONFIDENTIAL = re.compile(
    r"\b(confidential|do not (?:share|forward|discuss)|don'?t (?:share|forward)|for your eyes only|"
    r"not to be (?:shared|forwarded|discussed)|in confidence|keep (?:this|it) between us)\b",
    re.IGNORECASE,
)

_NOT_SEEN = {
    "gmail": "a mail not sent to anyone else in this meeting",
    "drive": "a document not shared with anyone else in this meeting",
    "calendar": "an event no one else in this meeting is invited to",
    "slack": "a conversation no one else in this meeting is in",
    "jira": "an issue no one else in this meeting can see",
}


def why_private(item: SourceItem, attendees: frozenset[str], principal_email: str) -> str | None:
    """None when `item` may be said in a meeting of `attendees` (e-mail addresses); else the reason, in words."""
    if item.private_reason:
        return item.private_reason
    marked = _CONFIDENTIAL.search(item.title) or _CONFIDENTIAL.search(item.text)
    if marked:
        return f"marked private ({marked.group(0).lower()!r})"
    others = attendees - {principal_email.casefold()}
    if item.audience is not None and not (item.audience & others):
        return _NOT_SEEN[item.source]
    return None
