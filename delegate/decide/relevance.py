"""How much the talk touches each of the principal's background items and intents."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from delegate.language.similarity import EMBEDDING_WEIGHT, OVERLAP_WEIGHT, embedding, word_overlap
from delegate.language.text import content_words
from delegate.models import Profile


@dataclass(frozen=True, slots=True)
class Match:
    kind: str
    """`background` or `intent`."""
    index: int
    score: float


@dataclass(frozen=True, slots=True)
class Query:
    """Several turns taken together: their mean embedding and all their content words.

    Built from the per-utterance caches, so a query over the last turns costs no new embedding.
    """

    vector: np.ndarray
    words: frozenset[str]

    @classmethod
    def of(cls, texts: list[str]) -> Query:
        vec = np.sum([embedding(t) for t in texts], axis=0) if texts else np.zeros(1)
        norm = float(np.linalg.norm(vec))
        words = frozenset().union(*(content_words(t) for t in texts)) if texts else frozenset()
        return cls(vec / norm if norm else vec, words)


def pair_score(query: str | Query, target: str) -> float:
    """Relevance of `target` to `query` in [0, 1]: embedding cosine blended with shared content words."""
    q = query if isinstance(query, Query) else Query(embedding(query), content_words(query))
    target_words = content_words(target)
    if not q.words or not target_words:
        return 0.0
    cos = float(np.dot(q.vector, embedding(target)))
    return EMBEDDING_WEIGHT * max(0.0, min(1.0, cos)) + OVERLAP_WEIGHT * word_overlap(q.words, target_words)


@lru_cache(maxsize=1024)
def _targets(texts: tuple[str, ...]) -> tuple[np.ndarray, tuple[frozenset[str], ...]]:
    """A profile's texts as one matrix of embeddings and their content words (computed once per profile)."""
    matrix = np.stack([embedding(t) for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)
    return matrix, tuple(content_words(t) for t in texts)


def _scores(query: str | Query, texts: tuple[str, ...]) -> list[float]:
    """`pair_score(query, t)` for every t, with one matrix product."""
    q = query if isinstance(query, Query) else Query(embedding(query), content_words(query))
    if not texts or not q.words:
        return [0.0] * len(texts)
    matrix, words = _targets(texts)
    cos = np.clip(matrix @ q.vector, 0.0, 1.0)
    return [
        EMBEDDING_WEIGHT * float(c) + OVERLAP_WEIGHT * word_overlap(q.words, w) if w else 0.0
        for c, w in zip(cos, words, strict=True)
    ]


def rank_background(query: str | Query, profile: Profile, shareable_only: bool = True) -> list[Match]:
    """Background items by how well they answer `query`, best first.

    An item is scored on its `context` (when it applies) and its `information` (what it says); the
    better of the two counts, with the context weighted up since it is written as the cue for the item.
    """
    items = [(k, b) for k, b in enumerate(profile.background) if b.shareable or not shareable_only]
    contexts = _scores(query, tuple(b.context for _, b in items))
    infos = _scores(query, tuple(b.information for _, b in items))
    out = [Match("background", k, min(max(1.1 * c, i), 1.0)) for (k, _), c, i in zip(items, contexts, infos, strict=True)]
    return sorted(out, key=lambda m: m.score, reverse=True)


def rank_intents(query: str | Query, profile: Profile) -> list[Match]:
    scores = _scores(query, tuple(profile.intents))
    out = [Match("intent", k, score) for k, score in enumerate(scores)]
    return sorted(out, key=lambda m: m.score, reverse=True)


def topical(query: str | Query, profile: Profile) -> float:
    """The best match of `query` over the principal's shareable items and intents."""
    best = rank_background(query, profile)[:1] + rank_intents(query, profile)[:1]
    return max((m.score for m in best), default=0.0)


def topicals(queries: list[Query], profile: Profile) -> list[float]:
    """`topical(q, profile)` for several queries at once: one matrix product over the profile's texts."""
    items = [b for b in profile.background if b.shareable]
    texts = (*(b.context for b in items), *(b.information for b in items), *profile.intents)
    if not texts or not queries:
        return [0.0] * len(queries)
    matrix, words = _targets(texts)
    cos = np.clip(matrix @ np.stack([q.vector for q in queries]).T, 0.0, 1.0)
    n = len(items)
    out = []
    for k, q in enumerate(queries):
        if not q.words:
            out.append(0.0)
            continue
        s = [EMBEDDING_WEIGHT * float(c) + OVERLAP_WEIGHT * word_overlap(q.words, w) if w else 0.0 for c, w in zip(cos[:, k], words, strict=True)]
        background = [min(max(1.1 * s[i], s[n + i]), 1.0) for i in range(n)]
        out.append(max([*background, *s[2 * n :]], default=0.0))
    return out


def embedding_topical(vector: np.ndarray, profile: Profile) -> float:
    """The best embedding cosine of `vector` with the principal's shareable items and intents (no words)."""
    items = [b for b in profile.background if b.shareable]
    texts = (*(b.context for b in items), *(b.information for b in items), *profile.intents)
    if not texts:
        return 0.0
    return float(np.clip(_targets(texts)[0] @ vector, 0.0, 1.0).max())


def read_items(text: str, profile: Profile) -> np.ndarray:
    """Per background item (all, in order; 0 for private ones), how well it answers `text` by the sentence
    encoder: the better cosine of its information and its context, floored at 0."""
    from delegate.language.encoder import shipped as encoder

    items = profile.background
    if not items or not text.strip():
        return np.zeros(len(items))
    vecs = encoder().encode([text, *(b.information for b in items), *(b.context or b.information for b in items)])
    n = len(items)
    cos = np.maximum(vecs[1 : n + 1] @ vecs[0], vecs[n + 1 :] @ vecs[0])
    shareable = np.asarray([b.shareable for b in items])
    return np.where(shareable, np.clip(cos, 0.0, 1.0), 0.0)
