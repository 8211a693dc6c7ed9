"""MeetingSession on its own: a scripted meeting, stale decisions dropped, engine faults, the actions seam."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, ProposedAction
from delegate.server.metrics import Metrics
from delegate.server.protocol import (
    Ack,
    ActionMessage,
    DecisionMessage,
    ErrorCode,
    ErrorMessage,
    Feedback,
    Join,
    Leave,
    MeetingSpec,
    ProtocolError,
    UtteranceIn,
)
from delegate.server.registry import MeetingSession, Sessions
from delegate.store import AuditKind, SQLiteStore, read_events
from testkit.fakes import NamedEngine, Recorder

ALICE = Profile(name="Alice Smith", aliases=["Alice"])


class PromiseExtractor:
    """Proposes an action for every utterance that says "I'll send"; "by Friday" later updates it."""

    def __init__(self) -> None:
        self.book: dict[str, ProposedAction] = {}

    @property
    def actions(self) -> list[ProposedAction]:
        return list(self.book.values())

    def observe(self, meeting: MeetingState) -> list[ProposedAction]:
        u = meeting.last
        assert u is not None
        if "by Friday" in u.text and self.book:
            first = next(iter(self.book.values()))
            self.book[first.id] = first.model_copy(
                update={"due": "Friday", "utterance_ids": [*first.utterance_ids, u.id]}
            )
            return [self.book[first.id]]
        if "I'll send" not in u.text:
            return []
        action = ProposedAction(
            id=f"a{u.id}",
            action_type="send_email",
            description=u.text,
            assignees=[u.speaker],
            supporting_excerpt=u.text,
            utterance_ids=[u.id],
        )
        self.book[action.id] = action
        return [action]

    def apply_feedback(self, action_id: str, approve: bool) -> ProposedAction:
        self.book[action_id] = self.book[action_id].model_copy(
            update={"status": "approved" if approve else "rejected"}
        )
        return self.book[action_id]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "audit.sqlite")
    s.open()
    yield s
    await s.close()


def make_session(
    store: SQLiteStore, engine: NamedEngine, meeting_id: str = "m", actions: PromiseExtractor | None = None
) -> MeetingSession:
    return MeetingSession(
        meeting_id,
        MeetingSpec(principal=ALICE, attendees=["Bob"]),
        engine,
        store,
        Metrics(),
        owner="anonymous",
        max_text_chars=1000,
        actions=actions,
    )


def utt(uid: int, text: str, speaker: str = "Bob") -> UtteranceIn:
    return UtteranceIn(type="utterance", id=uid, speaker=speaker, text=text)


async def settle(session: MeetingSession) -> None:
    """Until the latest decision is made and the latest utterance's actions (a beat later) extracted."""
    for _ in range(200):
        await asyncio.sleep(0.005)
        if session.decisions.settled and not session.action_desk.due:
            return


async def test_scripted_meeting_yields_one_decision_per_utterance_after_its_ack(store: SQLiteStore) -> None:
    engine = NamedEngine()
    conn = Recorder(store.path)
    async with make_session(store, engine) as session:
        for uid, text in enumerate(["Morning.", "Alice, the numbers?", "Thanks, next item."]):
            await session.handle(utt(uid, text), conn)
            await settle(session)
    assert [d.speak for d in conn.decisions()] == ["", "On it.", ""]
    kinds = [type(f).__name__ for f in conn.frames]
    assert kinds == ["Ack", "DecisionMessage"] * 3
    events = read_events(store.path, "m")
    assert [e.kind for e in events] == [
        AuditKind.meeting_created,
        *[AuditKind.utterance, AuditKind.decision] * 3,
        AuditKind.closed,
    ]
    assert len(session.state) == 3 and list(session.decisions) == conn.decisions()


async def test_a_newer_utterance_drops_the_pending_decision(store: SQLiteStore) -> None:
    engine = NamedEngine()
    engine.gate = asyncio.Event()
    conn = Recorder(store.path)
    session = make_session(store, engine)
    await session.start()
    await session.handle(utt(0, "Alice, what do you think?"), conn)
    await asyncio.sleep(0.01)
    assert engine.started == [0]
    await session.handle(utt(1, "Actually, let's skip that."), conn)
    engine.gate.set()
    await settle(session)
    assert [d.utterance_id for d in conn.decisions()] == [1], "no decision on the stale utterance"
    dropped = [e for e in read_events(store.path, "m") if e.kind == AuditKind.decision_dropped]
    assert [(e.utterance_id, e.payload["newer_utterance_id"]) for e in dropped] == [(0, 1)]
    assert [d.utterance_id for d in session.decisions] == [1]


async def test_a_slow_engine_does_not_block_other_sessions(store: SQLiteStore) -> None:
    slow, fast = NamedEngine(), NamedEngine()
    slow.gate = asyncio.Event()
    slow_conn, fast_conn = Recorder(), Recorder()
    stuck, quick = make_session(store, slow, "slow"), make_session(store, fast, "fast")
    await stuck.start()
    await quick.start()
    await stuck.handle(utt(0, "Alice?"), slow_conn)
    for uid in range(5):
        await quick.handle(utt(uid, f"Alice, point {uid}?"), fast_conn)
        await settle(quick)
    assert len(fast_conn.decisions()) == 5 and slow_conn.decisions() == []
    slow.gate.set()
    await settle(stuck)
    assert len(slow_conn.decisions()) == 1


async def test_engine_failure_is_reported_and_the_session_goes_on(store: SQLiteStore) -> None:
    engine = NamedEngine()
    engine.fail_on = {0}
    conn = Recorder()
    async with make_session(store, engine) as session:
        await session.handle(utt(0, "Alice?"), conn)
        await settle(session)
        await session.handle(utt(1, "Alice, again?"), conn)
        await settle(session)
    errors = [f for f in conn.frames if isinstance(f, ErrorMessage)]
    assert [(e.code, e.utterance_id) for e in errors] == [(ErrorCode.engine_error, 0)]
    assert [d.utterance_id for d in conn.decisions()] == [1]
    dropped = [e for e in read_events(store.path, "m") if e.kind == AuditKind.decision_dropped]
    assert dropped[0].payload["reason"] == "engine_error"


async def test_utterance_ids_must_grow_and_a_refused_one_changes_nothing(store: SQLiteStore) -> None:
    conn = Recorder()
    async with make_session(store, NamedEngine()) as session:
        await session.handle(utt(5, "First."), conn)
        for bad in (5, 3):
            with pytest.raises(ProtocolError) as err:
                await session.handle(utt(bad, "Again."), conn)
            assert err.value.code == ErrorCode.bad_utterance_id
        await session.handle(utt(9, "Gaps are fine."), conn)
        await settle(session)
        assert [u.id for u in session.state.utterances] == [5, 9]
    assert [e.utterance_id for e in read_events(store.path, "m") if e.kind == AuditKind.utterance] == [5, 9]


async def test_partial_utterances_are_acked_but_not_decided(store: SQLiteStore) -> None:
    conn = Recorder()
    async with make_session(store, NamedEngine()) as session:
        await session.handle(
            UtteranceIn(type="utterance", id=0, speaker="Bob", text="Ali", final=False), conn
        )
        await session.handle(utt(0, "Alice, ready?"), conn)
        await settle(session)
    assert [type(f) for f in conn.frames] == [Ack, Ack, DecisionMessage]
    assert len(session.state) == 1


async def test_actions_are_proposed_updated_audited_and_approved_by_feedback(store: SQLiteStore) -> None:
    conn = Recorder()
    extractor = PromiseExtractor()
    async with make_session(store, NamedEngine(), actions=extractor) as session:
        await session.handle(utt(0, "I'll send the slides tonight."), conn)
        await session.handle(utt(1, "Make that by Friday."), conn)
        await settle(session)
        assert list(session.actions) == ["a0"] and session.actions["a0"].due == "Friday"
        await session.handle(
            Feedback(type="feedback", verdict="approve", action_id="a0", comment="yes"), conn
        )
        await session.handle(Feedback(type="feedback", verdict="reject", utterance_id=1), conn)
        with pytest.raises(ProtocolError) as err:
            await session.handle(Feedback(type="feedback", verdict="reject", action_id="nope"), conn)
        assert err.value.code == ErrorCode.not_found
    actions = [f.action for f in conn.frames if isinstance(f, ActionMessage)]
    assert [(a.status, a.due) for a in actions] == [
        ("proposed", None),
        ("proposed", "Friday"),
        ("approved", "Friday"),
    ]
    assert session.actions["a0"].status == "approved" and extractor.book["a0"].status == "approved"
    events = read_events(store.path, "m")
    assert [e.payload["event"] for e in events if e.kind == AuditKind.action] == ["proposed", "updated"]
    feedback = [e.payload for e in events if e.kind == AuditKind.feedback]
    assert feedback[0]["action_id"] == "a0" and feedback[0]["status"] == "approved"
    assert feedback[1]["verdict"] == "reject" and "action_id" not in feedback[1]


async def test_an_utterances_actions_leave_its_path_and_come_a_beat_later_on_their_own(store: SQLiteStore) -> None:
    conn = Recorder()
    async with make_session(store, NamedEngine(), actions=PromiseExtractor()) as session:
        await session.handle(utt(0, "I'll send the slides tonight."), conn)
        assert not session.actions and session.action_desk.due  # acked, decision started, actions not yet
        for _ in range(200):
            if session.actions:
                break
            await asyncio.sleep(0.01)
        assert list(session.actions) == ["a0"] and not session.action_desk.due
    frames = [type(f).__name__ for f in conn.frames]
    assert frames[0] == "Ack" and "ActionMessage" in frames


async def test_the_last_utterances_actions_are_recorded_before_the_meeting_ends(store: SQLiteStore) -> None:
    conn = Recorder()
    session = make_session(store, NamedEngine(), actions=PromiseExtractor())
    await session.start()
    await session.handle(utt(0, "Morning."), conn)
    await session.handle(utt(1, "I'll send the slides tonight."), conn)
    await session.close("client_left", kind=AuditKind.left)  # before the beat came
    kinds = [e.kind for e in read_events(store.path, "m")]
    assert kinds.count(AuditKind.action) == 1 and kinds.index(AuditKind.action) < kinds.index(AuditKind.left)
    assert [f.action.id for f in conn.frames if isinstance(f, ActionMessage)] == ["a1"]


async def test_decisions_made_while_away_are_sent_on_rejoin(store: SQLiteStore) -> None:
    engine = NamedEngine()
    engine.gate = asyncio.Event()
    first = Recorder()
    session = make_session(store, engine)
    await session.start()
    await session.handle(utt(0, "Alice, budget?"), first)
    session.detach(first)
    engine.gate.set()
    await settle(session)
    assert first.decisions() == [] and len(session.decisions) == 1
    second = Recorder()
    await session.handle(Join(type="join", last_utterance_id=0), second)
    assert isinstance(second.frames[0], Ack) and second.frames[0].last_utterance_id == 0
    resumed = second.frames[1]
    assert isinstance(resumed, DecisionMessage) and resumed.resumed and resumed.decision.utterance_id == 0


async def test_leave_drops_the_pending_decision_and_closes(store: SQLiteStore) -> None:
    engine = NamedEngine()
    engine.gate = asyncio.Event()
    conn = Recorder()
    sessions = Sessions(
        store,
        Metrics(),
        _engine_factory(engine),
        default_engine="scripted",
        max_text_chars=100,
        idle_seconds=60,
    )
    session = await sessions.open("m", MeetingSpec(principal=ALICE), owner="anonymous")
    await session.handle(utt(0, "Alice?"), conn)
    await session.handle(Leave(type="leave", reason="bye"), conn)
    assert session.closed and sessions.get("m", "anonymous") is None
    with pytest.raises(ProtocolError) as err:
        await session.handle(utt(1, "Hello?"), conn)
    assert err.value.code == ErrorCode.meeting_closed
    kinds = [e.kind for e in read_events(store.path, "m")]
    assert kinds[-2:] == [AuditKind.decision_dropped, AuditKind.left]
    with pytest.raises(ProtocolError) as again:
        await sessions.open("m", MeetingSpec(principal=ALICE), owner="anonymous")
    assert again.value.code == ErrorCode.meeting_closed


async def test_a_new_connection_retires_the_old_one(store: SQLiteStore) -> None:
    old, new = Recorder(), Recorder()
    async with make_session(store, NamedEngine()) as session:
        await session.handle(utt(0, "Hi."), old)
        await session.handle(Join(type="join"), new)
        await settle(session)
    assert old.closed == 4000 and new.closed is None


def _engine_factory(engine: NamedEngine) -> Callable[[str], Awaitable[NamedEngine]]:
    async def build(name: str) -> NamedEngine:
        return engine

    return build


class BrokenExtractor(PromiseExtractor):
    def observe(self, meeting: MeetingState) -> list[ProposedAction]:
        raise RuntimeError("extractor bug")


async def test_a_failing_extractor_costs_neither_the_utterance_nor_its_decision(store: SQLiteStore) -> None:
    conn = Recorder()
    async with make_session(store, NamedEngine(), actions=BrokenExtractor()) as session:
        await session.handle(utt(0, "Alice, I'll send it."), conn)
        await settle(session)
    assert [type(f) for f in conn.frames] == [Ack, DecisionMessage]
    assert len(session.state) == 1 and session.actions == {}


async def test_the_audit_log_never_holds_a_private_item(store: SQLiteStore) -> None:
    secret = "I am interviewing at another company next week."
    principal = ALICE.model_copy(
        update={"background": [*ALICE.background, BackgroundItem(context="When staffing comes up", information=secret, shareable=False)]}
    )
    session = MeetingSession(
        "p", MeetingSpec(principal=principal, attendees=["Bob"]), NamedEngine(), store, Metrics(),
        owner="anonymous", max_text_chars=1000,
    )
    async with session:
        await session.handle(utt(0, "Alice, are you staying on the team next quarter?"), Recorder())
        await settle(session)
    events = read_events(store.path, "p")
    created = next(e for e in events if e.kind == AuditKind.meeting_created)
    assert created.payload["private_items"] == 1
    assert all(secret not in json.dumps(e.payload) for e in events)


async def test_a_long_turn_is_extracted_off_the_loop_with_the_same_result(store: SQLiteStore) -> None:
    extractor = PromiseExtractor()
    session = MeetingSession(
        "long", MeetingSpec(principal=ALICE, attendees=["Bob"]), NamedEngine(), store, Metrics(),
        owner="anonymous", max_text_chars=20_000, actions=extractor,
    )
    long_turn = "Some background on the budget. " * 80 + "I'll send the numbers to Alice."
    conn = Recorder()
    async with session:
        await session.handle(utt(0, long_turn), conn)
        await settle(session)
    assert list(session.actions) == ["a0"]
    assert [f.action.id for f in conn.frames if isinstance(f, ActionMessage)] == ["a0"]
