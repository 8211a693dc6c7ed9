"""`delegate listen`: a recording in, the decisions the delegate would have made live out."""

from __future__ import annotations

import io

from rich.console import Console

from benchmark.asr import AUDIO_FIXTURES
from delegate.config import Settings
from delegate.listen import run_listen
from delegate.models import Scenario, Speaking


def test_listen_answers_the_name_cue_in_a_recording():
    out = io.StringIO()
    results = run_listen(
        AUDIO_FIXTURES / "name_cue.wav",
        AUDIO_FIXTURES / "principal_sirui.json",
        settings=Settings(engine="local"),
        console=Console(file=out, width=200),
    )
    assert [u.id for u, _ in results] == [0, 1]
    greeting, cue = results
    assert not greeting[1].spoke
    assert "Sirui" in cue[0].text
    assert cue[1].spoke and cue[1].scenario is Scenario.explicit_cue
    assert "data collection" in cue[1].speak
    printed = out.getvalue()
    assert "Sirui Zhao (delegate) says" in printed
    assert "the delegate would have spoken 1 time." in printed


def test_listen_speak_writes_the_recording_with_the_reply_voiced_where_it_would_have_started(tmp_path):
    import wave

    import numpy as np

    from benchmark.intelligibility import normalise, wer
    from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio

    out_wav = tmp_path / "replies.wav"
    results = run_listen(
        AUDIO_FIXTURES / "name_cue.wav",
        AUDIO_FIXTURES / "principal_sirui.json",
        settings=Settings(engine="local"),
        console=Console(file=io.StringIO(), width=200),
        speak=out_wav,
    )
    cue, decision = results[1]
    with wave.open(str(out_wav)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, SAMPLE_RATE)
    meeting = np.frombuffer(read_audio(AUDIO_FIXTURES / "name_cue.wav"), "<i2").astype(np.int32)
    mixed = np.frombuffer(read_audio(out_wav), "<i2").astype(np.int32)
    assert len(mixed) >= len(meeting)
    # The recording is all there; the delegate's voice is added after the cue ended, not before.
    added = mixed - np.pad(meeting, (0, len(mixed) - len(meeting)))
    voiced = np.flatnonzero(np.abs(added) > 300)
    assert cue.end is not None and voiced[0] / SAMPLE_RATE > cue.end + 0.5
    # And it says the reply.
    reply = added[voiced[0] :].astype(np.float32) / 32768
    heard = load_speech_model().transcribe(reply[: 30 * SAMPLE_RATE], beam_size=5)
    assert wer([normalise(decision.speak)], [normalise(heard)]) <= 0.25, heard


def test_listen_run_as_a_command_prints_its_own_words_only():
    """Through a pipe, as a user's `delegate listen ... | tee`: no library banner, no colour codes, counts in
    words (one utterance)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "delegate", "listen", str(AUDIO_FIXTURES / "cue_named.wav"),
         "--principal", str(AUDIO_FIXTURES / "principal_sirui.json")],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # pipecat's banner (smart-turn is imported from it) stays out
    assert "\x1b[" not in done.stdout
    assert "1 utterance, the delegate would have spoken 1 time." in done.stdout


def test_listen_at_the_addressed_level_still_answers_its_name():
    out = io.StringIO()
    results = run_listen(
        AUDIO_FIXTURES / "name_cue.wav",
        AUDIO_FIXTURES / "principal_sirui.json",
        settings=Settings(engine="local"),
        console=Console(file=out, width=200),
        speaking=Speaking.addressed,
    )
    assert results[-1][1].spoke and results[-1][1].scenario is Scenario.explicit_cue
    assert "(addressed speaking)" in out.getvalue()
