"""Server processes for the benchmarks: `python -m delegate serve` on free loopback ports, killed on demand."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LoopbackProcess:
    """A process serving the meeting API on a loopback port (a server, or a load balancer in front of some)."""

    proc: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, meeting_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/meetings/{meeting_id}/stream"

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class ServerProcess(LoopbackProcess):
    log_path: Path

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush, nothing the process can do about it."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def wait_healthy(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_path.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"server not healthy after {timeout:.0f} s:\n{self.log_path.read_text()[-2000:]}")


CLUSTER_OWNER_KEY = "cluster-shared-owner-key"
"""Every process of the cluster shares it: a token's meetings are the same meetings everywhere."""


def start_server(env: dict[str, str], log_path: Path) -> ServerProcess:
    """Start one server with these `DELEGATE_*` settings (added to the current environment); not yet healthy."""
    port = free_port()
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "delegate", "serve", "--host", "127.0.0.1", "--port", str(port)],
        # Processes sharing a database share the owner key too: a token's meetings are the same everywhere.
        env={**os.environ, "DELEGATE_LOG_LEVEL": "warning", "DELEGATE_OWNER_KEY": CLUSTER_OWNER_KEY, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    return ServerProcess(proc, port, log_path)
