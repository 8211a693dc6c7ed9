"""How much the talk touches each of the principal's background items and intents."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from delegate.models import Profile
from delegate.similarity import EMBEDDING_WEIGHT, OVERLAP_WEIGHT, embedding, word_overlap
from delegate.text import content_words


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


def rank_background(query: str | Query, profile: Profile, shareable_only: bool = True) -> list[Match]:
    """Background items by how well they answer `query`, best first.

    An item is scored on its `context` (when it applies) and its `information` (what it says); the
    better of the two counts, with the context weighted up since it is written as the cue for the item.
    """
    out = []
    for k, item in enumerate(profile.background):
        if shareable_only and not item.shareable:
            continue
        score = max(1.1 * pair_score(query, item.context), pair_score(query, item.information))
        out.append(Match("background", k, min(score, 1.0)))
    return sorted(out, key=lambda m: m.score, reverse=True)


def rank_intents(query: str | Query, profile: Profile) -> list[Match]:
    out = [Match("intent", k, pair_score(query, intent)) for k, intent in enumerate(profile.intents)]
    return sorted(out, key=lambda m: m.score, reverse=True)


def topical(query: str | Query, profile: Profile) -> float:
    """The best match of `query` over the principal's shareable items and intents."""
    best = rank_background(query, profile)[:1] + rank_intents(query, profile)[:1]
    return max((m.score for m in best), default=0.0)
