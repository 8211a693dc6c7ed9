"""What the append-only audit log keeps of text the principal typed (questions, edits, comments) and of answers.

The log is kept for good and downloaded by whoever reviews the meeting, so nothing the principal marked private
goes into it: a typed text the privacy guard would not let leave, or an answer drawn on the private notes, is
recorded as a placeholder that says why. The principal still gets their answer; only the record is redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from delegate import guard
from delegate.ask.base import Answer
from delegate.models import Profile

TYPED_WITHHELD = "(not recorded: it touches the principal's private notes)"
ANSWER_WITHHELD = "(not recorded: the answer repeats the principal's private notes)"


def typed(text: str, principal: Profile, public_texts: Sequence[str]) -> str:
    """`text` as the log may keep it: as typed, or the placeholder when it gives away a private item."""
    return guard.safe_text(text, principal, public_texts, withheld=TYPED_WITHHELD)


def answer_record(answer: Answer, principal: Profile, public_texts: Sequence[str]) -> dict[str, Any]:
    """The audit record of an answer: its question redacted as typed text, its text when it drew on a private
    item or gives one away, its latency rounded (a float's digits are no text to search for secrets in)."""
    record = answer.model_dump(mode="json")
    record["question"] = typed(answer.question, principal, public_texts)
    used_private = any(not principal.background[i].shareable for i in answer.background_items)
    if used_private or not guard.check(answer.text, principal, public_texts).allowed:
        record["text"] = ANSWER_WITHHELD
    record["latency_ms"] = round(answer.latency_ms, 2)
    return record
