"""The service end to end against a real uvicorn server on 127.0.0.1: a scripted meeting, REST, faults."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from delegate.server.app import run
from delegate.store import AuditKind, print_audit, read_events
from testkit.live import (
    ALICE,
    LiveServer,
    expect_error,
    join,
    open_ws,
    recv,
    say,
    send,
)

# A meeting as a timeline: who says what, in order; the third line asks the principal by name.
TIMELINE = [
    (0, "Bob", "Good morning everyone, let's go through the release checklist."),
    (1, "Carol", "The build has been green since Tuesday."),
    (2, "Bob", "Alice, can you tell us where the database migration stands?"),
]


async def run_timeline(ws: Any) -> list[dict[str, Any]]:
    return [(await say(ws, uid, speaker, text))["decision"] for uid, speaker, text in TIMELINE]


async def test_scripted_meeting_gets_a_decision_per_utterance_and_speaks_when_asked(
    server: LiveServer,
) -> None:
    async with await open_ws(server, "standup-1") as ws:
        ack = await join(ws, attendees=["Bob", "Carol", "Alice Smith"])
        assert ack["last_utterance_id"] is None
        decisions = await run_timeline(ws)
    assert [d["utterance_id"] for d in decisions] == [0, 1, 2]
    assert all(d["engine"] == "local" for d in decisions)
    assert decisions[2]["speak"].strip(), "asked by name, the delegate should answer"
    assert decisions[2]["scenario"] == "explicit_cue"

    async with httpx.AsyncClient(base_url=server.url) as http:
        info = (await http.get("/v1/meetings/standup-1")).json()
        listed = (await http.get("/v1/meetings/standup-1/decisions")).json()
        actions = await http.get("/v1/meetings/standup-1/actions")
        metrics = (await http.get("/metrics")).text
        health = (await http.get("/healthz")).json()
    assert info["utterances"] == 3 and info["last_utterance_id"] == 2 and info["decisions"] == 3
    assert info["principal"] == "Alice Smith" and not info["connected"]
    assert listed == decisions
    assert actions.status_code == 200 and actions.json() == []
    assert health["status"] == "ok" and health["sessions"] == 1
    assert "delegate_decision_latency_seconds_count 3.0" in metrics
    assert 'delegate_decisions_total{engine="local",spoke="true"} 1.0' in metrics
    assert "delegate_open_sessions 1.0" in metrics
    assert "delegate_speak_rate 0.33" in metrics
    assert "process_resident_memory_bytes" in metrics


async def test_decisions_are_in_the_audit_log_before_the_client_hears_them(server: LiveServer) -> None:
    async with await open_ws(server, "audit-first") as ws:
        await join(ws)
        for uid, speaker, text in TIMELINE:
            frame = await say(ws, uid, speaker, text)
            kinds = [(e.kind, e.utterance_id) for e in read_events(server.settings.db_path, "audit-first")]
            assert (AuditKind.utterance, uid) in kinds
            assert (AuditKind.decision, uid) in kinds
            logged = next(
                e
                for e in read_events(server.settings.db_path, "audit-first")
                if e.kind == "decision" and e.utterance_id == uid
            )
            assert logged.payload["speak"] == frame["decision"]["speak"]


async def test_rest_created_meeting_streams_without_join(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        created = await http.post("/v1/meetings", json={"principal": ALICE, "attendees": ["Bob"]})
        assert created.status_code == 201
        meeting_id = created.json()["meeting_id"]
        duplicate = await http.post("/v1/meetings", json={"principal": ALICE, "meeting_id": meeting_id})
        assert duplicate.status_code == 409 and duplicate.json()["code"] == "conflict"
    async with await open_ws(server, meeting_id) as ws:
        decision = await say(ws, 0, "Bob", "Alice, are you with us?")
    assert decision["meeting_id"] == meeting_id


async def test_rest_errors_carry_a_code(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        missing = await http.get("/v1/meetings/nope")
        no_principal = await http.post("/v1/meetings", json={"attendees": []})
        bad_engine = await http.post("/v1/meetings", json={"principal": ALICE, "engine": "oracle"})
        bad_id = await http.post("/v1/meetings", json={"principal": ALICE, "meeting_id": "../etc"})
    assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    assert (no_principal.status_code, no_principal.json()["code"]) == (422, "bad_message")
    assert "principal" in no_principal.json()["detail"]
    assert (bad_engine.status_code, bad_engine.json()["code"]) == (400, "bad_engine")
    assert bad_id.status_code == 422


# Each bad frame gets its error code and changes nothing: the session goes on afterwards.
BAD_FRAMES: list[tuple[str, str | bytes, str]] = [
    ("malformed json", '{"type": "utterance", "id": 3,', "bad_json"),
    ("not an object", "[1, 2, 3]", "bad_message"),
    ("unknown type", '{"type": "shout", "text": "hi"}', "unknown_type"),
    ("missing type", '{"id": 3, "speaker": "Bob", "text": "hi"}', "bad_message"),
    ("missing field", '{"type": "utterance", "id": 3, "speaker": "Bob"}', "bad_message"),
    (
        "wrong field type",
        '{"type": "utterance", "id": "three", "speaker": "Bob", "text": "hi"}',
        "bad_message",
    ),
    ("negative id", '{"type": "utterance", "id": -1, "speaker": "Bob", "text": "hi"}', "bad_message"),
    ("duplicate id", '{"type": "utterance", "id": 2, "speaker": "Bob", "text": "again"}', "bad_utterance_id"),
    ("id going back", '{"type": "utterance", "id": 1, "speaker": "Bob", "text": "back"}', "bad_utterance_id"),
    ("empty text", '{"type": "utterance", "id": 3, "speaker": "Bob", "text": ""}', "empty_text"),
    ("blank text", '{"type": "utterance", "id": 3, "speaker": "Bob", "text": "  \\n "}', "empty_text"),
    (
        "text over the limit",
        json.dumps({"type": "utterance", "id": 3, "speaker": "Bob", "text": "word " * 400}),
        "too_large",
    ),
    (
        "100 kB text",
        json.dumps({"type": "utterance", "id": 3, "speaker": "Bob", "text": "x" * 100_000}),
        "too_large",
    ),
    ("frame over the limit", json.dumps({"type": "leave", "reason": "r" * 9000}), "too_large"),
    (
        "lone surrogate",
        '{"type": "utterance", "id": 3, "speaker": "Bob", "text": "caf\\udce9"}',
        "bad_encoding",
    ),
    ("binary garbage", bytes(range(256)) * 4, "binary_not_supported"),
    ("audio at 100 Hz", '{"type": "audio_start", "sample_rate": 100}', "bad_audio"),
    ("feedback on nothing", '{"type": "feedback", "verdict": "approve", "action_id": "a-404"}', "not_found"),
    ("feedback without target", '{"type": "feedback", "verdict": "approve"}', "bad_message"),
    ("other principal", json.dumps({"type": "join", "principal": {"name": "Mallory"}}), "conflict"),
    ("other engine", json.dumps({"type": "join", "engine": "hybrid"}), "conflict"),
]


@pytest.fixture
def strict_server(make_server: Callable[..., LiveServer]) -> LiveServer:
    return make_server(max_frame_bytes=8192, max_text_chars=1000)


async def test_bad_frames_get_error_codes_and_lose_nothing(strict_server: LiveServer) -> None:
    async with await open_ws(strict_server, "faults") as ws:
        await join(ws)
        await run_timeline(ws)
        for name, frame, code in BAD_FRAMES:
            await ws.send(frame)
            error = await expect_error(ws, code)
            assert error["code"] == code, name
        follow_up = await say(ws, 3, "Carol", "Alice, anything else from your side?")
    assert follow_up["decision"]["utterance_id"] == 3
    async with httpx.AsyncClient(base_url=strict_server.url) as http:
        info = (await http.get("/v1/meetings/faults")).json()
        metrics = (await http.get("/metrics")).text
    assert info["utterances"] == 4 and info["decisions"] == 4
    assert 'delegate_errors_total{code="bad_json"} 1.0' in metrics
    kinds = [e.kind for e in read_events(strict_server.settings.db_path, "faults")]
    assert kinds.count(AuditKind.utterance) == 4 and kinds.count(AuditKind.decision) == 4


async def test_first_frame_must_be_join_on_a_new_meeting(server: LiveServer) -> None:
    async with await open_ws(server, "fresh") as ws:
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": "hello"})
        await expect_error(ws, "not_joined")
        await send(ws, {"type": "join"})
        await expect_error(ws, "not_found")
        await join(ws)
        await say(ws, 0, "Bob", "hello")


async def test_bad_meeting_id_is_refused(server: LiveServer) -> None:
    async with await open_ws(server, "a%20b") as ws:
        await expect_error(ws, "bad_meeting_id")  # on connecting: no frame can make a meeting of it


async def test_invalid_utf8_closes_the_connection_but_the_session_survives(server: LiveServer) -> None:
    async with await open_ws(server, "utf8") as ws:
        await join(ws)
        await run_timeline(ws)
        # RFC 6455 makes the transport fail a text frame that is not UTF-8 (close code 1007).
        await ws.send(b'{"type": "utterance", "id": 3, "speaker": "Bob", "text": "\xff\xfe"}', text=True)
        with pytest.raises(ConnectionClosed) as closed:
            await recv(ws)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    async with await open_ws(server, "utf8") as ws:
        ack = await join(ws, principal=None, last_utterance_id=2)
        assert ack["last_utterance_id"] == 2
        resent = await recv(ws)
        assert resent["type"] == "decision" and resent["resumed"] and resent["decision"]["utterance_id"] == 2
        await say(ws, 3, "Bob", "Back again: Alice, any blockers?")


async def test_abrupt_disconnect_then_resume_loses_nothing(server: LiveServer) -> None:
    ws = await open_ws(server, "flaky")
    await join(ws)
    received = await run_timeline(ws)
    await send(ws, {"type": "utterance", "id": 3, "speaker": "Bob", "text": "Alice, did the vendor reply?"})
    assert (await recv(ws))["utterance_id"] == 3
    ws.transport.abort()  # no close handshake: the client just vanishes

    async with await open_ws(server, "flaky") as ws:
        ack = await join(ws, principal=None, last_utterance_id=3)
        assert ack["last_utterance_id"] == 3
        frame = await recv(ws)
        assert frame["type"] == "decision" and frame["decision"]["utterance_id"] == 3
        received.append(frame["decision"])
        received.append((await say(ws, 4, "Carol", "Let's move on to the budget."))["decision"])

    async with httpx.AsyncClient(base_url=server.url) as http:
        listed = (await http.get("/v1/meetings/flaky/decisions")).json()
    assert listed == received
    events = read_events(server.settings.db_path, "flaky")
    assert [e.utterance_id for e in events if e.kind == AuditKind.utterance] == [0, 1, 2, 3, 4]
    assert [e.utterance_id for e in events if e.kind == AuditKind.decision] == [0, 1, 2, 3, 4]


async def test_a_second_connection_replaces_the_first(server: LiveServer) -> None:
    first = await open_ws(server, "handover")
    await join(first)
    await say(first, 0, "Bob", "Morning all.")
    async with await open_ws(server, "handover") as second:
        await join(second, principal=None, last_utterance_id=0)
        assert (await recv(second))["resumed"]
        with pytest.raises(ConnectionClosed) as closed:
            await recv(first)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4000
        await say(second, 1, "Bob", "Alice, are you on the call?")


async def test_leave_ends_the_meeting_and_its_id_cannot_be_reused(server: LiveServer) -> None:
    async with await open_ws(server, "done") as ws:
        await join(ws)
        await say(ws, 0, "Bob", "That's all for today.")
        await send(ws, {"type": "leave", "reason": "meeting over"})
        assert (await recv(ws))["of"] == "leave"
        with pytest.raises(ConnectionClosed):
            await recv(ws)
    async with await open_ws(server, "done") as ws:
        await send(ws, {"type": "join", "principal": ALICE})
        await expect_error(ws, "meeting_closed")
    assert read_events(server.settings.db_path, "done")[-1].kind == AuditKind.left


async def test_idle_sessions_are_closed_but_connected_ones_are_not(
    make_server: Callable[..., LiveServer],
) -> None:
    live = make_server(session_idle_seconds=0.3)
    async with await open_ws(live, "kept") as kept:
        await join(kept)
        async with await open_ws(live, "abandoned") as ws:
            await join(ws)
            await say(ws, 0, "Bob", "Hello?")
        await asyncio.sleep(1.0)
        async with httpx.AsyncClient(base_url=live.url) as http:
            # The abandoned meeting has ended: it is read from the audit log now.
            assert (await http.get("/v1/meetings/abandoned")).json()["ended"] is True
            assert (await http.get("/v1/meetings/kept")).json()["ended"] is False
        await say(kept, 0, "Bob", "Still here.")
    closed = read_events(live.settings.db_path, "abandoned")[-1]
    assert closed.kind == AuditKind.closed and closed.payload["reason"] == "idle"


async def test_a_meeting_survives_a_server_restart_and_a_left_one_stays_closed(
    make_server: Callable[..., LiveServer], capsys: pytest.CaptureFixture[str]
) -> None:
    first = make_server()
    async with await open_ws(first, "before-restart") as ws:
        await join(ws, attendees=["Bob", "Carol"])
        decisions = await run_timeline(ws)
        await send(ws, {"type": "utterance", "id": 3, "speaker": "Bob", "text": "I will send the release notes to Carol by Friday."})
        frames = [await recv(ws) for _ in range(3)]
        assert sorted(f["type"] for f in frames) == ["ack", "action", "decision"], frames
    async with httpx.AsyncClient(base_url=first.url) as http:
        actions = (await http.get("/v1/meetings/before-restart/actions")).json()
    assert actions, "the commitment should be proposed as an action"
    before = read_events(first.settings.db_path, "before-restart")
    first.stop()

    second = make_server()
    after = read_events(second.settings.db_path, "before-restart")
    assert after == before, "stopping the server ends no meeting"
    async with httpx.AsyncClient(base_url=second.url) as http:
        info = (await http.get("/v1/meetings/before-restart")).json()
        assert info["last_utterance_id"] == 3 and info["utterances"] == 4 and info["decisions"] == 4
        assert (await http.get("/v1/meetings/before-restart/decisions")).json()[:3] == decisions
        assert (await http.get("/v1/meetings/before-restart/actions")).json() == actions
    async with await open_ws(second, "before-restart") as ws:
        ack = await join(ws, principal=None, last_utterance_id=3)
        assert ack["last_utterance_id"] == 3
        resent = await recv(ws)  # as after a plain disconnect: the decision on the latest utterance
        assert resent["resumed"] and resent["decision"]["utterance_id"] == 3
        again = await say(ws, 4, "Bob", "Alice, anything else on the database migration?")
        # What the delegate said before the restart is not said again after it.
        assert decisions[2]["speak"] and again["decision"]["speak"] != decisions[2]["speak"]
        await send(ws, {"type": "leave"})
        assert (await recv(ws))["of"] == "leave"
    kinds = [e.kind for e in read_events(second.settings.db_path, "before-restart")]
    assert kinds.count(AuditKind.meeting_created) == 1 and AuditKind.taken_over in kinds
    second.stop()

    third = make_server()
    async with await open_ws(third, "before-restart") as ws:
        await send(ws, {"type": "join", "last_utterance_id": 4})
        await expect_error(ws, "meeting_closed")
    async with await open_ws(third, "before-restart") as ws:
        await send(ws, {"type": "join", "principal": ALICE})
        await expect_error(ws, "meeting_closed")
    async with await open_ws(third, "after-restart") as ws:
        await join(ws)
        await say(ws, 0, "Bob", "New meeting, same database.")

    capsys.readouterr()
    print_audit("before-restart", third.settings.db_path)
    out = capsys.readouterr().out
    assert "Alice, can you tell us" in out and "taken_over" in out and "left" in out


async def test_a_slow_client_does_not_hold_up_other_meetings(server: LiveServer) -> None:
    """Many meetings at once on one loop, beside a client that never sends anything: all get every decision.

    `recv` gives each frame 5 s, a deadline for a hang, not a speed check."""

    async def meeting(k: int) -> int:
        async with await open_ws(server, f"parallel-{k}") as ws:
            await join(ws)
            return len(await run_timeline(ws))

    idle = await open_ws(server, "silent")  # connected, never sends anything
    decided = await asyncio.gather(*(meeting(k) for k in range(20)))
    assert idle.state is State.OPEN  # still waiting, and nobody waited for it
    await idle.close()
    assert decided == [len(TIMELINE)] * 20


def test_run_refuses_to_bind_beyond_loopback_without_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELEGATE_API_TOKENS", "")
    with pytest.raises(SystemExit) as exit_:
        run(host="0.0.0.0", port=1)
    assert exit_.value.code == 2


async def frames_until_decision(ws: Any, uid: int) -> list[dict[str, Any]]:
    frames = [await recv(ws)]
    while not (frames[-1]["type"] == "decision" and frames[-1]["decision"]["utterance_id"] == uid):
        frames.append(await recv(ws))
    return frames


async def frames_until_action(ws: Any) -> list[dict[str, Any]]:
    """Frames up to the next `action` (an utterance's actions come a beat after its decision)."""
    frames = [await recv(ws)]
    while frames[-1]["type"] != "action":
        frames.append(await recv(ws))
    return frames


async def test_action_items_are_proposed_and_approved_over_the_stream(server: LiveServer) -> None:
    async with await open_ws(server, "actions") as ws:
        await join(ws)
        await send(
            ws,
            {
                "type": "utterance",
                "id": 0,
                "speaker": "Carol",
                "text": "I will review the release notes tomorrow.",
            },
        )
        frames = await frames_until_decision(ws, 0)
        if not any(f["type"] == "action" for f in frames):
            frames += await frames_until_action(ws)
        proposed = [f["action"] for f in frames if f["type"] == "action"]
        assert (
            len(proposed) == 1
            and proposed[0]["assignees"] == ["Carol"]
            and proposed[0]["status"] == "proposed"
        )
        action_id = proposed[0]["id"]
        await send(ws, {"type": "feedback", "verdict": "approve", "action_id": action_id})
        assert (await recv(ws))["action_id"] == action_id
        updated = await recv(ws)
        assert updated["type"] == "action" and updated["action"]["status"] == "approved"
    async with httpx.AsyncClient(base_url=server.url) as http:
        listed = (await http.get("/v1/meetings/actions/actions")).json()
    assert [(a["id"], a["status"]) for a in listed] == [(action_id, "approved")]
    events = read_events(server.settings.db_path, "actions")
    assert [e.kind for e in events if e.kind in (AuditKind.action, AuditKind.feedback)] == [
        AuditKind.action,
        AuditKind.feedback,
    ]


async def test_a_request_goes_out_as_an_action_when_its_addressee_accepts_it(server: LiveServer) -> None:
    request = "Carol, could you send the release notes to the vendor by Friday?"
    async with await open_ws(server, "accepted") as ws:
        await join(ws, attendees=["Dave", "Carol"])
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Dave", "text": request})
        asked = await frames_until_decision(ws, 0)
        await send(ws, {"type": "utterance", "id": 1, "speaker": "Carol", "text": "Sure, no problem."})
        answered = await frames_until_decision(ws, 1)
        if not any(f["type"] == "action" for f in answered):
            answered += await frames_until_action(ws)
    assert [f for f in asked if f["type"] == "action"] == []  # asked, not yet accepted
    [action] = [f["action"] for f in answered if f["type"] == "action"]
    assert action["assignees"] == ["Carol"] and action["accepted_by_utterance"] == 1
    assert action["supporting_excerpt"] == request and action["due"] == "by Friday"
    assert action["due_date"] is not None  # a live meeting is dated today


async def test_health_fails_when_the_audit_log_cannot_be_written(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        assert (await http.get("/healthz")).status_code == 200
        store = server.server.config.app.state.service.store
        store._stop.set()  # what a dead checkpointer thread looks like from outside
        await asyncio.to_thread(store._thread.join, 5)
        down = await http.get("/healthz")
    assert down.status_code == 503 and down.json()["status"] == "audit_log_down"


async def test_an_event_the_log_cannot_hold_is_refused_alone_and_the_meeting_goes_on(server: LiveServer) -> None:
    async with await open_ws(server, "poisoned") as ws:
        await join(ws)
        await ws.send('{"type": "utterance", "id": 0, "speaker": "Bob", "text": "hi", "start": Infinity}')
        await expect_error(ws, "bad_message")
        await send(ws, {"type": "utterance", "id": 2**63, "speaker": "Bob", "text": "hi"})
        await expect_error(ws, "bad_message")
        await say(ws, 1, "Bob", "Alice, where does the migration stand?")
    kinds = [(e.kind, e.utterance_id) for e in read_events(server.settings.db_path, "poisoned")]
    assert (AuditKind.utterance, 1) in kinds and (AuditKind.utterance, 0) not in kinds
