"""Counts in words people read: "1 utterance", "2 utterances"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the number it takes (English: singular for exactly one)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
