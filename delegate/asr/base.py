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
FINAL_PAD_FRAMES = 200
"""Silence after a final's speech at least (Whisper stops early on a too tight window)."""
FINAL_BEAM = 1
"""Beam of final decodes. Greedy: on the fixtures' streamed turns its WER is beam 5's (8.3%), at about
two thirds of the time, and greedy decodes batch well (CTranslate2 runs a batch's steps together)."""

_FRAMES_PER_S = 100
_MAX_FRAMES = 3000  # Whisper's 30 s window
_FRAME_STEP = 1.2


def _frame_grid() -> tuple[int, ...]:
    grid = [160]
    while grid[-1] < _MAX_FRAMES:
        grid.append(min(_MAX_FRAMES, int(grid[-1] * _FRAME_STEP) // 2 * 2))
    return tuple(grid)


FRAME_GRID = _frame_grid()
"""The encoder input lengths (log-Mel frames; even, as the encoder's strided convolution halves them)."""


def encoder_frames(samples: int, pad_frames: int) -> int:
    """Frames the encoder hears for an utterance of `samples` at 16 kHz with at least `pad_frames` of silence
    after it: the next length of FRAME_GRID.

    Whisper hears the silence after the speech too: the same words padded differently may decode differently
    ("the whole team after this call" as "the total demapton is called" with 1.4 s more). A batch pads its
    members to one length, so each utterance has its length on a grid, whether decoded alone or batched, and
    only members of equal length share a batch: a batched member decodes exactly what it would alone. The
    steps are a fifth: tiny.en's punctuation at a pause shifts with the padding either way (steps of a
    fifth: `benchmark.pauses` 56% false ends against 49% with the fixed pad; of a twentieth: 51%, but
    `benchmark.voice` lost 2 of 11 turns into the next speaker's final, and few finals shared a batch).
    `python -m benchmark.asr` reports batched against single.
    """
    needed = samples * _FRAMES_PER_S // SAMPLE_RATE + 1 + pad_frames
    return next((f for f in FRAME_GRID if f >= needed), _MAX_FRAMES)


class TranscriptEvent(BaseModel):
    """Text recognized in one stretch of the stream; `start`/`end` in seconds from its first sample."""

    model_config = ConfigDict(frozen=True)

    text: str
    start: float
    end: float
    final: bool
    names_unheard: tuple[str, ...] = ()
    """Attendees' names checked against the audio and not said (delegate.asr.names_heard): a word of the text
    that is or looks like one of them is not that person."""


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

    def batch_key(self, samples: int, hotwords: str | None) -> object:
        """Finals with equal keys decode in one batch exactly as each would alone."""
        ...
