"""The fleet: two real server processes on a throwaway PostgreSQL behind a real HAProxy, one killed mid-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.load import main
from testkit.haproxy import HAProxyUnavailable, find_haproxy
from testkit.postgres import PostgresUnavailable, find_bin


@pytest.fixture
def fleet_tools() -> None:
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        pytest.skip("the fleet needs asyncpg: pip install -e '.[postgres]'")
    try:
        find_bin()
        find_haproxy()
    except (PostgresUnavailable, HAProxyUnavailable) as e:
        pytest.skip(str(e))


@pytest.mark.usefixtures("fleet_tools")
def test_a_killed_process_meetings_resume_through_haproxy_nothing_lost_or_decided_twice(tmp_path: Path) -> None:
    out = tmp_path / "fleet.json"
    main(["--fleet", "2", "--meetings", "20", "--rate", "2", "--duration", "6", "--kill-at", "3", "--json", str(out)])
    report = json.loads(out.read_text())
    load = report["load"]
    # HAProxy spread the meetings: both processes worked, and the one killed had meetings to hand over.
    assert [p["killed"] for p in report["processes"]] == [True, False]
    assert all(p["cpu_s"] > 0 for p in report["processes"])
    assert report["failovers"] >= 1 and report["failover_s_max"] is not None
    # The audit log in PostgreSQL against what every client sent and got.
    assert report["audit_consistent"], report["audit_problems"]
    assert report["utterances_lost"] == 0 and report["decisions_lost"] == 0
    assert report["duplicate_decisions"] == 0
    assert load["errors"] == 0, load["error_codes"]
    assert load["decisions"] + load["dropped"] == load["utterances_sent"] >= 20 * 2 * 5
    assert load["server_cpu_ms_per_utterance"] > 0


def test_fleet_options_are_checked_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--fleet", "1"], ["--kill-at", "2"], ["--fleet", "2", "--kill-at", "9", "--duration", "5"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("benchmark.load:") and "\n" not in err
