"""`delegate serve --workers N`: N server processes on this machine behind HAProxy, each meeting pinned to one
by its id, a dead one started again.

The processes share the meetings through PostgreSQL (`DELEGATE_DATABASE_URL`), as a fleet of machines does
(docs/deploy.md): HAProxy hashes `/v1/meetings/<id>` consistently, so a meeting's stream, REST calls and
reconnections reach one process, and the loss of one moves only its meetings, spread over the others. This
process only supervises: it starts the workers on loopback ports, HAProxy on the address asked for, and
starts a worker again when it dies (its meetings were already taken over by the others; the restarted one
takes new meetings as the hash sends them).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import NoReturn

import structlog

from delegate.config import Settings
from delegate.logs import configure_logging
from delegate.server.auth import Auth, check_binding, owner_key
from delegate.server.fleet.haproxy import find_haproxy, haproxy_config, max_connections

log = structlog.get_logger("delegate.workers")

NEEDS_POSTGRES = (
    "--workers needs DELEGATE_DATABASE_URL=postgresql://...: the workers share the meetings through it "
    "(SQLite is one process's)"
)
NEEDS_HAPROXY = "--workers needs HAProxy in front of the workers: install Debian's `haproxy`, or run the processes behind your own proxy (docs/deploy.md)"
RESTART_AFTER_S = 1.0
"""A worker that died is started again after this (not in a tight loop if it dies at start-up)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Worker:
    name: str
    port: int
    proc: subprocess.Popen[bytes] | None = None


class Workers:
    """The workers and HAProxy in front of them; `supervise` runs until a signal or HAProxy's end."""

    def __init__(self, host: str, port: int, count: int, settings: Settings, folder: Path, haproxy: str) -> None:
        self._host = host
        self._port = port
        self._settings = settings
        self._folder = folder
        self._haproxy_exe = haproxy
        self.workers = [Worker(f"w{i}", _free_port()) for i in range(count)]
        self._haproxy: subprocess.Popen[bytes] | None = None
        self._stopping = False

    def _env(self) -> dict[str, str]:
        # Every worker reads the same settings; the owner key is made once, before they start, so that all sign
        # and read tokens with one key.
        env = {**os.environ, "DELEGATE_ENGINE": self._settings.engine, "DELEGATE_DB_PATH": str(self._settings.db_path)}
        if self._settings.database_url:
            env["DELEGATE_DATABASE_URL"] = self._settings.database_url
        env["DELEGATE_OWNER_KEY"] = owner_key(self._settings).decode()
        return env

    def _start_worker(self, worker: Worker) -> None:
        out = (self._folder / f"{worker.name}.log").open("ab")
        worker.proc = subprocess.Popen(
            [sys.executable, "-m", "delegate", "serve", "--host", "127.0.0.1", "--port", str(worker.port)],
            env=self._env(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.close()
        log.info("worker_started", worker=worker.name, port=worker.port, pid=worker.proc.pid)

    def start(self) -> None:
        for worker in self.workers:
            self._start_worker(worker)
        config = self._folder / "haproxy.cfg"
        config.write_text(
            haproxy_config(self._host, self._port, [(w.name, w.port) for w in self.workers], max_connections())
        )
        check = subprocess.run(
            [self._haproxy_exe, "-c", "-q", "-f", str(config)], capture_output=True, text=True, check=False
        )
        if check.returncode != 0:
            raise RuntimeError(f"haproxy refused its configuration: {check.stderr.strip()[-300:]}")
        out = (self._folder / "haproxy.log").open("ab")
        # -db: in the foreground, our child, so that it stops with us.
        self._haproxy = subprocess.Popen([self._haproxy_exe, "-db", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT)
        out.close()
        log.info("workers_serving", address=f"{self._host}:{self._port}", workers=len(self.workers))

    def supervise(self) -> int:
        """Start again each worker that dies, until a signal or HAProxy ends; the exit status to end with."""
        died_at: dict[str, float] = {}
        while not self._stopping:
            assert self._haproxy is not None
            if self._haproxy.poll() is not None:
                tail = (self._folder / "haproxy.log").read_text(errors="replace").strip()[-300:]
                print(f"delegate: haproxy ended ({self._haproxy.returncode}): {tail}", file=sys.stderr)
                return 1
            for worker in self.workers:
                assert worker.proc is not None
                code = worker.proc.poll()
                if code is None:
                    continue
                now = time.monotonic()
                if worker.name not in died_at:
                    died_at[worker.name] = now
                    log.warning("worker_died", worker=worker.name, pid=worker.proc.pid, code=code)
                elif now - died_at[worker.name] >= RESTART_AFTER_S:
                    del died_at[worker.name]
                    self._start_worker(worker)
            time.sleep(0.2)
        return 0

    def stop(self, *_: object) -> None:
        self._stopping = True

    def close(self) -> None:
        procs = [p for p in (*(w.proc for w in self.workers), self._haproxy) if p is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_workers(host: str, port: int, count: int, settings: Settings) -> None:
    """`delegate serve --workers N`; every mistake found before starting ends in one line and a non-zero exit."""
    try:
        check_binding(host, Auth(settings.api_tokens, key=b""))
    except ValueError as e:
        _exit(str(e), 2)
    if not settings.database_url:
        _exit(NEEDS_POSTGRES, 2)
    exe = find_haproxy()
    if exe is None:
        _exit(NEEDS_HAPROXY, 1)
    configure_logging(settings.log_level, json=settings.log_json)
    with tempfile.TemporaryDirectory(prefix="delegate-workers-") as tmp:
        workers = Workers(host, port, count, settings, Path(tmp), exe)

        def on_signal(signum: int, frame: FrameType | None) -> None:
            workers.stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
        try:
            workers.start()
            code = workers.supervise()
        except RuntimeError as e:
            workers.close()
            _exit(str(e), 1)
        finally:
            with contextlib.suppress(Exception):
                workers.close()
    if code:
        raise SystemExit(code)


def _exit(message: str, code: int) -> NoReturn:
    print(f"delegate: {message}", file=sys.stderr)
    raise SystemExit(code)
