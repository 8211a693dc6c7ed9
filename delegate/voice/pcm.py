"""16-bit little-endian PCM to float audio at another rate: to mix the voice into a recording, or to hear it
back with the recogniser (16 kHz)."""

from __future__ import annotations

import numpy as np
from scipy.signal import resample_poly


def pcm_to_float(pcm: bytes, sample_rate: int, to_rate: int) -> np.ndarray:
    """`pcm` (16-bit, mono, `sample_rate`) as float32 in [-1, 1) at `to_rate`."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if sample_rate == to_rate:
        return audio
    g = np.gcd(to_rate, sample_rate)
    return resample_poly(audio, to_rate // g, sample_rate // g).astype(np.float32)
