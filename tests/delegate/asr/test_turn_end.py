"""smart-turn v3.2 (the real ONNX model from the pipecat-ai wheel) on real recorded speech."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark.asr import REAL_SPEECH, load_clips

pytest.importorskip("pipecat")
from delegate.asr.turn_end import load_smart_turn  # noqa: E402
from delegate.asr.whisper import read_audio  # noqa: E402


def test_finished_sentences_end_the_turn_and_half_sentences_mostly_do_not() -> None:
    clip = next(c for c in load_clips(REAL_SPEECH) if c.name == "harvard_list72")
    audio = np.frombuffer(read_audio(clip.path), "<i2").astype(np.float32) / 32768
    model = load_smart_turn()
    ends, halves = [], []
    for s in clip.segments:
        start, end = int(s.start * 16000), int((s.end + 0.3) * 16000)  # the pause after it, as a stream has it
        ends.append(model.complete(audio[start:end]))
        halves.append(model.complete(audio[start : start + (end - start) // 2]))
    assert sum(p > 0.5 for p in ends) >= 9, ends
    assert np.mean(halves) < np.mean(ends) - 0.3, (halves, ends)
