"""The embedded store: audit log and meeting registry in one SQLite file (WAL), for one server process."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from delegate.store.base import AuditEvent, MeetingRecord, encode_payload, encode_record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    meeting_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    utterance_id INTEGER,
    payload TEXT NOT NULL,
    ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_meeting ON events (meeting_id, seq);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TABLE IF NOT EXISTS meetings (
    meeting_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""

_INSERT = "INSERT INTO events (meeting_id, kind, utterance_id, payload, ts) VALUES (?, ?, ?, ?, ?)"
_SELECT = (
    "SELECT seq, meeting_id, kind, utterance_id, payload, ts FROM events WHERE meeting_id = ? ORDER BY seq"
)
_MEETING_IDS = (
    "SELECT meeting_id FROM events WHERE meeting_id >= ? AND meeting_id < ? "
    "GROUP BY meeting_id ORDER BY MIN(seq) DESC LIMIT ? OFFSET ?"
)
_REGISTER = "INSERT OR REPLACE INTO meetings (meeting_id, owner, spec, created_at) VALUES (?, ?, ?, ?)"
_UNREGISTER = "DELETE FROM meetings WHERE meeting_id = ?"
_STALE = """
SELECT m.meeting_id FROM meetings m
WHERE coalesce((SELECT max(ts) FROM events e WHERE e.meeting_id = m.meeting_id), m.created_at) < ?
"""
CHECKPOINT_S = 1.0
"""How often the checkpointer copies the write-ahead log into the database file (off the event loop)."""


@dataclass(frozen=True, slots=True)
class _Write:
    """One statement for the writer thread, and where its result goes."""

    sql: str
    params: tuple[Any, ...]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[int]


def _create_private(path: Path) -> None:
    # The log holds what was said in meetings: readable by the service's user only (WAL and shared-memory
    # files take the database file's permissions).
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode survives a crash of the process (what a server restart is); only a power
    # loss can take back the last commits, and FULL would pay an fsync per batch for that.
    conn.execute("PRAGMA synchronous=NORMAL")
    # A meeting's registry row holds the whole brief, private notes included, while it is open (for takeover);
    # deleted, its bytes are overwritten rather than left in the file's free pages.
    conn.execute("PRAGMA secure_delete=ON")
    conn.executescript(_SCHEMA)
    # Commits only append to the log; the checkpointer thread copies it into the file (the one step that
    # waits on the disk), so a commit made on the event loop never does.
    conn.execute("PRAGMA wal_autocheckpoint=0")
    return conn


def _row_event(row: tuple[Any, ...]) -> AuditEvent:
    seq, meeting_id, kind, utterance_id, payload, ts = row
    return AuditEvent(
        seq=seq, meeting_id=meeting_id, kind=kind, utterance_id=utterance_id, payload=json.loads(payload), ts=ts
    )


def read_events(path: Path, meeting_id: str) -> list[AuditEvent]:
    """Read one meeting's events straight from the file (for the CLI and for tests)."""
    conn = _connect(path, readonly=True)
    try:
        return [_row_event(r) for r in conn.execute(_SELECT, (meeting_id,))]
    finally:
        conn.close()


class SQLiteStore:
    """The writes of one turn of the event loop are committed together, in one transaction, when the turn
    ends; a checkpointer thread copies the log into the file, so the event loop never waits on the disk.

    `append` resolves only after the commit: callers tell the client after the record is durable. A batch
    that fails is retried one write at a time, so a poison event fails alone. One process serves the file:
    `claim` always succeeds.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._gathering: list[_Write] = []
        """Writes of the event loop's current turn: committed together when the turn ends."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        self.transactions = 0
        """Transactions committed or tried so far (a batch is one; a failed batch retried is one per write)."""

    def open(self) -> None:
        _create_private(self.path)
        self._writer = _connect(self.path)
        self._reader = _connect(self.path)
        self._stop.clear()
        self._thread = threading.Thread(target=self._checkpoints, name="audit-checkpointer", daemon=True)
        self._thread.start()

    async def start(self) -> None:
        await asyncio.to_thread(self.open)

    @property
    def healthy(self) -> bool:
        """Open, and its checkpointer thread alive."""
        return self._thread is not None and self._thread.is_alive()

    async def append(self, event: AuditEvent) -> int:
        payload = encode_payload(event)  # a payload the log cannot hold fails here, in the caller
        return await self._submit(
            _INSERT, (event.meeting_id, str(event.kind), event.utterance_id, payload, event.ts)
        )

    async def register(self, record: MeetingRecord) -> None:
        spec = encode_record(record)
        await self._submit(_REGISTER, (record.meeting_id, record.owner, spec, record.created_at))

    async def unregister(self, meeting_id: str) -> None:
        await self._submit(_UNREGISTER, (meeting_id,))

    async def registered(self, meeting_id: str) -> MeetingRecord | None:
        row = await asyncio.to_thread(
            self._read_one, "SELECT meeting_id, owner, spec, created_at FROM meetings WHERE meeting_id = ?",
            meeting_id,
        )
        if row is None:
            return None
        return MeetingRecord(meeting_id=row[0], owner=row[1], spec=json.loads(row[2]), created_at=row[3])

    async def stale(self, before: float) -> list[str]:
        def query() -> list[str]:
            assert self._reader is not None
            with self._read_lock:
                return [r[0] for r in self._reader.execute(_STALE, (before,))]

        return await asyncio.to_thread(query)

    async def claim(self, meeting_id: str) -> bool:
        return True

    async def release(self, meeting_id: str) -> None:
        return None

    async def events(self, meeting_id: str) -> list[AuditEvent]:
        return await asyncio.to_thread(self._events, meeting_id)

    async def has_meeting(self, meeting_id: str) -> bool:
        row = await asyncio.to_thread(self._read_one, "SELECT 1 FROM events WHERE meeting_id = ? LIMIT 1", meeting_id)
        return row is not None

    async def meeting_ids(self, prefix: str, limit: int, offset: int) -> list[str]:
        return await asyncio.to_thread(self._meeting_ids, prefix, limit, offset)

    def _meeting_ids(self, prefix: str, limit: int, offset: int) -> list[str]:
        assert self._reader is not None
        # A range on the indexed column, not LIKE: ids may hold `_` and `%`.
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"
        with self._read_lock:
            rows = self._reader.execute(_MEETING_IDS, (prefix, upper, limit, offset)).fetchall()
        return [r[0] for r in rows]

    async def close(self) -> None:
        if self._thread is None:
            return
        self._hand_over()
        self._stop.set()
        await asyncio.to_thread(self._thread.join)
        self._thread = None
        for conn in (self._writer, self._reader):
            if conn is not None:
                conn.close()

    async def _submit(self, sql: str, params: tuple[Any, ...]) -> int:
        if self._thread is None:
            raise RuntimeError("store is not open")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        if not self._gathering:
            loop.call_soon(self._hand_over)
        self._gathering.append(_Write(sql, params, loop, future))
        # A cancelled caller cancels only its wait: the write is gathered and goes in regardless (a future
        # already done is skipped).
        return await future

    def _hand_over(self) -> None:
        # One transaction per turn of the event loop, on the loop: a writer thread woken for each turn (and
        # taking the GIL from the loop each time) cost more than the commits it made (benchmark.load --profile).
        batch, self._gathering = self._gathering, []
        if batch:
            self._commit(batch)

    def _events(self, meeting_id: str) -> list[AuditEvent]:
        assert self._reader is not None
        with self._read_lock:
            return [_row_event(r) for r in self._reader.execute(_SELECT, (meeting_id,))]

    def _read_one(self, sql: str, key: str) -> tuple[Any, ...] | None:
        assert self._reader is not None
        with self._read_lock:
            return self._reader.execute(sql, (key,)).fetchone()

    def _checkpoints(self) -> None:
        conn = sqlite3.connect(self.path, check_same_thread=False)
        try:
            while not self._stop.wait(CHECKPOINT_S):
                # PASSIVE: copies what no reader still needs, never blocks the writer; the log starts over
                # from its beginning once it has all been copied. One that cannot run now runs next time.
                with contextlib.suppress(sqlite3.OperationalError):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()

    def _commit(self, batch: list[_Write]) -> None:
        try:
            results: list[int | BaseException] = self._transaction(batch)
        except Exception:
            # Someone's write is bad: each goes again in its own transaction, so only that one fails.
            results = []
            for write in batch:
                try:
                    results.extend(self._transaction([write]))
                except Exception as e:  # the writer must outlive a failed write: its caller gets the error
                    results.append(e)
        here = _running_loop()
        elsewhere: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[int], int | BaseException]]] = {}
        for write, result in zip(batch, results, strict=True):
            if write.loop is here:
                _resolve(write.future, result)
            else:
                elsewhere.setdefault(write.loop, []).append((write.future, result))
        for loop, outcomes in elsewhere.items():
            # A caller whose event loop has closed is gone; the others are told.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve_all, outcomes)

    def _transaction(self, batch: list[_Write]) -> list[int | BaseException]:
        writer = self._writer
        assert writer is not None
        results: list[int | BaseException] = []
        self.transactions += 1
        try:
            writer.execute("BEGIN")
            for sql, run in itertools.groupby(batch, key=lambda w: w.sql):
                writes = list(run)
                if sql != _INSERT or len(writes) == 1:
                    results += [writer.execute(w.sql, w.params).lastrowid or 0 for w in writes]
                    continue
                # A run of events in one statement: one call into SQLite, not one per event. The one writer
                # inside one transaction gives them consecutive seqs, ending at the last one inserted.
                writer.executemany(sql, [w.params for w in writes])
                last = writer.execute("SELECT last_insert_rowid()").fetchone()[0]
                results += range(last - len(writes) + 1, last + 1)
            writer.execute("COMMIT")
        except BaseException:
            if writer.in_transaction:
                writer.execute("ROLLBACK")
            raise
        return results


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve_all(outcomes: list[tuple[asyncio.Future[int], int | BaseException]]) -> None:
    for future, result in outcomes:
        _resolve(future, result)


def _resolve(future: asyncio.Future[int], result: int | BaseException) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
