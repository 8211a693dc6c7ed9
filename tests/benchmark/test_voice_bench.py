"""The voice benchmark, bounded: meetings stream short clips in real time to a real loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.voice import main
from delegate.asr.whisper import load_speech_model
from delegate.config import Settings
from testkit.live import start_server


def test_a_meeting_past_capacity_is_refused_and_the_other_is_heard(tmp_path: Path) -> None:
    live = start_server(
        Settings(db_path=tmp_path / "audit.sqlite", api_tokens="", log_level="warning", asr_max_streams=1, voice=False)
    )
    load_speech_model()  # the server shares this process's model
    out = tmp_path / "voice.json"
    try:
        report = main(
            ["--url", live.url, "--meetings", "2", "--clips", "name_cue", "--stagger", "0", "--no-voice", "--json", str(out)]
        )
    finally:
        live.stop()
    figures = json.loads(out.read_text())
    assert figures == json.loads(report.model_dump_json())
    assert figures["asr_max_streams"] == 1
    assert figures["streams_refused"] == 1 and figures["refused_text_ok"] == 1
    # The meeting heard: both turns of the clip got their final, each after its speech ended.
    assert figures["turns"] == 2 and figures["finals_lost"] == 0
    latency = figures["final_latency_s"]
    # No final before its turn's 0.5 s of closing silence; how much later is the figure, not a bound.
    assert latency["n"] == 2 and 0.5 <= latency["p50"] <= latency["p95"] <= latency["max"]
    assert figures["voice_to_voice_s"] is None and figures["replies_missed"] is None
    assert figures["errors"] == {}
    assert figures["server_rss_mb"] > 0 and figures["server_cpu_pct"] > 0


@pytest.mark.slow
def test_both_cues_get_a_spoken_reply_timed_from_the_end_of_their_speech(tmp_path: Path) -> None:
    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="", log_level="warning", voice=True))
    load_speech_model()
    try:
        report = main(["--url", live.url, "--meetings", "1", "--clips", "cue_named,planning,cue_implicit", "--stagger", "0"])
    finally:
        live.stop()
    assert report.cues == 2 and report.replies_missed == 0
    assert report.voice_to_voice_named_s is not None and report.voice_to_voice_named_s.n == 1
    assert report.voice_to_voice_implicit_s is not None and report.voice_to_voice_implicit_s.n == 1
    both = report.voice_to_voice_s
    assert both is not None and both.n == 2
    # The reply cannot start before the recogniser's 0.5 s of end-of-turn silence has passed (how much
    # later depends on the machine's load: the figure the benchmark prints, not a bound).
    assert 0.5 < both.p50 <= both.max  # type: ignore[operator]
    assert report.final_latency_s.n == 6 and report.errors == {}


def test_loopback_only_and_known_clips(capsys) -> None:
    import pytest

    with pytest.raises(SystemExit) as exit_:
        main(["--url", "http://192.0.2.1:8000", "--meetings", "1"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit) as exit_:
        main(["--clips", "nonesuch"])
    assert exit_.value.code == 2
    assert "--clips must name clips among name_cue" in capsys.readouterr().err
