"""The load benchmark, bounded: a few meetings for two seconds against a real loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.load import main
from delegate.config import Settings
from testkit.live import start_server

KEYS = {"p50_ms", "p95_ms", "p99_ms", "errors", "decisions", "throughput_per_s", "server_rss_mb"}


@pytest.fixture
def meeting_file(tmp_path: Path) -> Path:
    lines = [
        ("PERSON1", "Good morning, let's start with the release."),
        ("PERSON2", "The build is green and the notes are drafted."),
        ("PERSON1", "Sirui, is the data collection on track?"),
        ("PERSON3", "Two hundred recordings are in."),
        ("PERSON1", "Great, next item is the budget."),
    ]
    meeting = {
        "format": "delegate-bench/1",
        "meeting_id": "load_test",
        "attendees": ["PERSON1", "PERSON2", "PERSON3"],
        "names": {"PERSON3": "Sirui Zhao"},
        "utterances": [{"id": i, "speaker": s, "text": t} for i, (s, t) in enumerate(lines)],
        "profiles": {
            "PERSON3": {
                "intents": ["Hear about the budget"],
                "background": [
                    {
                        "context": "if asked about data collection",
                        "information": "Two hundred recordings are in",
                    }
                ],
            }
        },
    }
    path = tmp_path / "load_test.json"
    path.write_text(json.dumps(meeting))
    return path


def test_short_run_against_a_server_it_starts(meeting_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    report = main(
        ["--meetings", "3", "--rate", "2", "--duration", "2", "--data", str(meeting_file), "--json", str(out)]
    )
    figures = json.loads(out.read_text())
    assert set(figures) >= KEYS
    assert figures["errors"] == 0, figures["error_codes"]
    # 3 meetings x 2/s x 2 s: every utterance answered, latencies ordered, memory read from the server.
    assert figures["decisions"] + figures["dropped"] == report.utterances_sent >= 9
    # How long they took is the figure the benchmark prints, not a bound: it depends on the machine's load.
    assert 0 < figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"]
    assert figures["throughput_per_s"] > 0
    assert 20 < figures["server_rss_mb"] < 4096
    # The server's own CPU over the run, read from its /metrics: spent, and divided over what was sent.
    assert figures["server_cpu_s"] > 0
    assert figures["server_cpu_ms_per_utterance"] == pytest.approx(
        1000 * figures["server_cpu_s"] / report.utterances_sent, rel=0.01, abs=0.01
    )
    assert figures["client_cpu_s"] > 0 and figures["loadavg"]


def run_against_server_with_token(meeting_file: Path, tmp_path: Path, token: str):  # noqa: ANN201 - a LoadReport
    """Two meetings for a second against a live server that accepts only the token `t0k`."""
    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="t0k", log_level="warning", voice=False))
    try:
        args = ["--meetings", "2", "--rate", "4", "--duration", "1", "--url", live.url, "--token", token]
        return main([*args, "--data", str(meeting_file)])
    finally:
        live.stop()


def test_run_against_a_given_loopback_url(meeting_file: Path, tmp_path: Path) -> None:
    report = run_against_server_with_token(meeting_file, tmp_path, "t0k")
    assert report.errors == 0 and report.decisions >= 6


def test_a_wrong_token_counts_as_errors(meeting_file: Path, tmp_path: Path) -> None:
    report = run_against_server_with_token(meeting_file, tmp_path, "nope")
    assert report.errors == 2 and report.decisions == 0


def test_remote_urls_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--url", "http://example.org:8000", "--duration", "1"])
    assert "loopback" in capsys.readouterr().err
