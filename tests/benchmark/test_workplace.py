"""`python -m benchmark.workplace` on the workplace-dev scenario (skipped without ../shared)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# ../shared beside the repository, or two levels up from a worktree.
DEV = next(
    (p for p in (ROOT / ".." / "shared" / "benchmark" / "workplace-dev", ROOT / ".." / ".." / "shared" / "benchmark" / "workplace-dev") if p.is_dir()),
    ROOT / ".." / "shared" / "benchmark" / "workplace-dev",
)


@pytest.mark.skipif(not (DEV / "scenario.json").is_file(), reason="the workplace-dev scenario is not here")
def test_workplace_benchmark_writes_its_report_and_never_says_a_private_phrase(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "benchmark.workplace", "--scenario", str(DEV), "--out", str(tmp_path)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    lines = [json.loads(x) for x in (tmp_path / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 17 and all({"id", "kind", "spoke", "response"} <= set(x) for x in lines)
    assert report["private"]["phrases_spoken"] == 0
    assert report["brief"]["private_listed_in_brief_as_shareable"] == []
    assert report["sourced"]["cases"] == 11 and report["sourced"]["response_rate"] is not None
    # Every spoken reply is checked, and what the check found is the report's count.
    spoken = [x for x in lines if x["spoke"]]
    assert report["speakable"]["replies"] == len(spoken)
    assert report["speakable"]["with_defect"] == sum(bool(x["speakable_defects"]) for x in spoken) == 0
    unanswerable = [x for x in lines if x["kind"] == "unanswerable"]
    # An unanswerable question is never answered with something made up: held when the delegate takes it up. (At the
    # `balanced` level an implicit one may be left to others: silence, which the report counts apart.)
    assert unanswerable and all(x["holding_line"] for x in unanswerable if x["spoke"])
    assert any(x["holding_line"] for x in unanswerable)


def test_a_folder_that_is_not_a_scenario_is_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "benchmark.workplace", "--scenario", str(tmp_path), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "no scenario.json" in run.stderr and "Traceback" not in run.stderr
