"""The bot's admission as part of the meeting: silent before it is in, disclosed on entering, gone when removed."""

from __future__ import annotations

import asyncio

import httpx
from websockets.exceptions import ConnectionClosed

from delegate.store import AuditKind, read_events
from testkit.live import LiveServer, join, open_ws, recv, send, watch

QUESTION = "Alice, when does the database migration finish?"


async def admit(ws, state: str, detail: str = "") -> list[dict]:  # type: ignore[no-untyped-def]
    """Send an `admission` frame; the frames up to its ack."""
    await send(ws, {"type": "admission", "state": state, "detail": detail})
    frames = []
    while True:
        frames.append(await recv(ws))
        if frames[-1] == {**frames[-1], "type": "ack", "of": "admission"}:
            return frames


async def test_the_delegate_is_silent_until_admitted_discloses_then_answers_and_leaves_when_removed(
    server: LiveServer,
) -> None:
    async with await open_ws(server, "adm-1") as ws:
        await join(ws, admission="joining")
        assert [f["type"] for f in await admit(ws, "waiting_room", "waiting_room")] == ["ack"]
        # Heard from the lobby (a service may stream before admission): recorded, never answered aloud.
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": QUESTION})
        assert (await recv(ws))["type"] == "ack"
        early = await recv(ws)
        assert early["type"] == "decision" and early["decision"]["speak"] == ""
        assert "not in the meeting (waiting_room)" in early["decision"]["reason"]

        frames = await admit(ws, "in_meeting", "joined_recording")
        assert [f["type"] for f in frames] == ["disclosure", "ack"]
        assert "Alice Smith's AI delegate" in frames[0]["text"]
        # A service saying it again, or a state behind this one, changes nothing.
        assert [f["type"] for f in await admit(ws, "waiting_room")] == ["ack"]

        await send(ws, {"type": "utterance", "id": 1, "speaker": "Bob", "text": QUESTION})
        assert (await recv(ws))["type"] == "ack"
        answered = await recv(ws)
        assert answered["type"] == "decision" and "Friday" in answered["decision"]["speak"]

        assert [f["type"] for f in await admit(ws, "removed", "meeting_ended by Bob")] == ["ack"]
        try:
            await asyncio.wait_for(ws.recv(), 5)
            raise AssertionError("the socket stayed open after removal")
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1000

    events = read_events(server.settings.db_path, "adm-1")
    states = [e.payload["state"] for e in events if e.kind == AuditKind.admission]
    assert states == ["waiting_room", "in_meeting", "removed"]
    kinds = [e.kind for e in events]
    assert kinds.index(AuditKind.disclosure) > kinds.index(AuditKind.admission)
    assert kinds[-1] == AuditKind.closed and events[-1].payload["reason"] == "removed"
    created = next(e for e in events if e.kind == AuditKind.meeting_created)
    assert created.payload["admission"] == "joining"
    async with httpx.AsyncClient(base_url=server.url) as http:  # ended: read from the log
        info = (await http.get("/v1/meetings/adm-1")).json()
    assert info["ended"] and info["admission"] == "removed"
    async with watch(server, "adm-1") as past:
        first = await past.next()
        assert first is not None and first["type"] == "admission" and first["state"] == "removed"


async def test_watchers_and_the_meeting_info_show_where_the_bot_stands(server: LiveServer) -> None:
    async with await open_ws(server, "adm-2") as ws:
        await join(ws, admission="joining")
        async with watch(server, "adm-2") as events:
            first = await events.next()
            assert first is not None and first["type"] == "admission" and first["state"] == "joining"
            await admit(ws, "waiting_room")
            seen = await events.until("admission", state="waiting_room")
            assert seen[-1]["type"] == "admission"
            async with httpx.AsyncClient(base_url=server.url) as http:
                info = (await http.get("/v1/meetings/adm-2")).json()
            assert info["admission"] == "waiting_room"
            await admit(ws, "in_meeting")
            seen = await events.until("disclosure")
            assert [e["state"] for e in seen if e["type"] == "admission"] == ["in_meeting"]
            await admit(ws, "ended", "meeting_ended")
            seen = await events.until("meeting_ended")
            assert [e.get("state") for e in seen if e["type"] == "admission"] == ["ended"]


async def test_a_meeting_started_in_it_speaks_at_once_and_leaves_disclosure_to_its_client(server: LiveServer) -> None:
    async with await open_ws(server, "adm-3") as ws:
        await join(ws)
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": QUESTION})
        assert (await recv(ws))["type"] == "ack"
        assert "Friday" in (await recv(ws))["decision"]["speak"]
    kinds = [e.kind for e in read_events(server.settings.db_path, "adm-3")]
    assert AuditKind.disclosure not in kinds and AuditKind.admission not in kinds


async def test_an_unknown_admission_state_is_refused_and_the_session_lives_on(server: LiveServer) -> None:
    async with await open_ws(server, "adm-4") as ws:
        await join(ws, admission="joining")
        await send(ws, {"type": "admission", "state": "lobby"})
        error = await recv(ws)
        assert error["type"] == "error" and error["code"] == "bad_message" and "state" in error["detail"]
        assert [f["type"] for f in await admit(ws, "in_meeting")] == ["disclosure", "ack"]


def test_a_meeting_taken_over_from_its_log_keeps_where_its_bot_stood() -> None:
    from delegate.server.protocol import MeetingSpec
    from delegate.server.rebuild import rebuild
    from delegate.store import AuditEvent
    from testkit.live import ALICE

    spec = MeetingSpec(principal=ALICE, admission="joining")  # type: ignore[arg-type]
    events = [
        AuditEvent(meeting_id="m", kind=AuditKind.meeting_created, payload={"admission": "joining"}),
        AuditEvent(meeting_id="m", kind=AuditKind.admission, payload={"state": "waiting_room"}),
    ]
    waiting = rebuild("m", spec, events)
    assert waiting.admission == "waiting_room" and not waiting.disclosed
    events += [AuditEvent(meeting_id="m", kind=AuditKind.admission, payload={"state": "in_meeting"}),
               AuditEvent(meeting_id="m", kind=AuditKind.disclosure, payload={"text": "Hello"})]
    admitted = rebuild("m", spec, events)
    assert admitted.admission == "in_meeting" and admitted.disclosed  # said once: not again after the takeover
