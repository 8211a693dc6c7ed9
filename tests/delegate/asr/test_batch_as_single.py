"""A batched final decodes what it would alone: the real tiny.en model on the fixtures and real speech turns."""

from __future__ import annotations

import threading
from concurrent.futures import wait

import numpy as np
import pytest

from benchmark.asr import AUDIO_FIXTURES, REAL_SPEECH, batched_against_single, load_clips
from delegate.asr.base import FRAME_GRID, encoder_frames
from delegate.asr.decode_queue import DecodeQueue
from delegate.asr.whisper import SAMPLE_RATE, SpeechModel, load_speech_model, name_prompt, read_audio


@pytest.fixture(scope="module")
def model() -> SpeechModel:
    return load_speech_model()


def test_the_encoder_length_grows_in_steps_and_always_leaves_the_padding_asked_for():
    assert all(f % 2 == 0 for f in FRAME_GRID), "the encoder's strided convolution halves the length"
    assert list(FRAME_GRID) == sorted(set(FRAME_GRID))
    for seconds in np.arange(0.1, 27.0, 0.37):
        samples = int(seconds * SAMPLE_RATE)
        frames = encoder_frames(samples, 200)
        assert frames >= samples * 100 // SAMPLE_RATE + 200
        assert frames <= 1.25 * (samples * 100 // SAMPLE_RATE + 201)  # a step costs at most a fifth more
    assert encoder_frames(29 * SAMPLE_RATE, 200) == 3000  # Whisper's window bounds it


@pytest.mark.parametrize("folder", [AUDIO_FIXTURES, REAL_SPEECH], ids=["fixtures", "real-speech"])
def test_turns_decoded_in_mixed_batches_are_as_accurate_as_decoded_alone(model, folder):
    """Batches of 8 turns of different clips, names and lengths, as finals queued together are."""
    figures = batched_against_single(model, load_clips(folder), names=True)
    assert figures.shared >= figures.turns // 2, "most turns found a partner: batching still happens"
    assert figures.batched_wer <= figures.single_wer + 0.005, figures


def test_the_queue_batches_only_finals_that_decode_alike_and_decodes_every_one(model):
    clips = load_clips(AUDIO_FIXTURES)
    turns = []
    for clip in clips:
        pcm = np.frombuffer(read_audio(clip.path), "<i2").astype(np.float32) / 32768
        for s in clip.segments:
            lo, hi = int((s.start - 0.2) * SAMPLE_RATE), int((s.end + 0.2) * SAMPLE_RATE)
            turns.append((pcm[max(0, lo) : hi], name_prompt(clip.attendees)))
    calls: list[list[object]] = []
    decode = model.transcribe_batch
    gate = threading.Event()

    def recorded(items, **options):
        gate.wait(30)  # the first call holds the worker until every final is queued
        calls.append([model.batch_key(len(a), h) for a, h in items])
        return decode(items, **options)

    model.transcribe_batch = recorded  # type: ignore[method-assign]
    try:
        queue = DecodeQueue(model)
        finals = [queue.final(f"s{i}", audio, names) for i, (audio, names) in enumerate(turns)]
        gate.set()
        wait(finals, timeout=120)
    finally:
        del model.transcribe_batch
    assert all(f.result() for f in finals), "every final is decoded"
    assert all(len(set(keys)) == 1 for keys in calls), calls
    assert any(len(keys) > 1 for keys in calls), "finals of one key share a call"
    assert sum(len(keys) for keys in calls) == len(turns)
