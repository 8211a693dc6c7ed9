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


def test_the_echo_limit_is_measured_with_the_same_load_and_the_server_compared_to_it(
    meeting_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "load.json"
    report = main(
        ["--meetings", "2", "--rate", "2", "--duration", "2", "--data", str(meeting_file), "--json", str(out), "--echo"]
    )
    figures = json.loads(out.read_text())
    # The echo answered the same frames (its CPU was read from its own /metrics), and the ratio is of the two.
    assert figures["errors"] == 0 and figures["echo_cpu_ms_per_utterance"] > 0
    assert figures["echo_ratio"] == pytest.approx(
        report.server_cpu_ms_per_utterance / figures["echo_cpu_ms_per_utterance"], abs=0.01
    )
    assert figures["echo_p99_ms"] > 0


def test_the_echo_answers_each_utterance_with_its_ack_and_a_decision_frame() -> None:
    import asyncio

    from websockets.asyncio.client import connect

    from benchmark.load.echo import echo_served

    async def talk(url: str) -> list[dict[str, object]]:
        async with connect(url.replace("http", "ws", 1) + "/v1/meetings/m1/stream") as ws:
            await ws.send(json.dumps({"type": "join", "principal": {"name": "Ana"}}))
            frames = [json.loads(await ws.recv())]
            await ws.send(json.dumps({"type": "utterance", "id": 7, "speaker": "Bo", "text": "hello"}))
            frames += [json.loads(await ws.recv()), json.loads(await ws.recv())]
            await ws.send(json.dumps({"type": "leave"}))
            return frames

    with echo_served() as echo:
        joined, ack, decision = asyncio.run(talk(echo.url))
    assert joined["type"] == "ack" and joined["of"] == "join"
    assert ack == {"type": "ack", "of": "utterance", "meeting_id": "m1", "utterance_id": 7}
    assert decision["type"] == "decision" and decision["decision"]["utterance_id"] == 7  # type: ignore[index]
