"""Approval end to end on a real server: held speech reaches the bot only once approved, watchers see everything."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection

from delegate.models import Profile, Utterance
from delegate.server.approval import floor_moved
from delegate.store import AuditKind, read_events
from testkit.live import (
    ALICE,
    LiveServer,
    expect_error,
    join,
    open_ws,
    recv,
    send,
    watch,
)

ASKED = "Alice, where does the database migration stand?"
"""Asked by name about her background: the local engine answers with the migration item."""

PRIVATE_ALICE = {
    **ALICE,
    "background": [
        *ALICE["background"],
        {"context": "if asked who is buying us", "information": "The buyer is Globex.", "shareable": False},
    ],
}


async def utter(ws: ClientConnection, uid: int, speaker: str, text: str) -> None:
    await send(ws, {"type": "utterance", "id": uid, "speaker": speaker, "text": text})
    ack = await recv(ws)
    assert ack["type"] == "ack" and ack["utterance_id"] == uid, ack


async def nothing_comes(ws: ClientConnection, within: float = 0.4) -> None:
    with pytest.raises(TimeoutError):
        frame = await recv(ws, timeout=within)
        raise AssertionError(f"the bot got {frame}")


async def held_speech(ws: ClientConnection, live: LiveServer, meeting_id: str, uid: int = 1) -> str:
    """Say something that makes the delegate speak; returns the held text (seen by a watcher, not the bot)."""
    async with watch(live, meeting_id) as events:
        await events.until("live")
        await utter(ws, uid, "Bob", ASKED)
        seen = await events.until("speech_pending", utterance_id=uid)
    decision = next(e for e in seen if e["type"] == "decision")
    assert decision["approval"] == "pending" and decision["decision"]["speak"] == seen[-1]["text"]
    await nothing_comes(ws)
    return seen[-1]["text"]


async def start(live: LiveServer, meeting_id: str, approval: str = "speech", principal: Any = ALICE) -> ClientConnection:
    ws = await open_ws(live, meeting_id)
    await join(ws, principal, attendees=["Bob", "Carol"], approval=approval)
    await utter(ws, 0, "Bob", "Morning all.")
    silent = await recv(ws)  # silent decisions are not held
    assert silent["type"] == "decision" and silent["approval"] == "none" and not silent["decision"]["speak"]
    return ws


def resolutions(live: LiveServer, meeting_id: str) -> list[dict[str, Any]]:
    return [
        {"utterance_id": e.utterance_id, **e.payload}
        for e in read_events(live.settings.db_path, meeting_id)
        if e.kind == AuditKind.speech_resolved
    ]


async def test_held_speech_reaches_the_bot_only_once_approved(server: LiveServer) -> None:
    ws = await start(server, "approve")
    async with ws:
        text = await held_speech(ws, server, "approve")
        assert "Friday" in text
        async with httpx.AsyncClient(base_url=server.url) as http:
            decided = (await http.get("/v1/meetings/approve/decisions")).json()
            assert decided[-1]["speak"] == text  # the record holds what was proposed
            r = await http.post("/v1/meetings/approve/speech/1", json={"verdict": "approve"})
            assert r.status_code == 200 and r.json() == {"utterance_id": 1, "status": "approved", "text": text}
            frame = await recv(ws)
            assert frame["type"] == "decision" and frame["approval"] == "approved"
            assert frame["decision"]["utterance_id"] == 1 and frame["decision"]["speak"] == text
            again = await http.post("/v1/meetings/approve/speech/1", json={"verdict": "reject"})
            assert again.status_code == 409 and again.json()["code"] == "not_pending"
            never = await http.post("/v1/meetings/approve/speech/0", json={"verdict": "approve"})
            assert never.status_code == 404 and never.json()["code"] == "not_found"
    assert [(r["utterance_id"], r["status"], r["text"]) for r in resolutions(server, "approve")] == [(1, "approved", text)]


async def test_an_edit_is_what_the_bot_says(server: LiveServer) -> None:
    ws = await start(server, "edit")
    async with ws:
        await held_speech(ws, server, "edit")
        edited = "We finish the migration on Friday, and I will confirm by mail."
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post("/v1/meetings/edit/speech/1", json={"verdict": "approve", "text": edited})
        assert r.json() == {"utterance_id": 1, "status": "edited", "text": edited}
        frame = await recv(ws)
        assert frame["approval"] == "edited" and frame["decision"]["speak"] == edited
    assert [(r["status"], r["text"]) for r in resolutions(server, "edit")] == [("edited", edited)]


async def test_a_rejected_speech_never_reaches_the_bot(server: LiveServer) -> None:
    ws = await start(server, "reject")
    async with ws:
        text = await held_speech(ws, server, "reject")
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post("/v1/meetings/reject/speech/1", json={"verdict": "reject", "comment": "not now"})
        assert r.json()["status"] == "rejected"
        frame = await recv(ws)
        assert frame["type"] == "decision" and frame["approval"] == "rejected"
        assert frame["decision"]["speak"] == "" and text not in json.dumps(frame)
        # The meeting goes on as usual.
        await utter(ws, 2, "Carol", "Let's move on to the budget.")
        assert (await recv(ws))["decision"]["utterance_id"] == 2
    assert [(r["status"], r["comment"]) for r in resolutions(server, "reject")] == [("rejected", "not now")]


async def test_another_speakers_turn_expires_the_pending_speech(server: LiveServer) -> None:
    ws = await start(server, "newer")
    async with ws:
        text = await held_speech(ws, server, "newer")
        await send(ws, {"type": "utterance", "id": 2, "speaker": "Carol", "text": "Never mind, next topic."})
        expired = await recv(ws)  # before the newer utterance's ack
        assert expired["type"] == "decision" and expired["approval"] == "expired"
        assert expired["decision"]["utterance_id"] == 1 and not expired["decision"]["speak"]
        assert (await recv(ws))["of"] == "utterance"
        async with httpx.AsyncClient(base_url=server.url) as http:
            late = await http.post("/v1/meetings/newer/speech/1", json={"verdict": "approve"})
        assert late.status_code == 409 and late.json()["code"] == "not_pending"
    assert resolutions(server, "newer") == [
        {"utterance_id": 1, "status": "expired", "text": text, "reason": "floor_moved"}
    ]


@pytest.mark.parametrize(
    ("asker", "speaker", "text", "reason"),
    [
        ("Bob", "Carol", "Mm-hmm.", None),
        ("Bob", "Carol", "Okay, right.", None),
        ("Bob", "Bob", "I mean for the Berlin site.", None),
        ("Bob", "Carol", "I can answer that: it is late.", "floor_moved"),
        ("Bob", "Alice", "Let me take this one.", "principal_spoke"),
        ("Bob", "PERSON4", "Yeah.", "principal_spoke"),
        ("unknown", "unknown", "I mean for the Berlin site.", "floor_moved"),  # anyone: not known to be the asker
        ("unknown", "unknown", "Yeah.", None),
    ],
)
def test_the_floor_moves_on_another_speakers_turn_or_the_principals(
    asker: str, speaker: str, text: str, reason: str | None
) -> None:
    principal = Profile.model_validate({**ALICE, "label": "PERSON4"})
    cued_by = Utterance(id=4, speaker=asker, text=ASKED)
    assert floor_moved(cued_by, Utterance(id=5, speaker=speaker, text=text), principal) == reason


async def silent_decision(ws: ClientConnection, uid: int, speaker: str, text: str) -> None:
    """An utterance the bot hears nothing for but its ack and its own silent decision."""
    await utter(ws, uid, speaker, text)
    frame = await recv(ws)
    assert frame["type"] == "decision" and frame["decision"]["utterance_id"] == uid, frame
    assert frame["approval"] == "none" and not frame["decision"]["speak"], frame


async def test_a_held_speech_outlasts_backchannels_and_the_askers_follow_up(server: LiveServer) -> None:
    """In a live meeting the next utterance comes within a second: the principal needs longer to decide."""
    ws = await start(server, "floor")
    async with ws:
        text = await held_speech(ws, server, "floor")
        await silent_decision(ws, 2, "Carol", "Mm-hmm.")
        await silent_decision(ws, 3, "Bob", "I mean for the Berlin site.")
        await silent_decision(ws, 4, "Carol", "Okay.")
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post("/v1/meetings/floor/speech/1", json={"verdict": "approve"})
        assert r.status_code == 200 and r.json()["status"] == "approved", r.json()
        frame = await recv(ws)
        assert frame["type"] == "decision" and frame["approval"] == "approved" and not frame["resumed"]
        assert frame["decision"]["utterance_id"] == 1 and frame["decision"]["speak"] == text
    assert resolutions(server, "floor") == [
        {"utterance_id": 1, "status": "approved", "text": text, "reason": None, "verdict": "approve", "comment": ""}
    ]


@pytest.mark.parametrize("speaker", ["Alice Smith", "alice", "PERSON4"])
async def test_the_principal_speaking_expires_the_pending_speech(server: LiveServer, speaker: str) -> None:
    meeting_id = f"own-{speaker.replace(' ', '-')}"
    ws = await start(server, meeting_id, principal={**ALICE, "label": "PERSON4"})
    async with ws:
        text = await held_speech(ws, server, meeting_id)
        await send(ws, {"type": "utterance", "id": 2, "speaker": speaker, "text": "Yeah."})
        expired = await recv(ws)
        assert expired["approval"] == "expired" and expired["decision"]["utterance_id"] == 1
        assert not expired["decision"]["speak"]
        assert (await recv(ws))["of"] == "utterance"
    assert resolutions(server, meeting_id) == [
        {"utterance_id": 1, "status": "expired", "text": text, "reason": "principal_spoke"}
    ]


async def test_a_newer_speech_supersedes_the_pending_one(server: LiveServer) -> None:
    ws = await start(server, "twice")
    async with ws, watch(server, "twice") as events:
        await events.until("live")
        text = await held_speech(ws, server, "twice")
        await utter(ws, 2, "Bob", "Alice, and when does the database migration finish?")
        expired = await recv(ws)  # the older one, silenced; the newer one waits for the principal
        assert expired["approval"] == "expired" and expired["decision"]["utterance_id"] == 1
        seen = await events.until("speech_pending", utterance_id=2)
        assert [(e["utterance_id"], e["reason"]) for e in seen if e["type"] == "speech_resolved"] == [(1, "superseded")]
        await nothing_comes(ws)
        async with httpx.AsyncClient(base_url=server.url) as http:
            late = await http.post("/v1/meetings/twice/speech/1", json={"verdict": "approve"})
            assert late.status_code == 409
            r = await http.post("/v1/meetings/twice/speech/2", json={"verdict": "approve"})
            assert r.json()["status"] == "approved"
        frame = await recv(ws)
        assert frame["decision"]["utterance_id"] == 2 and frame["decision"]["speak"]
    assert [(r["utterance_id"], r["status"], r["reason"]) for r in resolutions(server, "twice")] == [
        (1, "expired", "superseded"), (2, "approved", None)
    ]
    assert resolutions(server, "twice")[0]["text"] == text


async def test_a_speech_settled_while_the_bot_was_away_comes_on_its_return(server: LiveServer) -> None:
    ws = await start(server, "away")
    async with ws:
        text = await held_speech(ws, server, "away")
        await silent_decision(ws, 2, "Carol", "Right.")
    async with httpx.AsyncClient(base_url=server.url) as http:
        r = await http.post("/v1/meetings/away/speech/1", json={"verdict": "approve"})
        assert r.json()["status"] == "approved"
    async with await open_ws(server, "away") as ws:
        await join(ws, principal=None, last_utterance_id=2, approval="speech")
        missed = [await recv(ws), await recv(ws)]
    assert [(f["decision"]["utterance_id"], f["approval"], f["resumed"]) for f in missed] == [
        (1, "approved", True), (2, "none", True)
    ]
    assert missed[0]["decision"]["speak"] == text


async def test_a_pending_speech_expires_after_the_timeout(make_server: Callable[..., LiveServer]) -> None:
    live = make_server(approval_timeout_s=0.5)
    ws = await start(live, "timeout")
    async with ws, watch(live, "timeout") as events:
        await events.until("live")
        await utter(ws, 1, "Bob", ASKED)
        pending = (await events.until("speech_pending"))[-1]
        resolved = (await events.until("speech_resolved"))[-1]
        assert resolved["status"] == "expired" and resolved["reason"] == "timeout"
        assert 0.3 < resolved_at(live, "timeout") - (pending["expires_at"] - 0.5) < 3
        frame = await recv(ws)
        assert frame["approval"] == "expired" and not frame["decision"]["speak"]


async def test_a_speech_kept_through_a_backchannel_still_expires_on_the_timeout(
    make_server: Callable[..., LiveServer],
) -> None:
    live = make_server(approval_timeout_s=1.0)
    ws = await start(live, "kept")
    async with ws, watch(live, "kept") as events:
        await events.until("live")
        await utter(ws, 1, "Bob", ASKED)
        await events.until("speech_pending")
        await silent_decision(ws, 2, "Carol", "Yeah.")
        resolved = (await events.until("speech_resolved"))[-1]
        assert resolved["utterance_id"] == 1 and resolved["reason"] == "timeout"
        frame = await recv(ws)
        assert frame["approval"] == "expired" and frame["decision"]["utterance_id"] == 1


def resolved_at(live: LiveServer, meeting_id: str) -> float:
    return next(e.ts for e in read_events(live.settings.db_path, meeting_id) if e.kind == AuditKind.speech_resolved)


async def test_feedback_frames_approve_edit_and_an_edit_that_leaks_is_refused(server: LiveServer) -> None:
    ws = await start(server, "wire", principal=PRIVATE_ALICE)
    async with ws:
        await held_speech(ws, server, "wire")
        await send(ws, {"type": "feedback", "verdict": "approve", "utterance_id": 1, "text": "Yes, the buyer is Globex."})
        refused = await expect_error(ws, "private_text")
        assert "Globex" not in refused["detail"] and refused["utterance_id"] == 1
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post(
                "/v1/meetings/wire/speech/1", json={"verdict": "approve", "text": "It is G-L-O-B-E-X, by the way."}
            )
            assert r.status_code == 422 and r.json()["code"] == "private_text"
        await nothing_comes(ws)  # still pending: nothing went out
        edited = "The migration lands on Friday."
        await send(ws, {"type": "feedback", "verdict": "approve", "utterance_id": 1, "text": edited})
        ack = await recv(ws)
        assert ack["type"] == "ack" and ack["of"] == "feedback" and ack["utterance_id"] == 1
        frame = await recv(ws)
        assert frame["type"] == "decision" and frame["approval"] == "edited" and frame["decision"]["speak"] == edited
        # On a decision that was not held there is nothing to edit; a plain verdict is still recorded.
        await send(ws, {"type": "feedback", "verdict": "approve", "utterance_id": 0, "text": "Hello."})
        await expect_error(ws, "not_pending")
        await send(ws, {"type": "feedback", "verdict": "approve", "utterance_id": 0})
        assert (await recv(ws))["of"] == "feedback"
    events = read_events(server.settings.db_path, "wire")
    assert [e.payload["status"] for e in events if e.kind == AuditKind.speech_resolved] == ["edited"]
    # Both refused edits are in the log, without their words.
    assert [e.utterance_id for e in events if e.kind == AuditKind.edit_refused] == [1, 1]
    assert not any("Globex" in json.dumps(e.payload) for e in events), "a refused edit's words are not recorded"


async def test_an_edit_that_disguises_a_private_name_with_look_alike_letters_is_refused(server: LiveServer) -> None:
    # Issue 27: Cyrillic г and Armenian ո were read as "g" and "o", and these edits went out as `edited`.
    offsite = {"context": "if the offsite comes up", "information": "The offsite is in Zanzibar.", "shareable": False}
    principal = {**ALICE, "background": [*ALICE["background"], offsite]}
    ws = await start(server, "lookalike", principal=principal)
    async with ws:
        await held_speech(ws, server, "lookalike")
        await send(ws, {"type": "feedback", "verdict": "approve", "utterance_id": 1, "text": "We meet in Zanzibaг."})
        refused = await expect_error(ws, "private_text")
        assert refused["utterance_id"] == 1
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post(
                "/v1/meetings/lookalike/speech/1", json={"verdict": "approve", "text": "The offsite: Zaոzibar."}
            )
            assert r.status_code == 422 and r.json()["code"] == "private_text"
        await nothing_comes(ws)  # still pending: nothing went out
    events = read_events(server.settings.db_path, "lookalike")
    assert [e.utterance_id for e in events if e.kind == AuditKind.edit_refused] == [1, 1]
    assert not any(e.kind == AuditKind.speech_resolved for e in events)


async def test_with_approval_all_the_bot_gets_an_action_only_once_approved(server: LiveServer) -> None:
    ws = await start(server, "all", approval="all")
    async with ws, watch(server, "all") as events:
        await events.until("live")
        frames = []
        for uid, who, text in [
            (1, "Carol", "I will review the release notes tomorrow."),
            (2, "Bob", "I will send the budget summary to Carol on Monday."),
        ]:
            await utter(ws, uid, who, text)
            frames.append(await recv(ws))
        seen: list[dict[str, Any]] = []
        while len({e["action"]["id"] for e in seen if e["type"] == "action"}) < 2:
            seen += await events.until("action")
        proposed = [e["action"] for e in seen if e["type"] == "action"]
        assert [a["status"] for a in proposed] == ["proposed", "proposed"]
        assert [f["type"] for f in frames] == ["decision", "decision"], frames  # and no action
        await nothing_comes(ws)
        keep, drop = proposed[0]["id"], proposed[1]["id"]
        async with httpx.AsyncClient(base_url=server.url) as http:
            r = await http.post(f"/v1/meetings/all/actions/{keep}", json={"verdict": "approve"})
            assert r.status_code == 200 and r.json()["status"] == "approved"
            approved = await recv(ws)
            assert approved["type"] == "action" and approved["action"]["id"] == keep
            assert approved["action"]["status"] == "approved"
            r = await http.post(f"/v1/meetings/all/actions/{drop}", json={"verdict": "reject"})
            assert r.json()["status"] == "rejected"
            await nothing_comes(ws)
            edit = await http.post(f"/v1/meetings/all/actions/{keep}", json={"verdict": "approve", "text": "x"})
            assert edit.status_code == 422 and edit.json()["code"] == "bad_message"
            missing = await http.post("/v1/meetings/all/actions/a-404", json={"verdict": "approve"})
            assert missing.status_code == 404
        watched = await events.until("action", id=drop, status="rejected")
        assert any(e["type"] == "action" and e["action"]["status"] == "approved" for e in watched)
    feedback = [e.payload for e in read_events(server.settings.db_path, "all") if e.kind == AuditKind.feedback]
    assert [(f["action_id"], f["status"]) for f in feedback] == [(keep, "approved"), (drop, "rejected")]


async def test_a_watcher_gets_the_replay_then_live_events_and_never_takes_over(server: LiveServer) -> None:
    ws = await start(server, "watched", approval="none")
    async with ws:
        await utter(ws, 1, "Bob", ASKED)
        spoken = await recv(ws)
        assert spoken["approval"] == "none" and spoken["decision"]["speak"]
        async with watch(server, "watched") as first, watch(server, "watched") as second:
            for events in (first, second):
                replay = await events.until("live")
                assert [(e["type"], about(e)) for e in replay] == [
                    ("utterance", 0), ("decision", 0), ("utterance", 1), ("decision", 1), ("live", None)
                ]
                assert replay[3]["decision"] == spoken["decision"] and replay[3]["approval"] == "none"
            await utter(ws, 2, "Carol", "I will review the release notes tomorrow.")
            to_bot = [await recv(ws), await recv(ws)]
            assert sorted(f["type"] for f in to_bot) == ["action", "decision"]
            for events in (first, second):
                live = await events.until("decision", utterance_id=2)
                if "action" not in [e["type"] for e in live]:  # action items come a beat after the utterance
                    live += await events.until("action")
                kinds = [e["type"] for e in live]
                assert kinds[0] == "utterance" and live[0]["utterance"]["text"].startswith("I will review")
                assert sorted(kinds) == ["action", "decision", "utterance"]
            async with httpx.AsyncClient(base_url=server.url) as http:
                info = (await http.get("/v1/meetings/watched")).json()
            assert info["connected"] and info["approval"] == "none"
            # The bot's connection is still the meeting's: it goes on as before.
            await utter(ws, 3, "Bob", "Thanks, moving on.")
            assert (await recv(ws))["decision"]["utterance_id"] == 3
            await send(ws, {"type": "leave", "reason": "done"})
            assert (await recv(ws))["of"] == "leave"
            for events in (first, second):
                end = await events.until("meeting_ended")
                assert end[-1]["reason"] == "done"
                assert await events.next() is None  # the stream ends with the meeting


def about(event: dict[str, Any]) -> int | None:
    """The utterance an event is about."""
    if "utterance" in event:
        return event["utterance"]["id"]
    return event["decision"]["utterance_id"] if "decision" in event else event.get("utterance_id")


async def test_an_ended_meeting_replays_its_speech_and_the_audit_log_downloads(
    make_server: Callable[..., LiveServer],
) -> None:
    live = make_server(api_tokens="tok-a,tok-b")
    ws = await open_ws(live, "weekly", token="tok-a")
    a = {"Authorization": "Bearer tok-a"}
    b = {"Authorization": "Bearer tok-b"}
    async with ws:
        await join(ws, attendees=["Bob"], approval="speech")
        await utter(ws, 0, "Bob", ASKED)
        async with httpx.AsyncClient(base_url=live.url) as http:
            for _ in range(200):  # until the decision is made and held
                r = await http.post("/v1/meetings/weekly/speech/0", json={"verdict": "reject"}, headers=a)
                if r.status_code != 404:
                    break
                await asyncio.sleep(0.05)
            assert r.json()["status"] == "rejected"
            assert (await recv(ws))["approval"] == "rejected"
            live_audit = await http.get("/v1/meetings/weekly/audit", headers=a)
            assert live_audit.status_code == 200
            assert live_audit.headers["content-type"].startswith("application/x-ndjson")
            await send(ws, {"type": "leave"})
            assert (await recv(ws))["of"] == "leave"
            for path in ("/audit", "/events", "/speech/0"):
                method = http.post if path == "/speech/0" else http.get
                kwargs = {"json": {"verdict": "approve"}} if path == "/speech/0" else {}
                assert (await method(f"/v1/meetings/weekly{path}", headers=b, **kwargs)).status_code == 404
            lines = (await http.get("/v1/meetings/weekly/audit", headers=a)).text.splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
    assert {r["meeting_id"] for r in records} == {"weekly"}
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "meeting_created" and kinds[-1] == "left" and "speech_resolved" in kinds
    assert records[0]["payload"]["approval"] == "speech"
    assert len(lines) > len(live_audit.text.splitlines())
    async with watch(live, "weekly", token="tok-a") as events:
        replay = [e async for e in _all(events)]
    assert [e["type"] for e in replay] == ["utterance", "decision", "speech_resolved", "meeting_ended"]
    assert replay[1]["approval"] == "rejected" and replay[2]["status"] == "rejected"


async def _all(events: Any) -> Any:
    while (event := await events.next()) is not None:
        yield event


async def test_approval_survives_a_restart_and_the_pending_speech_expires(
    make_server: Callable[..., LiveServer],
) -> None:
    first = make_server()
    ws = await start(first, "restart")
    async with ws:
        text = await held_speech(ws, first, "restart")
    first.stop()

    second = make_server()
    async with await open_ws(second, "restart") as ws:
        await send(ws, {"type": "join", "last_utterance_id": 1, "approval": "none"})
        await expect_error(ws, "conflict")  # the meeting keeps the setting it was created with
        ack = await join(ws, principal=None, last_utterance_id=1, approval="speech")
        assert ack["last_utterance_id"] == 1
        resent = await recv(ws)  # its speech expired when this process took the meeting over
        assert resent["resumed"] and resent["approval"] == "expired" and not resent["decision"]["speak"]
        async with httpx.AsyncClient(base_url=second.url) as http:
            assert (await http.get("/v1/meetings/restart")).json()["approval"] == "speech"
        # Still held after the restart; and the expired speech did not count as said.
        async with watch(second, "restart") as events:
            replay = await events.until("live")
            assert [e["status"] for e in replay if e["type"] == "speech_resolved"] == ["expired"]
            await utter(ws, 2, "Bob", "Alice, so where does the database migration stand?")
            again = (await events.until("speech_pending", utterance_id=2))[-1]
        assert again["text"] == text
        await nothing_comes(ws)
    assert resolutions(second, "restart") == [
        {"utterance_id": 1, "status": "expired", "text": text, "reason": "taken_over"}
    ]


async def test_approval_frames_refuse_unknown_fields(server: LiveServer) -> None:
    async with await open_ws(server, "strict") as ws:
        await send(ws, {"type": "join", "principal": ALICE, "approval": "some"})
        await expect_error(ws, "bad_message")
        await join(ws, approval="speech")
        for frame in [
            {"type": "feedback", "verdict": "approve", "utterance_id": 0, "text": "Hi.", "edit": "Hi."},
            {"type": "feedback", "verdict": "reject", "utterance_id": 0, "text": "Hi."},
            {"type": "feedback", "verdict": "approve", "action_id": "a1", "text": "Hi."},
            {"type": "feedback", "verdict": "approve", "utterance_id": 0, "text": "   "},
        ]:
            await send(ws, frame)
            await expect_error(ws, "bad_message")
    async with httpx.AsyncClient(base_url=server.url) as http:
        for body in [{"verdict": "approve", "txt": "x"}, {"verdict": "maybe"}, {"verdict": "reject", "text": "x"}]:
            r = await http.post("/v1/meetings/strict/speech/0", json=body)
            assert r.status_code == 422 and r.json()["code"] == "bad_message", body
        created = await http.post(
            "/v1/meetings", json={"principal": ALICE, "approval": "all", "meeting_id": "made", "approve": True}
        )
        assert created.status_code == 422
        created = await http.post("/v1/meetings", json={"principal": ALICE, "approval": "all", "meeting_id": "made"})
        assert created.status_code == 201
        assert (await http.get("/v1/meetings/made")).json()["approval"] == "all"


async def test_a_stopping_server_ends_the_event_streams(make_server: Callable[..., LiveServer]) -> None:
    live = make_server()
    ws = await start(live, "stopping", approval="none")
    async with ws, watch(live, "stopping") as events:
        await events.until("live")
        await asyncio.wait_for(asyncio.to_thread(live.stop), 20)  # uvicorn waits for open responses
        assert await events.next() is None
