"""Live lookup: the principal's allowed sources searched during the meeting, for what the brief does not cover.

Built once per meeting (the same items, privacy and corrections as the brief, without its size limit):
every item embedded once, then a search is one embedding and one matrix product (about a millisecond
for a few hundred items). Private items are found too, marked as such: the delegate may learn from them
that it must not answer, never say them.
"""

from __future__ import annotations

import numpy as np

from delegate.language.similarity import EMBEDDING_WEIGHT, OVERLAP_WEIGHT, embedding, word_overlap
from delegate.language.text import content_words
from delegate.models import BackgroundItem
from delegate.sources.brief import Meeting, background_item, live_items
from delegate.sources.items import Sources


class SourceIndex:
    """The sources of one meeting, ready to search (`delegate.decide.reply.answers.Lookup`)."""

    def __init__(self, sources: Sources, meeting: Meeting, principal_email: str) -> None:
        live, why, _ = live_items(sources, meeting, principal_email)
        self.items = [background_item(i, why[i.id]) for i in live]
        texts = [f"{b.context}. {b.information}" for b in self.items]
        self._matrix = np.stack([embedding(t) for t in texts]) if texts else np.zeros((0, 256), dtype=np.float32)
        self._words = [content_words(t) for t in texts]

    def __len__(self) -> int:
        return len(self.items)

    def search(self, text: str, limit: int) -> list[BackgroundItem]:
        """The `limit` items that best match `text`, best first (private ones included, marked)."""
        words = content_words(text)
        if not self.items or not words:
            return []
        cos = np.clip(self._matrix @ embedding(text), 0.0, 1.0)
        score = [EMBEDDING_WEIGHT * float(c) + OVERLAP_WEIGHT * word_overlap(words, w) for c, w in zip(cos, self._words, strict=True)]
        best = sorted(range(len(score)), key=lambda k: -score[k])[:limit]
        return [self.items[k] for k in best if score[k] > 0]
