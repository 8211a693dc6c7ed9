"""The text-to-speech seam: one sentence in, 16-bit little-endian mono PCM out."""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, ConfigDict

SAMPLE_WIDTH = 2  # bytes per sample: 16-bit PCM

# The engine gets one piece at a time, so the first can be on its way while the next is synthesised: a
# sentence, or a clause of it (after ; or : or a dash), and a long one is cut at its commas too. The first audio
# waits for the first piece only (a 20-word sentence takes Piper ~0.5 s on two cores, a clause ~0.1 s).
_PIECE_END = re.compile(r"(?<=[.!?;:—])\s+")
_COMMA = re.compile(r"(?<=,)\s+")
LONG_PIECE_WORDS = 12


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
    """The pieces of a reply to synthesise one by one, in order, none empty: its sentences and clauses,
    a piece of more than `LONG_PIECE_WORDS` words cut at its commas (into parts of 4 words or more)."""
    pieces: list[str] = []
    for piece in (p.strip() for p in _PIECE_END.split(text)):
        if not piece:
            continue
        if len(piece.split()) <= LONG_PIECE_WORDS:
            pieces.append(piece)
            continue
        part = ""
        for clause in _COMMA.split(piece):
            part = f"{part} {clause}".strip()
            if len(part.split()) >= 4:
                pieces.append(part)
                part = ""
        if part:
            pieces[-1] = f"{pieces[-1]} {part}"
    return pieces
