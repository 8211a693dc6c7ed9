"""The store on PostgreSQL (asyncpg): audit log and meeting registry shared by several server processes.

Who serves a meeting is a session-level advisory lock on one dedicated connection: it is held while the
process lives and released by PostgreSQL the moment that connection ends, so after a crash another process
can take the meeting over at once, with no lease to wait out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import structlog

from delegate.store.base import AuditEvent, MeetingRecord, encode_payload, encode_record

log = structlog.get_logger("delegate.store")

_SCHEMA = """
SELECT pg_advisory_xact_lock(7368757);  -- two processes starting together create the schema once
CREATE TABLE IF NOT EXISTS events (
    seq bigserial PRIMARY KEY,
    meeting_id text NOT NULL,
    kind text NOT NULL,
    utterance_id bigint,
    payload text NOT NULL,
    ts double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_meeting ON events (meeting_id, seq);
CREATE OR REPLACE FUNCTION delegate_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
CREATE OR REPLACE TRIGGER events_no_change BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION delegate_append_only();
CREATE OR REPLACE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION delegate_append_only();
CREATE TABLE IF NOT EXISTS meetings (
    meeting_id text PRIMARY KEY,
    owner text NOT NULL,
    spec text NOT NULL,
    created_at double precision NOT NULL
);
"""

_INSERT_MANY = """
INSERT INTO events (meeting_id, kind, utterance_id, payload, ts)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::float8[])
RETURNING seq
"""
_SELECT = "SELECT seq, meeting_id, kind, utterance_id, payload, ts FROM events WHERE meeting_id = $1 ORDER BY seq"
_REGISTER = """
INSERT INTO meetings (meeting_id, owner, spec, created_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (meeting_id) DO UPDATE SET owner = EXCLUDED.owner, spec = EXCLUDED.spec
"""
_UNREGISTER = "DELETE FROM meetings WHERE meeting_id = $1"
_LOCK_KEY = "hashtextextended($1, 0)"
_STALE = """
SELECT m.meeting_id FROM meetings m
WHERE coalesce((SELECT max(ts) FROM events e WHERE e.meeting_id = m.meeting_id), m.created_at) < $1
"""
_BATCH = 512


@dataclass(slots=True)
class _Write:
    """An event row (`row`) or a registry statement (`sql`, `params`), and where its result goes."""

    future: asyncio.Future[int]
    row: tuple[Any, ...] | None = None
    sql: str = ""
    params: tuple[Any, ...] = field(default_factory=tuple)


class PostgresStore:
    """One writer task commits in batches (a failed batch is retried one write at a time); reads use a pool."""

    def __init__(self, url: str, *, pool_size: int = 8) -> None:
        self.url = url
        self.on_lost: Callable[[], None] | None = None
        """Called when the lock connection ends: this process no longer holds any meeting."""
        self._pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._locks: asyncpg.Connection | None = None
        self._locks_guard = asyncio.Lock()
        self._held: set[str] = set()
        self._queue: asyncio.Queue[_Write | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._write: asyncpg.Connection | None = None

    async def start(self) -> None:
        self._pool = await asyncpg.create_pool(self.url, min_size=2, max_size=self._pool_size)
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(_SCHEMA)
        self._locks = await asyncpg.connect(self.url)
        self._locks.add_termination_listener(self._lost)
        self._writer = asyncio.create_task(self._write_loop(), name="audit-writer")

    @property
    def healthy(self) -> bool:
        return (
            self._writer is not None
            and not self._writer.done()
            and self._locks is not None
            and not self._locks.is_closed()
        )

    async def close(self) -> None:
        if self._writer is not None:
            await self._queue.put(None)
            await self._writer
            self._writer = None
        if self._write is not None:
            with contextlib.suppress(Exception):
                await self._write.close()
            self._write = None
        if self._locks is not None:
            self._locks.remove_termination_listener(self._lost)
            with contextlib.suppress(Exception):
                await self._locks.close()  # releases every advisory lock this process held
            self._locks = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # --- the log ------------------------------------------------------------------------------------

    async def append(self, event: AuditEvent) -> int:
        payload = encode_payload(event)
        return await self._submit(
            _Write(self._future(), row=(event.meeting_id, str(event.kind), event.utterance_id, payload, event.ts))
        )

    async def events(self, meeting_id: str) -> list[AuditEvent]:
        rows = await self._read().fetch(_SELECT, meeting_id)
        return [
            AuditEvent(
                seq=r["seq"], meeting_id=r["meeting_id"], kind=r["kind"], utterance_id=r["utterance_id"],
                payload=json.loads(r["payload"]), ts=r["ts"],
            )
            for r in rows
        ]

    async def has_meeting(self, meeting_id: str) -> bool:
        return await self._read().fetchval("SELECT 1 FROM events WHERE meeting_id = $1 LIMIT 1", meeting_id) is not None

    async def meeting_ids(self, prefix: str, limit: int, offset: int) -> list[str]:
        rows = await self._read().fetch(
            "SELECT meeting_id FROM events WHERE starts_with(meeting_id, $1) "
            "GROUP BY meeting_id ORDER BY MIN(seq) DESC LIMIT $2 OFFSET $3",
            prefix, limit, offset,
        )
        return [r["meeting_id"] for r in rows]

    # --- the registry -------------------------------------------------------------------------------

    async def register(self, record: MeetingRecord) -> None:
        spec = encode_record(record)
        await self._submit(
            _Write(self._future(), sql=_REGISTER, params=(record.meeting_id, record.owner, spec, record.created_at))
        )

    async def _submit_sql(self, sql: str, *params: Any) -> int:
        return await self._submit(_Write(self._future(), sql=sql, params=params))

    async def unregister(self, meeting_id: str) -> None:
        await self._submit(_Write(self._future(), sql=_UNREGISTER, params=(meeting_id,)))

    async def registered(self, meeting_id: str) -> MeetingRecord | None:
        row = await self._read().fetchrow(
            "SELECT meeting_id, owner, spec, created_at FROM meetings WHERE meeting_id = $1", meeting_id
        )
        if row is None:
            return None
        return MeetingRecord(
            meeting_id=row["meeting_id"], owner=row["owner"], spec=json.loads(row["spec"]), created_at=row["created_at"]
        )

    async def stale(self, before: float) -> list[str]:
        rows = await self._read().fetch(_STALE, before)
        return [r["meeting_id"] for r in rows]

    # --- who serves which meeting -------------------------------------------------------------------

    async def claim(self, meeting_id: str) -> bool:
        if meeting_id in self._held:
            return True
        async with self._locks_guard:  # one connection runs one query at a time
            if self._locks is None or self._locks.is_closed():
                return False
            got = bool(await self._locks.fetchval(f"SELECT pg_try_advisory_lock({_LOCK_KEY})", meeting_id))
        if got:
            self._held.add(meeting_id)
        return got

    async def release(self, meeting_id: str) -> None:
        if meeting_id not in self._held:
            return
        self._held.discard(meeting_id)
        async with self._locks_guard:
            if self._locks is not None and not self._locks.is_closed():
                await self._locks.fetchval(f"SELECT pg_advisory_unlock({_LOCK_KEY})", meeting_id)

    def _lost(self, conn: object) -> None:
        log.error("meeting_locks_lost", held=len(self._held))
        self._held.clear()
        if self.on_lost is not None:
            self.on_lost()

    # --- writing ------------------------------------------------------------------------------------

    def _read(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("store is not open")
        return self._pool

    @staticmethod
    def _future() -> asyncio.Future[int]:
        return asyncio.get_running_loop().create_future()

    async def _submit(self, write: _Write) -> int:
        if self._writer is None or self._writer.done():
            raise RuntimeError("store is not open")
        self._queue.put_nowait(write)
        # A cancelled caller cancels only its wait: the write is queued and goes in regardless (the writer
        # skips a future already done).
        return await write.future

    async def _write_loop(self) -> None:
        stop = False
        while not stop:
            item = await self._queue.get()
            batch: list[_Write] = []
            while item is not None:
                batch.append(item)
                if len(batch) >= _BATCH or self._queue.empty():
                    break
                item = self._queue.get_nowait()
            stop = item is None
            if batch:
                await self._commit(batch)

    async def _commit(self, batch: list[_Write]) -> None:
        """Runs of events go in as one multi-row INSERT (atomic, one round trip); a run that fails is retried
        one event at a time, so only the bad one fails. Registry statements run on their own, in order."""
        results: list[int | BaseException] = []
        run: list[_Write] = []
        for write in [*batch, None]:
            if write is not None and write.row is not None:
                run.append(write)
                continue
            if run:
                results += await self._insert(run)
                run = []
            if write is not None:
                results += await self._statement(write)
        for write, result in zip(batch, results, strict=True):
            if write.future.done():
                continue
            if isinstance(result, BaseException):
                write.future.set_exception(result)
            else:
                write.future.set_result(result)

    async def _insert(self, run: list[_Write]) -> list[int | BaseException]:
        try:
            return await self._insert_rows([w.row for w in run if w.row is not None])
        except Exception:
            return [await self._insert_one(w) for w in run]

    async def _insert_one(self, write: _Write) -> int | BaseException:
        try:
            assert write.row is not None
            return (await self._insert_rows([write.row]))[0]
        except Exception as e:
            return e

    async def _insert_rows(self, rows: list[tuple[Any, ...]]) -> list[int]:
        conn = await self._writer_conn()
        cols = list(zip(*rows, strict=True))
        seqs = await conn.fetch(_INSERT_MANY, *cols)
        # Rows get their seq in the order unnest gives them, so the sorted seqs are in input order.
        return sorted(r["seq"] for r in seqs)

    async def _statement(self, write: _Write) -> list[int | BaseException]:
        try:
            conn = await self._writer_conn()
            await conn.execute(write.sql, *write.params)
            return [0]
        except Exception as e:
            return [e]

    async def _writer_conn(self) -> asyncpg.Connection:
        # One connection of its own: a pool would reset the connection (a round trip) after every batch.
        if self._write is None or self._write.is_closed():
            self._write = await asyncpg.connect(self.url)
        return self._write
