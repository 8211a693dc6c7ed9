"""End of turn: smart-turn v3.2 (the real ONNX model from the pipecat-ai wheel) and the real tiny.en
recogniser on real recorded speech, with pauses inserted as benchmark.pauses does."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from benchmark.asr import REAL_SPEECH, load_clips
from benchmark.pauses.turns import PausedTurn, paused_turns, stream_turn
from delegate.asr.turn_end import sounds_finished

pytest.importorskip("pipecat")
from delegate.asr.turn_end import load_smart_turn  # noqa: E402
from delegate.asr.whisper import SpeechModel, StreamingTranscriber, load_speech_model, read_audio  # noqa: E402


@pytest.fixture(scope="module")
def model() -> SpeechModel:
    return load_speech_model()


@pytest.fixture(scope="module")
def harvard(model) -> dict[tuple[str, float], PausedTurn]:
    """Harvard list 72 sentences, each alone (pause 0) and with 1.2 s of room tone after its middle word."""
    turns = paused_turns(REAL_SPEECH, model, [0.0, 1.2])
    return {(t.text, t.pause_s): t for t in turns if t.clip == "harvard_list72"}


@pytest.mark.parametrize(
    ("heard", "finished"),
    [
        ("She saw a cat.", True),
        ("Can you send it by Friday?", True),
        ("the grass and bushes,", False),
        ("I need the...", False),
        ("a pink shell was f-", False),
        ("5 0 1 3", False),
        ("and then we go to the.", False),
        ("", False),
    ],
)
def test_words_end_a_turn_only_as_a_sentence_ends(heard: str, finished: bool) -> None:
    assert sounds_finished(heard) is finished


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


def test_a_finished_sentence_is_cut_sooner_than_the_silence_rule_would(model, harvard) -> None:
    turn = harvard[("A gold ring will please most any girl.", 0.0)]
    by_silence = stream_turn(turn, model, None, silence_s=0.5, turn_wait_s=1.5)
    by_model = stream_turn(turn, model, load_smart_turn(), silence_s=0.5, turn_wait_s=1.5)
    for outcome in (by_silence, by_model):
        assert not outcome.false_end and "gold ring" in outcome.text.lower(), outcome
    # Audio streamed past the end of the speech before its final came (the cut, not the CPU's speed).
    assert by_model.wait_s is not None and by_silence.wait_s is not None
    assert by_model.wait_s <= by_silence.wait_s - 0.1, (by_model.wait_s, by_silence.wait_s)


def test_a_pause_after_words_that_go_on_holds_the_turn_open_where_silence_cuts_it(model, harvard) -> None:
    turn = harvard[("A pink shell was found on the sandy beach.", 1.2)]
    by_silence = stream_turn(turn, model, None, silence_s=0.5, turn_wait_s=1.5)
    by_model = stream_turn(turn, model, load_smart_turn(), silence_s=0.5, turn_wait_s=1.5)
    assert by_silence.false_end, by_silence
    assert not by_model.false_end, by_model
    assert "sandy beach" in by_model.text.lower() and "pink shell" in by_model.text.lower(), by_model.text


def test_the_live_path_ends_a_finished_turn_early_off_the_event_loop(model, harvard) -> None:
    turn = harvard[("Small children came to see him.", 0.0)]
    pcm = (np.clip(turn.audio, -1.0, 32767 / 32768) * 32768).astype("<i2").tobytes()

    async def stream() -> list[tuple[float, str]]:
        transcriber = StreamingTranscriber(model, turn_end=load_smart_turn())
        finals = []
        for offset in range(0, len(pcm), 3200):
            events = await transcriber.afeed(pcm[offset : offset + 3200])
            finals += [((offset + 3200) / 32000, e.text) for e in events if e.final]
        return finals + [(len(pcm) / 32000, e.text) for e in await transcriber.aflush() if e.final]

    finals = asyncio.run(stream())
    assert len(finals) == 1 and "children" in finals[0][1].lower(), finals
    assert finals[0][0] - turn.end_s < 0.5, finals  # before the silence rule's 0.5 s of silence had streamed
