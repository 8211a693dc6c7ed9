"""How alike two short texts are in meaning, offline: static word embeddings blended with shared content words.

`similarity(a, b)` is a score in [0, 1]:

    0.6 * max(0, cosine(embed(a), embed(b)))  +  0.4 * overlap(a, b)

- `embed` is WordLlama's static embedding (model `l2_supercat`, 256 dimensions) of the whole text,
  loaded from the weights shipped inside the installed `wordllama` package (never downloaded).
  It sees paraphrase ("e-mail [PERSON5]" ~ "write to [PERSON5]").
- `overlap` is the share of shared content words (stemmed, stop words dropped, `[PERSON3]`-style
  masks kept) over the smaller set, with the denominator floored at 3 (or the larger set's size, if
  smaller) so that a two-word text does not match a long one on one shared word. It keeps masked names and rare terms, which embeddings blur, decisive.

Texts with no content word at all score 0 against anything. The score is symmetric.
Both parts cost microseconds; the model is loaded once per process on first use (about 0.2 s).
"""

from __future__ import annotations

import threading

import numpy as np

from delegate.language.text import content_words
from delegate.resources import package_path

EMBEDDING_WEIGHT = 0.6
OVERLAP_WEIGHT = 0.4
OVERLAP_FLOOR = 3

_lock = threading.Lock()
_model = None


def _wordllama():  # type: ignore[no-untyped-def]  # WordLlamaInference has no stubs
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from wordllama import WordLlama

                _model = WordLlama.load(cache_dir=package_path("wordllama"), disable_download=True)
    return _model


def warm_up() -> None:
    """Load the embedding model now (about 0.2 s, once per process) rather than on the first comparison."""
    _wordllama()


CACHE_SIZE = 32768
CACHED_TEXT_CHARS = 4000
"""Longer texts are embedded each time rather than kept: the cache stays bounded in bytes, not just entries."""
CACHED_LONG_TEXTS = 64
_cache: dict[str, np.ndarray] = {}
_long_cache: dict[str, np.ndarray] = {}
"""The latest few longer texts: a long turn is read by every decision that shows it."""
_ZERO = np.zeros(256, dtype=np.float32)
_ZERO.setflags(write=False)


_store_lock = threading.Lock()
"""Long turns are embedded in worker threads too: evicting and inserting must not interleave."""


def _store(text: str, vec: np.ndarray) -> None:
    vec.setflags(write=False)
    with _store_lock:
        _insert(text, vec)


def _insert(text: str, vec: np.ndarray) -> None:
    cache, size = (_cache, CACHE_SIZE) if len(text) <= CACHED_TEXT_CHARS else (_long_cache, CACHED_LONG_TEXTS)
    if len(cache) >= size:
        cache.pop(next(iter(cache)), None)  # oldest first: dicts keep insertion order
    cache[text] = vec


def embedding(text: str) -> np.ndarray:
    """The unit-length embedding of `text` (cached: texts are compared many times); zeros for blank text."""
    vec = _cache.get(text) if len(text) <= CACHED_TEXT_CHARS else _long_cache.get(text)
    if vec is None:
        if not text.strip():
            return _ZERO
        vec = _embed_one(text)
        _store(text, vec)
    return vec


def _embed_one(text: str) -> np.ndarray:
    # WordLlama's own `embed` pooled for one text, without its batching and padding (a third faster):
    # the mean of the token vectors, normalised.
    model = _wordllama()
    ids = model.tokenizer.encode(text, add_special_tokens=False).ids
    if not ids:
        return _ZERO.copy()
    table = model.embedding
    if max(ids) >= table.shape[0]:
        ids = [min(i, table.shape[0] - 1) for i in ids]
    vec = table[ids].mean(axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return (vec / norm).astype(np.float32) if norm else _ZERO.copy()


def forget(texts: list[str]) -> None:
    """Drop these texts' embeddings from the cache (benchmarks time a first embedding)."""
    for text in texts:
        _cache.pop(text, None)
        _long_cache.pop(text, None)


def overlap(a: str, b: str) -> float:
    """Shared content words over the smaller set (denominator floored, see the module docstring)."""
    return word_overlap(content_words(a), content_words(b))


def word_overlap(wa: frozenset[str], wb: frozenset[str]) -> float:
    """`overlap` on content-word sets already at hand."""
    if not wa or not wb:
        return 0.0
    floor = min(OVERLAP_FLOOR, max(len(wa), len(wb)))
    return len(wa & wb) / max(floor, min(len(wa), len(wb)))


def similarity(a: str, b: str) -> float:
    """Meaning similarity of two short texts in [0, 1] (see the module docstring for the formula)."""
    if not content_words(a) or not content_words(b):
        return 0.0
    cosine = float(np.dot(embedding(a), embedding(b)))
    return EMBEDDING_WEIGHT * max(0.0, min(1.0, cosine)) + OVERLAP_WEIGHT * overlap(a, b)
