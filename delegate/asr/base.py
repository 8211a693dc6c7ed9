"""The speech-to-text seam: transcript events, the `Transcriber` of one stream, the `Decoder` the decode
queue drives, and the constants both sides agree on. No faster-whisper here: importing the seam costs nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

SAMPLE_RATE = 16_000
MIN_SAMPLE_RATE = 8_000
MAX_SAMPLE_RATE = 192_000

PARTIAL_PAD_FRAMES = 100
"""Partials are provisional: half the padding makes them about a quarter cheaper, for a word more or less."""
FINAL_BEAM = 1
"""Beam of final decodes. Greedy: on the fixtures' streamed turns its WER is beam 5's (8.3%), at about
two thirds of the time, and greedy decodes batch well (CTranslate2 runs a batch's steps together)."""

class TranscriptEvent(BaseModel):
    """Text recognized in one stretch of the stream; `start`/`end` in seconds from its first sample."""

    model_config = ConfigDict(frozen=True)

    text: str
    start: float
    end: float
    final: bool


class Transcriber(Protocol):
    """One audio stream in, transcript events out. `feed` may be called with any number of bytes."""

    def feed(self, pcm: bytes) -> list[TranscriptEvent]: ...

    def flush(self) -> list[TranscriptEvent]:
        """End of the stream: decode what is pending as a final."""
        ...

    async def afeed(self, pcm: bytes) -> list[TranscriptEvent]:
        """`feed` off the event loop."""
        ...

    async def aflush(self) -> list[TranscriptEvent]:
        """`flush`, then `close`."""
        ...

    def close(self) -> None:
        """Let the stream go without decoding what is pending (idempotent)."""
        ...


class Decoder(Protocol):
    """What the decode queue runs: several clips' decodes in one batched call (the loaded model)."""

    def transcribe_batch(
        self,
        items: Sequence[tuple[np.ndarray, str | None]],
        *,
        beam_size: int,
        pad_frames: int = ...,
        check_names: bool | Sequence[bool] = ...,
    ) -> list[str]: ...
