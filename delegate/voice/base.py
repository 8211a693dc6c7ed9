"""The text-to-speech seam: one sentence in, 16-bit little-endian mono PCM out."""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, ConfigDict

SAMPLE_WIDTH = 2  # bytes per sample: 16-bit PCM

# A sentence ends at . ! or ? followed by space; the engine gets one sentence at a time so the first one
# can be on its way while the next is synthesised.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Synthesizer(Protocol):
    """A loaded voice. `synthesize` is blocking and may be slow: call it off the event loop."""

    name: str
    sample_rate: int

    def synthesize(self, sentence: str) -> bytes:
        """One sentence as 16-bit little-endian mono PCM at `sample_rate`."""
        ...


class SpokenSentence(BaseModel):
    """One sentence of a reply and its audio."""

    model_config = ConfigDict(frozen=True)

    text: str
    pcm: bytes
    sample_rate: int

    @property
    def samples(self) -> int:
        return len(self.pcm) // SAMPLE_WIDTH

    @property
    def seconds(self) -> float:
        return self.samples / self.sample_rate


def split_sentences(text: str) -> list[str]:
    """The sentences of a reply, in order, none empty."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
