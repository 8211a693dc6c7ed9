"""The benchmarks' own server: `python -m delegate serve` in a subprocess on a free loopback port, with a fresh
audit database in a temporary folder, stopped afterwards."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster import ServerProcess, free_port


@dataclass(frozen=True)
class LocalServer:
    url: str
    token: str
    pid: int


@contextlib.contextmanager
def served(engine: str, voice: bool = False, env: dict[str, str] | None = None) -> Iterator[LocalServer]:
    """A healthy server (its url, bearer token and process id) until the block ends.

    Without `voice` it loads no voice and speaks to no one (figures about decisions and transcripts).
    `env`: more environment variables for the server (settings, e.g. `DELEGATE_ASR_MAX_STREAMS`).
    """
    token = secrets.token_urlsafe(16)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="delegate-load-") as tmp:
        full_env = {
            **os.environ,
            "DELEGATE_DB_PATH": str(Path(tmp) / "audit.sqlite"),
            "DELEGATE_API_TOKENS": token,
            "DELEGATE_ENGINE": engine,
            "DELEGATE_LOG_LEVEL": "warning",
            "DELEGATE_VOICE": "true" if voice else "false",
            **(env or {}),
        }
        log_path = Path(tmp) / "server.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "delegate", "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        server = ServerProcess(proc, port, log_path)
        try:
            server.wait_healthy()
            yield LocalServer(server.url, token, proc.pid)
        finally:
            server.stop()


@contextlib.contextmanager
def local_server(
    engine: str, voice: bool = False, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """As `served`, yielding (url, token) only."""
    with served(engine, voice, env) as server:
        yield server.url, server.token
