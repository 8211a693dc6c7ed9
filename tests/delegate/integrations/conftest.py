"""Fixtures for the bridges: a real delegate server on loopback (with its voice), each with its own SQLite file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from delegate.config import Settings
from testkit.live import LiveServer, start_server


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    started: list[LiveServer] = []

    def make(**overrides: Any) -> LiveServer:
        values: dict[str, Any] = {
            "db_path": tmp_path / "audit.sqlite", "api_tokens": "", "log_level": "warning", "engine": "local",
            "voice": False,
        }
        live = start_server(Settings(**(values | overrides)))
        started.append(live)
        return live

    yield make
    for live in started:
        if live.thread.is_alive():
            live.stop()


@pytest.fixture
def voiced(make_server: Callable[..., LiveServer]) -> LiveServer:
    """A server that speaks its replies (the voice extra, in `dev`): the bridges play them through the bot."""
    pytest.importorskip("piper", reason="the voice extra is not installed")
    from delegate.voice.stream import load_synthesizer

    load_synthesizer()  # the server shares this process's voice: loaded before the meeting starts
    return make_server(voice=True)
