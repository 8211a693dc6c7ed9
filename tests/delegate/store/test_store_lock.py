"""One server per SQLite audit database: a second one refuses to start, a killed one leaves no lock behind."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from delegate.config import Settings
from delegate.store.lock import DatabaseInUse, DatabaseLock
from testkit.cluster import ServerProcess, free_port
from testkit.live import start_server

REPO = Path(__file__).resolve().parents[3]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DELEGATE_DB_PATH", "DELEGATE_DATABASE_URL")}
    return env | {"DELEGATE_VOICE": "false", "DELEGATE_LOG_LEVEL": "warning", "DELEGATE_API_TOKENS": ""}


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[Path], ServerProcess]]:
    """Start `python -m delegate serve --data-dir DIR` from this checkout; every one started is stopped at the end."""
    started: list[ServerProcess] = []

    def start(data_dir: Path) -> ServerProcess:
        port = free_port()
        log_path = tmp_path / f"server-{port}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "delegate", "serve", "--port", str(port), "--data-dir", str(data_dir)],
                cwd=REPO, env=_env(), stdout=log, stderr=subprocess.STDOUT,
            )
        server = ServerProcess(proc, port, log_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_a_second_server_on_a_data_directory_refuses_until_the_first_is_gone(
    serve: Callable[[Path], ServerProcess], tmp_path: Path
) -> None:
    data, other = tmp_path / "data", tmp_path / "other"
    first = serve(data)
    first.wait_healthy()

    second = serve(data)
    assert second.proc.wait(timeout=120) != 0
    lines = [line for line in second.log_path.read_text().splitlines() if line.strip()]
    assert len(lines) <= 3 and "Traceback" not in "\n".join(lines), lines
    assert f"the audit database {data / 'audit.sqlite'} is in use by another server (pid {first.proc.pid})" in lines[0]

    elsewhere = serve(other)  # another directory is another database
    elsewhere.wait_healthy()

    first.kill()  # SIGKILL: nothing runs on the way out, yet the lock goes with the process
    again = serve(data)
    again.wait_healthy()
    assert first.proc.poll() is not None and elsewhere.proc.poll() is None


def test_in_one_process_too_the_database_takes_one_server_at_a_time(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "audit.sqlite", api_tokens="", log_level="warning", voice=False)
    first = start_server(settings)
    try:
        with pytest.raises(DatabaseInUse):
            start_server(settings)
    finally:
        first.stop()
    start_server(settings).stop()  # a stopped server lets go of it: restarts in a test process work


def test_the_lock_file_is_readable_by_the_server_alone_like_the_files_beside_it(tmp_path: Path) -> None:
    made_before = tmp_path / "old" / "audit.sqlite.lock"
    made_before.parent.mkdir()
    made_before.write_text("123\n")
    made_before.chmod(0o644)  # as servers before issue 34 left it
    for db in (tmp_path / "new" / "audit.sqlite", made_before.parent / "audit.sqlite"):
        lock = DatabaseLock(db)
        try:
            assert stat.S_IMODE(os.stat(f"{db}.lock").st_mode) == 0o600
        finally:
            lock.release()
