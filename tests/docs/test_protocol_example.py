"""docs/protocol.md: its example client runs verbatim against a real server, and its sample frames are real."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from delegate.config import Settings
from delegate.server.protocol import ServerMessage
from testkit.live import start_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _block(lang: str) -> str:
    m = re.search(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert m, f"no ```{lang} block in {DOC}"
    return m.group(1)


@pytest.fixture
def server(tmp_path):
    srv = start_server(Settings(db_path=tmp_path / "audit.sqlite", log_json=False))
    yield srv
    srv.stop()


def _run_example(server) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"DELEGATE_URL": f"ws://127.0.0.1:{server.port}"}
    env.pop("DELEGATE_TOKEN", None)
    return subprocess.run([sys.executable, "-c", _block("python")], env=env, capture_output=True, text=True, timeout=60)


def test_the_example_client_runs_verbatim_twice(server):
    for _ in range(2):  # a second run must not hang on a burnt meeting id
        done = _run_example(server)
        assert done.returncode == 0, done.stderr
        assert "delegate: The migration finishes on Friday." in done.stdout
        # The action frame arrives between the ack and the decision, and goes to the principal,
        # who is an attendee whether listed or not.
        assert re.search(r"action for \['Alice Smith'\]: .*rollback drill", done.stdout, re.I), done.stdout


def test_the_sample_frames_are_what_the_server_sends():
    adapter: TypeAdapter[ServerMessage] = TypeAdapter(ServerMessage)
    frames = [line[2:] for line in _block("json").splitlines() if line.startswith("← {")]
    assert len(frames) >= 5
    for raw in frames:
        message = adapter.validate_json(raw)
        assert json.loads(message.model_dump_json()) == json.loads(raw)
