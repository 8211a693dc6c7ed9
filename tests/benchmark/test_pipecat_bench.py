"""`python -m benchmark.pipecat` on a shipped fixture meeting: every decision the processor made in a real
pipecat pipeline is the engine's own, and what it pushed matches what it decided."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")

from benchmark.pipecat.__main__ import main  # noqa: E402

FIXTURE = Path(str(files("benchmark") / "fixtures" / "fixture_03_research_sync.json"))


def test_the_replay_through_pipecat_agrees_with_the_engine(tmp_path: Path) -> None:
    out = tmp_path / "pipecat.json"
    report = main(["--data", str(FIXTURE), "--json", str(out)])
    assert report.utterances > 100
    assert report.decisions == report.utterances
    assert report.agree == report.utterances and report.disagreements == []
    assert 0 < report.spoke < report.utterances
    pushed = report.frames_pushed
    assert pushed["TTSSpeakFrame"] == report.spoke
    assert pushed["TranscriptionFrame"] == report.utterances  # every turn passes on downstream
    # A decision message per utterance, plus action items and barge-in cancels.
    assert pushed["OutputTransportMessageUrgentFrame"] >= report.utterances + pushed["InterruptionFrame"]
    assert report.overhead_cpu_p99_ms >= report.overhead_cpu_p50_ms > 0
    assert json.loads(out.read_text())["agree"] == report.agree


def test_a_principal_not_in_the_meeting_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmark.pipecat", "--data", str(FIXTURE), "--principal", "NOBODY"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith("benchmark.pipecat: 'NOBODY' is not an attendee")
    assert "Traceback" not in done.stderr
