"""16-bit little-endian mono PCM between the delegate's rates and a service's (the voice speaks at 22 050 Hz;
services take 16 000 or 24 000)."""

from __future__ import annotations

import numpy as np

from delegate.voice.pcm import pcm_to_float


def resample(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    """`pcm` at `to_rate`, still 16-bit PCM."""
    if from_rate == to_rate or not pcm:
        return pcm
    audio = pcm_to_float(pcm[: len(pcm) // 2 * 2], from_rate, to_rate)
    return np.clip(np.rint(audio * 32768.0), -32768, 32767).astype("<i2").tobytes()
