"""Word-level text helpers shared by names, cues, compose and the judge: tokens, content words, masks."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

_WORD = re.compile(r"\[[A-Z]+\d*\]|[^\W_]+(?:['’][^\W_]+)?")
_MARKUP = re.compile(r"<[^>]*>")
MASK = re.compile(r"\[([A-Z]+\d*)\]")

T = TypeVar("T")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
    few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then there there's these they
    they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've
    were weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't
    you you'd you'll you're you've your yours yourself yourselves yes yeah yep ok okay uh um eh ehm hmm mm mhm
    well just like really actually so right know think mean kind sort thing things going get got gonna wanna will
    would shall may might must also maybe quite bit lot much many one two now still even already always never
    say said says tell told see look make made want need let us oh ah hm yes-""".split()
)


CACHED_TEXT_CHARS = 4000
"""Texts up to this long are cached by the thousand (utterances recur in every window)."""
CACHED_LONG_TEXTS = 64
"""Longer texts are cached only this many at a time (the latest turns, read again by every decision
that shows them), so the caches stay bounded in bytes and not only in entries."""


def cached_when_short(fn: Callable[[str], T]) -> Callable[[str], T]:
    cached = lru_cache(maxsize=16384)(fn)
    cached_long = lru_cache(maxsize=CACHED_LONG_TEXTS)(fn)

    @wraps(fn)
    def call(text: str) -> T:
        return cached(text) if len(text) <= CACHED_TEXT_CHARS else cached_long(text)

    def cache_clear() -> None:
        cached.cache_clear()
        cached_long.cache_clear()

    call.cache_clear = cache_clear  # type: ignore[attr-defined]
    return call


def clean(text: str) -> str:
    """Drop transcript markup such as `<unintelligible/>`."""
    return _MARKUP.sub(" ", text)


@cached_when_short
def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased word tokens; `[PERSON3]`-style masks stay whole tokens (upper-case)."""
    out = []
    for t in _WORD.findall(clean(text)):
        out.append(t if t.startswith("[") else t.lower().replace("’", "'"))
    return tuple(out)


def stem(word: str) -> str:
    """A light suffix stripper: enough to match `recordings` with `recording`, `tested` with `test`."""
    w = word
    for suffix, min_len in (("ies", 5), ("ing", 6), ("ed", 5), ("es", 5), ("s", 4), ("ly", 6)):
        if w.endswith(suffix) and len(w) >= min_len:
            w = w[: -len(suffix)]
            if suffix == "ies":
                w += "y"
            break
    return w


@cached_when_short
def content_words(text: str) -> frozenset[str]:
    """Stemmed tokens that carry meaning: no stop words, no one-letter tokens."""
    return frozenset(stem(t) for t in tokens(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit()))


def word_count(text: str) -> int:
    return len(tokens(text))
