"""One server at a time on a SQLite audit database: an OS lock held for as long as the server runs.

Two servers on one SQLite file would each take over the other's meetings and write the same utterance
ids twice. The lock is `flock` on `<db>.lock`: the kernel drops it when the process ends however it
ends (a `kill -9` too), so no stale lock is left behind; the pid written in the file only names the
holder in the message. Several servers share one database only through PostgreSQL, which is not locked.
"""

from __future__ import annotations

import fcntl
import os
import weakref
from pathlib import Path


class DatabaseInUse(RuntimeError):
    """Another process holds the lock of this audit database."""

    def __init__(self, db_path: Path, holder: str) -> None:
        by = f" (pid {holder})" if holder else ""
        super().__init__(
            f"the audit database {db_path} is in use by another server{by}; stop it, or give this one "
            "its own --data-dir (several servers share one database only with DELEGATE_DATABASE_URL)"
        )


class DatabaseLock:
    """The lock of one SQLite audit database, taken when made; `release` (or the process's end) frees it."""

    def __init__(self, db_path: Path) -> None:
        path = Path(f"{db_path}.lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)  # like every file beside it, readable by the server alone (one made earlier too)
        # Closing the only descriptor of the open file drops its lock: on `release`, or when this object
        # is collected (a server that failed to start), or at exit.
        self._close = weakref.finalize(self, os.close, fd)
        try:
            # flock, not fcntl's POSIX locks: those are per process, and a second server in the same
            # process (as in the tests) would be let in.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            self.release()
            raise DatabaseInUse(db_path, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        self._close()
