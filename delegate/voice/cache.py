"""Pieces of speech kept by their text, so a reply that starts as expected starts without waiting for the voice.

Piper takes ~0.2 s on two cores for a short sentence, a fifth of a voice agent's whole budget; a meeting's
replies mostly begin with a sentence of the principal's notes, a holding line or an opener, all known when
the meeting starts (`compose.likely_openings`). Those are synthesised ahead, and kept here within a byte
budget, least recently used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from delegate.voice.base import Synthesizer

DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024
"""~25 minutes of 22 kHz speech: hundreds of meetings' openings."""


class CachingSynthesizer:
    """A synthesizer that remembers what it synthesised; `cached` answers from the loop without waiting."""

    def __init__(self, inner: Synthesizer, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.inner = inner
        self.name = inner.name
        self.sample_rate = inner.sample_rate
        self._budget = budget_bytes
        self._pieces: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def keeps(self) -> bool:
        return self._budget > 0

    def cached(self, piece: str) -> bytes | None:
        with self._lock:
            pcm = self._pieces.get(piece)
            if pcm is None:
                self.misses += 1
                return None
            self._pieces.move_to_end(piece)
            self.hits += 1
            return pcm

    def has(self, piece: str) -> bool:
        with self._lock:
            return piece in self._pieces

    def synthesize(self, piece: str) -> bytes:
        with self._lock:
            pcm = self._pieces.get(piece)
        if pcm is not None:
            return pcm
        pcm = self.inner.synthesize(piece)
        with self._lock:
            if piece not in self._pieces and len(pcm) <= self._budget:
                self._pieces[piece] = pcm
                self._bytes += len(pcm)
                while self._bytes > self._budget:
                    _, dropped = self._pieces.popitem(last=False)
                    self._bytes -= len(dropped)
        return pcm
