"""Streaming recognition with the real tiny.en model on the committed espeak-ng fixtures."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from benchmark.asr import AUDIO_FIXTURES, Clip, load_clips, stream_clip, word_error_rate
from delegate.asr.whisper import (
    SAMPLE_RATE,
    SpeechModel,
    StreamingTranscriber,
    TranscriptEvent,
    load_speech_model,
    name_prompt,
    read_audio,
)


@pytest.fixture(scope="module")
def model() -> SpeechModel:
    return load_speech_model()


@pytest.fixture(scope="module")
def clips() -> dict[str, Clip]:
    return {c.name: c for c in load_clips(AUDIO_FIXTURES)}


@pytest.fixture(scope="module")
def runs(model, clips):
    """Every clip streamed once in 100 ms chunks with names biasing on, shared by the tests below."""
    return {
        name: stream_clip(clip, StreamingTranscriber(model, names=clip.attendees), chunk_ms=100)
        for name, clip in clips.items()
    }


def feed_all(transcriber: StreamingTranscriber, pcm: bytes, chunk: int) -> list[TranscriptEvent]:
    events = []
    for i in range(0, len(pcm), chunk):
        events.extend(transcriber.feed(pcm[i : i + chunk]))
    return events + transcriber.flush()


def finals(events: list[TranscriptEvent]) -> list[str]:
    return [e.text for e in events if e.final]


def test_word_error_rate_on_fixtures_is_at_most_15_percent(runs):
    assert word_error_rate([(r.clip.text, r.text) for r in runs.values()]) <= 0.15


def test_one_final_per_speaker_turn_with_its_timing(runs):
    for run in runs.values():
        assert len(run.finals) == len(run.clip.segments), run.clip.name
        for event, segment in zip(run.finals, run.clip.segments, strict=True):
            assert abs(event.start - segment.start) < 0.3
            assert abs(event.end - segment.end) < 0.3


def test_partials_come_while_speaking_and_finals_soon_after(runs):
    run = runs["standup"]
    assert run.partials >= len(run.clip.segments)
    # Wall-clock latency is a figure of `python -m benchmark.asr` (it depends on the machine's load); what
    # the code decides is how much audio past a turn's end it waits for: the silence cut and a chunk or two.
    assert run.audio_waits_s and max(run.audio_waits_s) < 1.5


def test_name_cue_is_recognized_with_names_biasing(runs):
    cue = runs["name_cue"].finals[-1].text
    assert "Sirui" in cue
    assert "data collection" in cue


def test_names_biasing_is_what_recognizes_the_name(model, clips):
    """Without the attendee list tiny.en hears a common word ("Sorry", "Siri") instead of the name."""
    clip = clips["name_cue"]
    run = stream_clip(clip, StreamingTranscriber(model), chunk_ms=100)
    assert "Sirui" not in run.text


def test_odd_byte_counts_give_the_same_finals(model, clips, runs):
    pcm = read_audio(clips["name_cue"].path)
    events = feed_all(StreamingTranscriber(model, names=clips["name_cue"].attendees), pcm, chunk=333)
    assert finals(events) == [e.text for e in runs["name_cue"].finals]


@pytest.mark.parametrize("rate", [8_000, 48_000])
def test_other_sample_rates_are_resampled(model, clips, rate):
    from faster_whisper.audio import decode_audio

    clip = clips["name_cue"]
    audio = decode_audio(str(clip.path), sampling_rate=rate)
    pcm = (audio * 32767).astype("<i2").tobytes()
    events = feed_all(
        StreamingTranscriber(model, sample_rate=rate, names=clip.attendees), pcm, chunk=rate // 10 * 2
    )
    texts = finals(events)
    assert len(texts) == 2
    assert "update" in texts[1] and "collection" in texts[1]
    if rate > SAMPLE_RATE:
        # At 8 kHz the name's fricatives are gone: telephone-band audio loses it even with biasing.
        assert "Sirui" in texts[1]
    assert events[-1].end == pytest.approx(clip.segments[-1].end, abs=0.3)


def test_minutes_of_silence_emit_nothing_and_keep_no_audio(model):
    rng = np.random.default_rng(0)
    transcriber = StreamingTranscriber(model)
    events = []
    for _ in range(3 * 60 * 10):  # three minutes of a faint noise floor, 100 ms at a time
        chunk = (rng.normal(0, 30, SAMPLE_RATE // 10)).astype("<i2").tobytes()
        events.extend(transcriber.feed(chunk))
    events.extend(transcriber.flush())
    assert events == []
    assert len(transcriber._audio) < SAMPLE_RATE


def test_clipped_noise_does_not_crash_or_make_up_speech(model):
    rng = np.random.default_rng(1)
    noise = np.clip(rng.normal(0, 30_000, SAMPLE_RATE * 10), -32768, 32767).astype("<i2").tobytes()
    events = feed_all(StreamingTranscriber(model), noise, chunk=SAMPLE_RATE // 5)
    assert all(isinstance(e, TranscriptEvent) for e in events)
    assert finals(events) == []


def test_empty_and_one_byte_frames_are_harmless(model):
    transcriber = StreamingTranscriber(model)
    assert transcriber.feed(b"") == []
    assert transcriber.feed(b"\x01") == []
    assert transcriber.flush() == []


def test_unusable_sample_rate_is_refused(model):
    with pytest.raises(ValueError, match="sample rate"):
        StreamingTranscriber(model, sample_rate=100)


def test_afeed_runs_off_the_event_loop(model, clips, runs):
    async def stream() -> list[TranscriptEvent]:
        transcriber = StreamingTranscriber(model, names=clips["name_cue"].attendees)
        pcm = read_audio(clips["name_cue"].path)
        events = []
        for i in range(0, len(pcm), 3200):
            events.extend(await transcriber.afeed(pcm[i : i + 3200]))
        return events + await transcriber.aflush()

    assert finals(asyncio.run(stream())) == [e.text for e in runs["name_cue"].finals]


def test_name_prompt_lists_each_name_once():
    assert name_prompt(["Sirui Zhao", "sirui zhao", " Peter ", "", "Sirui"]) == "Sirui Zhao, Peter, Sirui"
    assert name_prompt([]) is None
