"""A throwaway PostgreSQL server on loopback, for the tests and the chaos benchmark: initdb, start, stop, delete.

Uses the server binaries of the machine (Debian's `postgresql` package: /usr/lib/postgresql/N/bin). Run as
root, the cluster belongs to the `postgres` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster import free_port


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_bin() -> Path:
    on_path = shutil.which("pg_ctl")
    candidates = ([Path(on_path).parent] if on_path else []) + [
        Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    ]
    for path in candidates:
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
    raise PostgresUnavailable("no PostgreSQL server binaries (initdb, pg_ctl); install Debian's `postgresql`")


@dataclass
class TempPostgres:
    root: Path
    port: int
    bin: Path
    user: str | None
    """Who runs the server (`postgres` when we are root), None: ourselves."""

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = list(args) if self.user is None else ["runuser", "-u", self.user, "--", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> None:
        data = self.root / "data"
        init = self._run(
            str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-instructions",
        )
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()[-400:]}")
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
            # Each open meeting holds one advisory lock; the shared lock table has
            # max_locks_per_transaction x max_connections slots.
            "-c max_connections=200 -c max_locks_per_transaction=256 -c shared_buffers=64MB"
        )
        started = self._run(
            str(self.bin / "pg_ctl"), "-D", str(data), "-l", str(self.root / "server.log"), "-o", options,
            "-w", "-t", "60", "start",
        )
        if started.returncode != 0:
            log = (self.root / "server.log").read_text(errors="replace")[-400:] if (self.root / "server.log").exists() else ""
            raise PostgresUnavailable(f"pg_ctl start failed: {started.stderr.strip()[-300:]} {log}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.1)
        raise PostgresUnavailable("PostgreSQL did not accept connections within 30 s")

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def temp_postgres() -> Iterator[TempPostgres]:
    """A fresh cluster on a free loopback port, deleted afterwards; PostgresUnavailable when it cannot start."""
    bin_dir = find_bin()
    user: str | None = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise PostgresUnavailable("running as root and there is no `postgres` user to run the server") from None
        user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="delegate-pg-"))
    if user is not None:
        shutil.chown(root, user=user)
    pg = TempPostgres(root=root, port=free_port(), bin=bin_dir, user=user)
    try:
        pg.start()
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
