"""Text of an action: the sentences of a turn, and a clean imperative description from a clause."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from delegate.actions.vocabulary import (
    BASE_FORM,
    CLAUSE_END,
    DASH,
    FILLERS,
    PERSON_PRONOUNS,
    PRONOUN_OBJECT,
    SENTENCE,
    SPACE,
    VAGUE,
)
from delegate.language.text import content_words, tokens

MAX_SENTENCE = 300
"""Characters: longer runs (unpunctuated speech recognition) are cut at a comma or a space, which keeps
the work per utterance linear in its length."""


def sentences(text: str) -> Iterable[tuple[int, int]]:
    """Spans of the sentences of `text`, without surrounding spaces, none longer than `MAX_SENTENCE`."""
    for m in SENTENCE.finditer(text):
        start, end = m.start(), m.end()
        while start < end:
            while start < end and text[start].isspace():
                start += 1
            stop = end
            if stop - start > MAX_SENTENCE:
                cut = text.rfind(", ", start, start + MAX_SENTENCE)
                if cut <= start:
                    cut = text.rfind(" ", start, start + MAX_SENTENCE)
                stop = cut + 1 if cut > start else start + MAX_SENTENCE
            piece_end = stop
            while piece_end > start and text[piece_end - 1].isspace():
                piece_end -= 1
            if piece_end > start:
                yield start, piece_end
            start = stop


def overlapping(pattern: re.Pattern[str], text: str) -> Iterable[re.Match[str]]:
    """Every match, overlaps included: in "I will, I will ask [PERSON9]" the first "I will" must not
    swallow the second one's "I"."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        yield m
        pos = m.start() + 1


def anaphoric(clause: str) -> bool:
    """The work is named only by a pronoun: "do it", "send it to him", "draft something"."""
    return bool(PRONOUN_OBJECT.match(clause))


def informative(description: str) -> frozenset[str]:
    """The words that say what the work is; "him"/"her" count (a person to write to or call is a detail)."""
    return (content_words(description) - VAGUE) | (PERSON_PRONOUNS & set(tokens(description)))



def dedupe_words(text: str) -> str:
    """Drop stutters: "I will, I will write to, to [PERSON7]" -> "I will write to [PERSON7]"."""

    def norm(w: str) -> str:
        return w.strip(",.-").lower()

    out: list[str] = []
    for w in text.split():
        if out and norm(w) and norm(out[-1]) == norm(w):
            out[-1] = w
            continue
        out.append(w)
        if len(out) >= 4 and [norm(x) for x in out[-2:]] == [norm(x) for x in out[-4:-2]]:
            out[-4:-2] = out[-2:]
            del out[-2:]
    return " ".join(out)


def clip_clause(text: str, max_words: int = 22) -> str:
    for pattern in (CLAUSE_END, DASH):
        m = pattern.search(text)
        if m and len(text[: m.start()].split()) >= 2:
            text = text[: m.start()]
    words = text.split()
    if len(words) > max_words:
        text = " ".join(words[:max_words])
    return text.strip(" ,;:-–—")


def mask(label: str) -> str:
    return f"[{label}]"


def imperative(clause: str, speaker: str, assignees: tuple[str, ...], addressee: str | None,
               spoken: Callable[[str], str] = mask) -> str:
    """A clean imperative sentence from the words after the trigger; "you" and "me" become the people
    meant, written by `spoken` (masks stay masks: `[PERSON5]`)."""
    text = FILLERS.sub(" ", clause)
    text = SPACE.sub(" ", text).strip()
    text = dedupe_words(text)
    text = clip_clause(text)
    by_speaker = speaker in assignees
    if by_speaker and addressee:
        text = re.sub(r"\byou\b", spoken(addressee), text, flags=re.I)
        text = re.sub(r"\byour\b", f"{spoken(addressee)}'s", text, flags=re.I)
    if not by_speaker:
        text = re.sub(r"\b(me|us)\b", spoken(speaker), text, flags=re.I)
        text = re.sub(r"\bmy\b", f"{spoken(speaker)}'s", text, flags=re.I)
    text = dedupe_words(text).rstrip(" ,;:-–—?.!")
    if not text:
        return ""
    first, _, rest = text.partition(" ")
    first = BASE_FORM.get(first.lower(), first)  # "I will regenerated it" -> "Regenerate it."
    text = f"{first} {rest}" if rest else first
    return text[0].upper() + text[1:] + "."

