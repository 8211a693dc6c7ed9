"""A meeting rebuilt from its audit log: the same state, decisions and actions, and it goes on as if never stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from delegate.actions import ActionExtractor
from delegate.decide.local import LocalEngine
from delegate.models import BackgroundItem, Profile
from delegate.server.auth import audit_id
from delegate.server.metrics import Metrics
from delegate.server.protocol import ErrorCode, Feedback, Join, Leave, MeetingSpec, ProtocolError, UtteranceIn
from delegate.server.rebuild import rebuild
from delegate.server.registry import Sessions
from delegate.store import AuditEvent, AuditKind, SQLiteStore, read_events
from testkit.fakes import NamedEngine, Recorder

DANA = Profile(
    name="Dana Smith",
    label="PERSON1",
    aliases=["Dana"],
    background=[
        BackgroundItem(context="if asked about the budget", information="The budget was approved on Monday."),
        BackgroundItem(context="if asked about the budget", information="We are being acquired.", shareable=False),
    ],
)
SPEC = MeetingSpec(principal=DANA, attendees=["PERSON1", "PERSON2", "PERSON3"], names={"PERSON2": "Kwame Mensah"})
SCRIPT = [
    ("PERSON2", "Good morning, let's start with the budget."),
    ("PERSON2", "Dana, where does the budget stand?"),
    ("PERSON3", "I will send the evaluation report to Kwame on Monday."),
    ("PERSON2", "Thanks. And I will book the meeting room for the workshop."),
    ("PERSON3", "Okay, I will send the evaluation report to Kwame on Friday then."),
    ("PERSON2", "Dana, anything more on the budget?"),
    ("PERSON3", "I will review the contract draft this week."),
    ("PERSON2", "So I will book the meeting room for the workshop on Monday."),
]


def sessions_on(store: SQLiteStore) -> Sessions:
    """A server process's sessions; two of these on one store are two processes, one after the other."""

    async def engines(name: str) -> LocalEngine:
        return engine

    engine = LocalEngine()
    return Sessions(
        store,
        Metrics(),
        engines,
        default_engine="local",
        max_text_chars=5000,
        idle_seconds=60,
        actions=lambda spec: ActionExtractor(principal=spec.principal.speaker_label),
    )


def utt(uid: int) -> UtteranceIn:
    speaker, text = SCRIPT[uid]
    return UtteranceIn(type="utterance", id=uid, speaker=speaker, text=text)


async def play(sessions: Sessions, meeting_id: str, ids: range, conn: Recorder) -> None:
    session = await sessions.find(meeting_id, "tok")
    assert session is not None
    for uid in ids:
        await session.handle(utt(uid), conn)
        # Let the decision be made before the next turn, as in a live meeting (a moment the encoder reads waits
        # for a worker thread), and the turn's action items, a beat after it.
        while not session.decisions.settled or session.action_desk.due:
            await asyncio.sleep(0.01)
        if uid == 3:
            first = session.actions["a1"]
            await session.handle(Feedback(type="feedback", verdict="approve", action_id=first.id), conn)


@pytest.fixture
async def store(tmp_path: Path) -> SQLiteStore:
    s = SQLiteStore(tmp_path / "audit.sqlite")
    s.open()
    yield s
    await s.close()


async def test_a_meeting_taken_over_midway_ends_as_one_that_never_stopped(store: SQLiteStore) -> None:
    whole, split = sessions_on(store), sessions_on(store)
    await whole.open("whole", SPEC, owner="tok")
    await play(whole, "whole", range(len(SCRIPT)), Recorder())

    await split.open("split", SPEC, owner="tok")
    await play(split, "split", range(5), Recorder())
    await split.suspend_all("server_stopped")
    later = sessions_on(store)  # another process, with nothing in memory
    await play(later, "split", range(5, len(SCRIPT)), Recorder())

    a, b = whole.get("whole", "tok"), later.get("split", "tok")
    assert a is not None and b is not None
    assert [u.model_dump() for u in a.state.utterances] == [u.model_dump() for u in b.state.utterances]
    assert [d.model_dump(exclude={"latency_ms"}) for d in a.decisions] == [
        d.model_dump(exclude={"latency_ms"}) for d in b.decisions
    ]
    assert a.actions == b.actions and len(a.actions) >= 3
    assert a.actions["a1"].status == "approved"
    # The budget answer was spoken before the takeover; it is not spoken again after it.
    assert sum("approved on Monday" in d.speak for d in b.decisions) == 1
    assert b.state.spoken_items == a.state.spoken_items == {"PERSON1": {0}}

    def proposals(meeting_id: str) -> list[tuple[str, str]]:
        return [
            (e.payload["id"], e.payload["event"])
            for e in read_events(store.path, audit_id("tok", meeting_id))
            if e.kind == AuditKind.action
        ]

    assert proposals("whole") == proposals("split"), "no action proposed twice or under another id"


async def test_an_undecided_last_utterance_is_decided_once_by_the_process_that_takes_over(
    store: SQLiteStore,
) -> None:
    engine = NamedEngine()
    engine.gate = asyncio.Event()

    async def engines(name: str) -> NamedEngine:
        return engine

    first = Sessions(store, Metrics(), engines, default_engine="scripted", max_text_chars=500, idle_seconds=60)
    session = await first.open("m", MeetingSpec(principal=DANA), owner="tok")
    conn = Recorder()
    await session.handle(UtteranceIn(type="utterance", id=0, speaker="Bob", text="Dana, ready?"), conn)
    await first.suspend_all("server_stopped")  # the decision was still being made: abandoned, unrecorded
    assert AuditKind.decision not in [e.kind for e in read_events(store.path, audit_id("tok", "m"))]

    engine.gate.set()
    second = Sessions(store, Metrics(), engines, default_engine="scripted", max_text_chars=500, idle_seconds=60)
    resumed = await second.find("m", "tok")
    assert resumed is not None
    again = Recorder(store.path, owner="tok")
    await resumed.handle(Join(type="join", last_utterance_id=0), again)
    for _ in range(100):
        if again.decisions():
            break
        await asyncio.sleep(0.01)
    assert [d.utterance_id for d in again.decisions()] == [0] and again.decisions()[0].spoke
    logged = [e for e in read_events(store.path, audit_id("tok", "m")) if e.kind == AuditKind.decision]
    assert [e.utterance_id for e in logged] == [0]


async def test_a_left_meeting_stays_closed_and_its_spec_is_forgotten(store: SQLiteStore) -> None:
    first = sessions_on(store)
    session = await first.open("m", SPEC, owner="tok")
    assert (await store.registered(audit_id("tok", "m"))) is not None
    await session.handle(Leave(type="leave"), Recorder())
    assert await store.registered(audit_id("tok", "m")) is None
    second = sessions_on(store)
    with pytest.raises(ProtocolError) as err:
        await second.find("m", "tok")
    assert err.value.code == ErrorCode.meeting_closed
    # Another tenant's id "m" is another meeting: it learns nothing, not even that this one ended.
    assert await second.find("m", "eve") is None
    assert await second.find("never-seen", "tok") is None


def test_rebuild_is_a_function_of_the_events() -> None:
    def ev(kind: AuditKind, uid: int | None = None, **payload: object) -> AuditEvent:
        return AuditEvent(meeting_id="m", kind=kind, utterance_id=uid, payload=payload, ts=100.0)

    decision = {"scenario": "explicit_cue", "speak": "The budget was approved on Monday.", "reason": "named",
                "confidence": 0.9, "engine": "local", "used_background": [0]}
    events = [
        ev(AuditKind.meeting_created, engine="hybrid", owner="tok"),
        ev(AuditKind.utterance, 0, speaker="PERSON2", text="Dana, the budget?"),
        ev(AuditKind.decision, 0, **decision),
        ev(AuditKind.utterance, 4, speaker="PERSON3", text="Anything else?"),
        ev(AuditKind.decision_dropped, 4, reason="newer_utterance"),
        ev(AuditKind.utterance, 7, speaker="PERSON9", text="Let's wrap up."),
    ]
    out = rebuild("m", SPEC, events)
    assert [u.id for u in out.state.utterances] == [0, 4, 7] and "PERSON9" in out.state.attendees
    assert out.engine == "hybrid" and out.owner == "tok" and out.created_at == 100.0
    assert [d.utterance_id for d in out.decisions] == [0]
    assert out.state.spoken_items == {"PERSON1": {0}}
    assert out.undecided == 7 and not out.ended
    assert rebuild("m", SPEC, events[:5]).undecided is None
    assert rebuild("m", SPEC, [*events, ev(AuditKind.left, reason="bye")]).ended


async def test_a_meeting_no_process_holds_is_ended_once_idle_and_a_detached_one_is_let_go(
    store: SQLiteStore,
) -> None:
    first = sessions_on(store)
    await first.open("orphan", SPEC, owner="tok")
    await first.suspend_all("server_stopped")  # nobody resumes it after the restart
    later = Sessions(
        store, Metrics(), first._engines, default_engine="local", max_text_chars=500, idle_seconds=0.3,
        release_seconds=0.1,
    )
    held = await later.open("held", SPEC, owner="tok")
    await asyncio.sleep(0.15)
    assert await later.close_idle() == 0
    assert later.get("held", "tok") is None and not held.connected, "detached past release_seconds: let go"
    assert await store.registered(audit_id("tok", "held")) is not None, "let go is not ended"
    await asyncio.sleep(0.3)
    assert await later.close_idle() == 2
    for meeting_id in ("orphan", "held"):
        assert read_events(store.path, audit_id("tok", meeting_id))[-1].kind == AuditKind.closed
        assert await store.registered(audit_id("tok", meeting_id)) is None


@pytest.mark.parametrize("at_once", [1, 2, 6])
async def test_a_storm_of_takeovers_is_rebuilt_a_bounded_number_at_a_time_and_every_meeting_resumes(
    store: SQLiteStore, at_once: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = sessions_on(store)
    for k in range(6):
        await first.open(f"m{k}", SPEC, owner="tok")
        await play(first, f"m{k}", range(2), Recorder())
    await first.suspend_all("server_stopped")  # the process dies: six meetings come to the next one at once

    second = sessions_on(store)
    second._takeovers = asyncio.Semaphore(at_once)  # as `Sessions(..., takeovers_at_once=at_once)`
    reading, most = 0, 0
    events = store.events

    async def slow_events(meeting_id: str) -> list[AuditEvent]:
        # Each rebuild reads its log for a while, so that rebuilds not held back would overlap.
        nonlocal reading, most
        reading += 1
        most = max(most, reading, second.taking_over)
        try:
            await asyncio.sleep(0.05)
            return await events(meeting_id)
        finally:
            reading -= 1

    monkeypatch.setattr(store, "events", slow_events)
    resumed = await asyncio.gather(*(second.find(f"m{k}", "tok") for k in range(6)))
    assert most == at_once  # never more at once than the bound; as many as it lets through
    assert all(s is not None and [u.id for u in s.state.utterances] == [0, 1] for s in resumed)
    assert second.taking_over == 0
