"""docs/protocol.md: its example client runs verbatim against a real server, and its sample frames are real."""

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from delegate.config import Settings
from delegate.server.protocol import ServerMessage
from testkit.live import start_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _block(lang: str, index: int = 0) -> str:
    blocks = re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) > index, f"no ```{lang} block number {index} in {DOC}"
    return blocks[index]


TYPED, RAW = 0, 1


@pytest.fixture
def server(tmp_path):
    srv = start_server(Settings(db_path=tmp_path / "audit.sqlite", log_json=False))
    yield srv
    srv.stop()


def _env(server) -> dict[str, str]:
    env = os.environ | {"DELEGATE_URL": f"ws://127.0.0.1:{server.port}"}
    env.pop("DELEGATE_TOKEN", None)
    return env


def _run_example(server, which: int) -> subprocess.CompletedProcess[str]:
    code = _block("python", which)
    return subprocess.run([sys.executable, "-c", code], env=_env(server), capture_output=True, text=True, timeout=60)


def _check_output(stdout: str) -> None:
    assert "delegate: The migration finishes on Friday." in stdout
    # The action frame arrives a beat after its utterance's decision, before the meeting ends, and goes to
    # the principal, who is an attendee whether listed or not.
    assert re.search(r"action for \['Alice Smith'\]: .*rollback drill", stdout, re.I), stdout


@pytest.mark.parametrize("which", [TYPED, RAW], ids=["typed-client", "raw-websocket"])
def test_the_example_clients_run_verbatim_twice(server, which):
    for _ in range(2):  # a second run must not hang on a burnt meeting id
        done = _run_example(server, which)
        assert done.returncode == 0, done.stderr
        _check_output(done.stdout)


def test_the_typed_example_against_a_server_with_tokens_says_so_in_one_line(tmp_path):
    srv = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="doc-token", log_json=False))
    try:
        for token, fix in ((None, "DELEGATE_TOKEN"), ("another-token", "refused this token")):
            env = _env(srv) | ({"DELEGATE_TOKEN": token} if token else {})
            done = subprocess.run([sys.executable, "-c", _block("python", TYPED)], env=env, capture_output=True, text=True, timeout=60)
            assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
            assert done.stderr.count("\n") == 1 and "unauthorized: the server" in done.stderr and fix in done.stderr, done.stderr
        done = subprocess.run([sys.executable, "-c", _block("python", TYPED)], env=_env(srv) | {"DELEGATE_TOKEN": "doc-token"},
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        _check_output(done.stdout)
    finally:
        srv.stop()


async def test_the_typed_example_resumes_when_its_connection_drops(server):
    """Between the example and the server, a relay that drops the connection (1012, as a server restart does)
    right after the first decision, then refuses the first attempt to reconnect: the example must resume."""
    drops = {"dropped": 0, "refused": 0}

    async def relay(client: ServerConnection) -> None:
        if drops["dropped"] and not drops["refused"]:
            drops["refused"] += 1
            await client.close(1013, "try again later")
            return
        async with connect(f"ws://127.0.0.1:{server.port}{client.request.path}") as upstream:
            async def down() -> None:
                async for data in upstream:
                    await client.send(data)
                    if '"decision"' in str(data) and not drops["dropped"]:
                        drops["dropped"] += 1
                        await client.close(1012, "service restart")
                        return

            async def up() -> None:
                async for data in client:
                    await upstream.send(data)

            await asyncio.wait([asyncio.create_task(down()), asyncio.create_task(up())], return_when=asyncio.FIRST_COMPLETED)

    async with serve(relay, "127.0.0.1", 0) as proxy:
        port = proxy.sockets[0].getsockname()[1]
        example = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _block("python", TYPED), env=_env(server) | {"DELEGATE_URL": f"ws://127.0.0.1:{port}"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(example.communicate(), timeout=60)
    assert example.returncode == 0, stderr.decode()
    assert drops == {"dropped": 1, "refused": 1}
    _check_output(stdout.decode())
    # Each utterance once: nothing lost, nothing sent twice.
    assert stdout.decode().count("delegate:") == 3, stdout.decode()


def test_the_sample_frames_are_what_the_server_sends():
    adapter: TypeAdapter[ServerMessage] = TypeAdapter(ServerMessage)
    frames = [line[2:] for line in _block("json").splitlines() if line.startswith("← {")]
    assert len(frames) >= 5
    for raw in frames:
        message = adapter.validate_json(raw)
        assert json.loads(message.model_dump_json()) == json.loads(raw)
