"""benchmark.console_latency: every decision reaches the watcher, and with --browser the page draws each one."""

from __future__ import annotations

import pytest

from benchmark import console_latency
from testkit.browser import NO_BROWSER, available


def test_every_decision_reaches_the_watcher_and_the_bot_gets_the_ones_not_held() -> None:
    report = console_latency.main(["--utterances", "12", "--rate", "8", "--approval", "none"])
    # Every decision made reaches the watcher. One that waited for the encoder longer than the next utterance took
    # to come (125 ms at 8 a second, on a loaded machine) is dropped as stale by design, and says so in the log.
    assert report.missing == report.dropped and report.decisions_seen + report.dropped == 12 and report.held == 0
    assert report.decisions_seen >= 6  # most are made, even on a loaded machine
    assert report.bot_p50_ms is not None and report.watcher_p95_ms is not None
    assert report.page_missing is None  # no browser asked for


@pytest.mark.skipif(not available(), reason=NO_BROWSER)
def test_with_a_browser_the_page_draws_every_decision() -> None:
    report = console_latency.main(["--utterances", "12", "--rate", "8", "--browser"])
    assert report.page_missing == report.dropped and report.missing == report.dropped
    # Drawn after it was sent, and not before the watcher could have read it off the same stream.
    assert report.page_p50_ms is not None and report.page_p50_ms > 0
