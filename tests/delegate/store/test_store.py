"""The SQLite audit log: durable, ordered, append-only, readable by the CLI."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from delegate.__main__ import app as cli
from delegate.config import Settings
from delegate.store import (
    AuditEvent,
    AuditKind,
    MeetingRecord,
    SQLiteStore,
    UnstorableEvent,
    open_store,
    print_audit,
    read_events,
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "audit.sqlite"


async def write(db: Path, events: list[AuditEvent]) -> list[int]:
    store = SQLiteStore(db)
    store.open()
    try:
        return [await store.append(e) for e in events]
    finally:
        await store.close()


def ev(
    kind: AuditKind, utterance_id: int | None = None, meeting_id: str = "m1", **payload: object
) -> AuditEvent:
    return AuditEvent(meeting_id=meeting_id, kind=kind, utterance_id=utterance_id, payload=payload)


async def test_events_come_back_in_order_per_meeting(db: Path) -> None:
    seqs = await write(
        db,
        [
            ev(AuditKind.meeting_created, principal={"name": "Alice"}, engine="local"),
            ev(AuditKind.utterance, 0, speaker="Bob", text="Alice, status?"),
            ev(AuditKind.utterance, 0, meeting_id="m2", speaker="Eve", text="Other meeting."),
            ev(
                AuditKind.decision,
                0,
                speak="All green.",
                scenario="explicit_cue",
                engine="local",
                reason="named",
            ),
        ],
    )
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    events = read_events(db, "m1")
    assert [(e.kind, e.utterance_id) for e in events] == [
        (AuditKind.meeting_created, None),
        (AuditKind.utterance, 0),
        (AuditKind.decision, 0),
    ]
    assert events[2].payload["speak"] == "All green."
    assert [e.payload["text"] for e in read_events(db, "m2")] == ["Other meeting."]


async def test_concurrent_appends_are_all_committed_and_the_store_answers_reads(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        seqs = await asyncio.gather(
            *(
                store.append(ev(AuditKind.utterance, i, meeting_id=f"m{i % 7}", text=f"t{i}"))
                for i in range(700)
            )
        )
        assert len(set(seqs)) == 700
        assert await store.has_meeting("m3") and not await store.has_meeting("m99")
        assert len(await store.events("m3")) == 100
    finally:
        await store.close()


async def test_the_log_is_append_only_and_in_wal_mode(db: Path) -> None:
    await write(db, [ev(AuditKind.utterance, 0, text="said")])
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("UPDATE events SET payload = '{}'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute("DELETE FROM events")
    finally:
        conn.close()
    assert read_events(db, "m1")[0].payload == {"text": "said"}


async def test_a_reopened_store_keeps_and_extends_the_log(db: Path) -> None:
    await write(db, [ev(AuditKind.utterance, 0, text="before")])
    await write(db, [ev(AuditKind.utterance, 1, text="after")])
    assert [e.payload["text"] for e in read_events(db, "m1")] == ["before", "after"]


async def test_append_is_not_undone_by_a_cancelled_caller(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        task = asyncio.create_task(store.append(ev(AuditKind.decision, 0, speak="x")))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0.2)
    finally:
        await store.close()
    assert [e.kind for e in read_events(db, "m1")] == [AuditKind.decision]


async def test_print_audit_and_the_cli(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await write(
        db,
        [
            ev(AuditKind.utterance, 0, speaker="Bob", text="Alice, status?"),
            ev(
                AuditKind.decision,
                0,
                speak="All green.",
                scenario="explicit_cue",
                engine="local",
                reason="named",
            ),
            ev(AuditKind.decision_dropped, 1, reason="newer_utterance"),
        ],
    )
    print_audit("m1", db)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert "Bob: Alice, status?" in lines[0]
    assert "SPEAK 'All green.'" in lines[1] and "explicit_cue" in lines[1]
    assert "dropped: newer_utterance" in lines[2]

    result = CliRunner().invoke(cli, ["audit", "m1", "--db", str(db)])
    assert result.exit_code == 0 and "All green." in result.output
    missing = CliRunner().invoke(cli, ["audit", "nobody", "--db", str(db)])
    assert missing.exit_code == 1


def test_print_audit_without_a_database_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        print_audit("m1", tmp_path / "none.sqlite")
    assert exit_.value.code == 1
    assert "no audit database" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists()


async def test_a_payload_that_is_not_json_fails_in_the_caller_and_the_store_goes_on(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        assert store.healthy
        with pytest.raises(TypeError):
            await store.append(ev(AuditKind.decision, 0, speak=object()))
        await store.append(ev(AuditKind.decision, 0, speak="fine"))
        assert store.healthy
    finally:
        await store.close()
    assert not store.healthy
    assert [e.payload["speak"] for e in read_events(db, "m1")] == ["fine"]


async def test_one_poison_event_fails_alone_and_never_its_batch(db: Path) -> None:
    """30 meetings stream together; one sends an utterance id past 64 bits: only that event fails."""
    store = SQLiteStore(db)
    store.open()
    try:
        good = [
            ev(AuditKind.utterance, i, meeting_id=f"m{m}", text=f"turn {i}") for m in range(30) for i in range(20)
        ]
        poison = [ev(AuditKind.utterance, 2**63, meeting_id="m7", text="poison"), ev(AuditKind.utterance, 2**70)]
        results = await asyncio.gather(
            *(store.append(e) for e in good[:300]),
            *(store.append(e) for e in poison),
            *(store.append(e) for e in good[300:]),
            return_exceptions=True,
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        assert len(failed) == 2 and all(isinstance(r, UnstorableEvent) for r in failed)
        assert "64-bit" in str(failed[0])
        assert [len(await store.events(f"m{m}")) for m in range(30)] == [20] * 30
        assert await store.append(ev(AuditKind.utterance, 2**63 - 1, meeting_id="m7", text="largest id")) > 0
    finally:
        await store.close()


async def test_a_write_the_database_refuses_fails_alone(db: Path) -> None:
    """Past the checks in the caller, a statement that fails inside a batch is retried on its own."""
    store = SQLiteStore(db)
    store.open()
    try:
        bad = store._submit("INSERT INTO events (meeting_id) VALUES (NULL)", ())
        results = await asyncio.gather(
            *(store.append(ev(AuditKind.utterance, i, meeting_id=f"m{i}", text="x")) for i in range(50)),
            bad,
            *(store.append(ev(AuditKind.utterance, i, meeting_id=f"m{i}", text="y")) for i in range(50)),
            return_exceptions=True,
        )
        assert [type(r) for r in results if isinstance(r, BaseException)] == [sqlite3.IntegrityError]
        assert [len(await store.events(f"m{i}")) for i in range(50)] == [2] * 50
    finally:
        await store.close()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
async def test_non_finite_numbers_are_refused_with_a_clear_error(db: Path, value: float) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        with pytest.raises(UnstorableEvent, match="NaN or Infinity"):
            await store.append(ev(AuditKind.utterance, 0, text="hi", start=value))
        await store.append(ev(AuditKind.utterance, 0, text="hi", start=1.5))
    finally:
        await store.close()
    assert [e.payload["start"] for e in read_events(db, "m1")] == [1.5]
    assert "NaN" not in db.read_bytes().decode("latin-1") and "Infinity" not in db.read_bytes().decode("latin-1")


async def test_nested_non_finite_numbers_are_refused_beside_nulls(db: Path) -> None:
    # orjson writes NaN as null: a payload that holds a real null must still have its NaN found, at any depth.
    store = SQLiteStore(db)
    store.open()
    try:
        with pytest.raises(UnstorableEvent, match="NaN or Infinity"):
            await store.append(ev(AuditKind.decision, 0, speak=None, floor={"scores": [0.5, float("nan")]}))
    finally:
        await store.close()
    assert read_events(db, "m1") == []


async def test_payloads_the_fast_encoder_refuses_are_written_as_before(db: Path) -> None:
    """Integer keys, integers past 64 bits and lone surrogates: read back as the standard encoder wrote them."""
    await write(db, [ev(AuditKind.utterance, 0, text="a \ud800 b", edits={3: "x"}, big=2**70, none=None)])
    (event,) = read_events(db, "m1")
    assert event.payload == {"text": "a \ud800 b", "edits": {"3": "x"}, "big": 2**70, "none": None}


async def test_the_database_is_readable_by_its_owner_only(db: Path) -> None:
    await write(db, [ev(AuditKind.utterance, 0, text="said")])
    for path in db.parent.iterdir():
        assert path.stat().st_mode & 0o077 == 0, f"{path.name} is {oct(path.stat().st_mode)}"


async def test_the_registry_keeps_the_full_spec_until_the_meeting_is_unregistered(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        spec = {"principal": {"name": "Alice", "background": [{"context": "c", "information": "secret", "shareable": False}]}}
        await store.register(MeetingRecord(meeting_id="m1", owner="tok", spec=spec))
        record = await store.registered("m1")
        assert record is not None and record.spec == spec and record.owner == "tok"
        assert await store.registered("m2") is None
        await store.unregister("m1")
        assert await store.registered("m1") is None
    finally:
        await store.close()


async def test_an_unregistered_meetings_private_notes_are_gone_from_the_files(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        spec = {"principal": {"name": "Alice", "background": [{"context": "c", "information": "Zanzibar-7731", "shareable": False}]}}
        await store.register(MeetingRecord(meeting_id="m1", owner="tok", spec=spec))
        await store.unregister("m1")
    finally:
        await store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    leftovers = [p.name for p in db.parent.iterdir() if p.is_file() and b"Zanzibar-7731" in p.read_bytes()]
    assert leftovers == []


def test_open_store_chooses_the_backend_from_the_database_url(tmp_path: Path) -> None:
    assert isinstance(open_store(Settings(db_path=tmp_path / "a.sqlite")), SQLiteStore)
    pg = open_store(Settings(database_url="postgresql://u@127.0.0.1:1/db"))
    assert type(pg).__name__ == "PostgresStore"
    with pytest.raises(ValueError, match="postgresql://"):
        open_store(Settings(database_url="mysql://u@h/db"))


async def test_writes_of_one_turn_of_the_loop_commit_together_and_each_waits_for_its_commit(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        before = store.transactions
        seqs = await asyncio.gather(*(store.append(ev(AuditKind.utterance, i)) for i in range(300)))
        together = store.transactions - before
        assert sorted(seqs) == seqs and len(set(seqs)) == 300
        # Every append returned after its commit: the rows are there, read by another connection.
        logged = read_events(db, "m1")
        assert [e.utterance_id for e in logged] == list(range(300))
        assert [e.seq for e in logged] == seqs  # each caller got its own row's position
        assert together == 1
    finally:
        await store.close()


async def test_the_log_is_copied_into_the_database_file_by_the_checkpointer_not_by_the_commits(db: Path) -> None:
    store = SQLiteStore(db)
    store.open()
    try:
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] > 0  # a fresh connection's default
        assert store._writer is not None
        assert store._writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # the loop's commits never copy
        before = db.stat().st_size
        await asyncio.gather(*(store.append(ev(AuditKind.utterance, i, text="x" * 2000)) for i in range(400)))
        # The checkpointer thread copies the log into the file a moment later, without another write.
        for _ in range(300):
            if db.stat().st_size > before + 400 * 2000:
                break
            await asyncio.sleep(0.05)
        assert db.stat().st_size > before + 400 * 2000
        assert [e.utterance_id for e in read_events(db, "m1")] == list(range(400))
    finally:
        await store.close()
