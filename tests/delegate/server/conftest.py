"""Fixtures: real uvicorn servers on 127.0.0.1, each with its own SQLite audit file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from delegate.config import Settings
from testkit.live import LiveServer, start_server


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start a server with settings overrides; every server started is stopped at the end."""
    started: list[LiveServer] = []

    def make(**overrides: Any) -> LiveServer:
        values: dict[str, Any] = {
            "db_path": tmp_path / "audit.sqlite",
            "api_tokens": "",
            "log_level": "warning",
            "engine": "local",
            # Voice out has its own tests (test_voice.py): elsewhere clients get today's text frames.
            "voice": False,
        }
        values.update(overrides)
        live = start_server(Settings(**values))
        started.append(live)
        return live

    yield make
    for live in started:
        if live.thread.is_alive():
            live.stop()


@pytest.fixture
def server(make_server: Callable[..., LiveServer]) -> LiveServer:
    return make_server()
