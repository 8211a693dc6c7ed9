"""The PostgreSQL store against a real server on loopback: the same log as SQLite, and one process per meeting."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from delegate.store import AuditEvent, AuditKind, MeetingRecord, UnstorableEvent, print_audit
from delegate.store.postgres import PostgresStore


@pytest.fixture
async def store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    s = PostgresStore(postgres_url)
    await s.start()
    yield s
    await s.close()


def ev(kind: AuditKind, uid: int | None, meeting_id: str, **payload: object) -> AuditEvent:
    return AuditEvent(meeting_id=meeting_id, kind=kind, utterance_id=uid, payload=payload)


def mid() -> str:
    return f"m-{uuid.uuid4().hex[:8]}"


async def test_events_come_back_in_order_and_the_log_is_append_only(store: PostgresStore, postgres_url: str) -> None:
    m, other = mid(), mid()
    seqs = await asyncio.gather(
        *(store.append(ev(AuditKind.utterance, i, m if i % 2 else other, text=f"t{i}")) for i in range(200))
    )
    assert len(set(seqs)) == 200
    events = await store.events(m)
    assert [e.utterance_id for e in events] == list(range(1, 200, 2))
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert events[0].payload == {"text": "t1"} and await store.has_meeting(m) and not await store.has_meeting(mid())
    conn = await asyncpg.connect(postgres_url)
    try:
        for sql in ("UPDATE events SET payload = '{}'", "DELETE FROM events", "TRUNCATE events"):
            with pytest.raises(asyncpg.RaiseError, match="append-only"):
                await conn.execute(sql)
    finally:
        await conn.close()


async def test_one_poison_event_fails_alone(store: PostgresStore) -> None:
    meetings = [mid() for _ in range(30)]
    good = [ev(AuditKind.utterance, i, m, text=f"turn {i}") for m in meetings for i in range(10)]
    bad_write = store._submit_sql("INSERT INTO events (meeting_id) VALUES (NULL)")
    results = await asyncio.gather(
        *(store.append(e) for e in good[:150]),
        store.append(ev(AuditKind.utterance, 2**63, meetings[3], text="poison")),
        store.append(ev(AuditKind.decision, 0, meetings[4], confidence=float("nan"))),
        bad_write,
        *(store.append(e) for e in good[150:]),
        return_exceptions=True,
    )
    failed = [type(r) for r in results if isinstance(r, BaseException)]
    assert failed == [UnstorableEvent, UnstorableEvent, asyncpg.NotNullViolationError]
    assert [len(await store.events(m)) for m in meetings] == [10] * 30


async def test_the_registry_holds_the_spec_until_the_meeting_ends(store: PostgresStore) -> None:
    m = mid()
    spec = {"principal": {"name": "A", "background": [{"context": "c", "information": "secret", "shareable": False}]}}
    await store.register(MeetingRecord(meeting_id=m, owner="tok", spec=spec))
    got = await store.registered(m)
    assert got is not None and got.spec == spec and got.owner == "tok"
    await store.unregister(m)
    assert await store.registered(m) is None


async def test_one_process_holds_a_meeting_until_it_lets_go_or_dies(postgres_url: str) -> None:
    a, b = PostgresStore(postgres_url), PostgresStore(postgres_url)
    await a.start()
    await b.start()
    lost = asyncio.Event()
    a.on_lost = lost.set
    try:
        m1, m2 = mid(), mid()
        assert await a.claim(m1) and await a.claim(m1)
        assert not await b.claim(m1)
        await a.release(m1)
        assert await b.claim(m1)
        assert await a.claim(m2) and not await b.claim(m2)
        # The process holding m2 loses its database session (as when it dies): the lock goes with it.
        admin = await asyncpg.connect(postgres_url)
        try:
            pid = a._locks.get_server_pid() if a._locks is not None else 0
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await admin.close()
        await asyncio.wait_for(lost.wait(), 5)
        assert not a.healthy and not await a.claim(m2)
        assert await b.claim(m2)
    finally:
        await a.close()
        await b.close()


async def test_the_audit_command_reads_postgresql(
    store: PostgresStore, postgres_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    m = mid()
    await store.append(ev(AuditKind.utterance, 0, m, speaker="Bob", text="Alice, status?"))
    monkeypatch.setenv("DELEGATE_DATABASE_URL", postgres_url)
    await asyncio.to_thread(print_audit, m)
    assert "Bob: Alice, status?" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        await asyncio.to_thread(print_audit, mid())
