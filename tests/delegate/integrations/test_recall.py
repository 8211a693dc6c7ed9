"""The Recall.ai bridge against a fake Recall on loopback (testkit/recall_fake.py, Recall's documented payloads)
and a real delegate server: a whole meeting from the bot's request to its removal."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from delegate.integrations import recall
from delegate.integrations.attend import attend, serving
from delegate.integrations.recall import RecallSettings, Status, admission_of, sign, verified
from delegate.store import AuditKind, read_events
from testkit.live import ALICE, LiveServer
from testkit.recall_fake import FakeRecall, FakeRecallBot, mp3_seconds, payload

QUESTION = "Alice, when does the database migration finish?"
MEETING_URL = "https://meet.google.com/hzj-adhd-inu"


@pytest.fixture
async def fake() -> AsyncIterator[FakeRecall]:
    service = FakeRecall()
    async with serving(service.app(), "127.0.0.1", 0) as port:
        service.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
        yield service


def settings_of(fake: FakeRecall) -> RecallSettings:
    return RecallSettings(url=fake.url, api_key=fake.api_key, webhook_secret=fake.webhook_secret)  # type: ignore[attr-defined]


async def until(check: Any, timeout: float = 20.0) -> Any:
    for _ in range(int(timeout / 0.05)):
        found = check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


def spoken(server: LiveServer, meeting_id: str) -> list[dict[str, Any]]:
    return [e.payload for e in read_events(server.settings.db_path, meeting_id) if e.kind == AuditKind.speech]


async def start(fake: FakeRecall, server: LiveServer, meeting_id: str, **kw: Any) -> tuple[asyncio.Task[Any], FakeRecallBot]:
    def public(port: int) -> str:
        fake.status_url = f"http://127.0.0.1:{port}/recall/webhook"  # the dashboard's webhook endpoint
        return f"http://127.0.0.1:{port}"

    meeting = asyncio.create_task(attend(
        MEETING_URL, ALICE, recall.service(settings_of(fake)), delegate_url=server.url, public_url=public,
        meeting_id=meeting_id, **kw,
    ))
    return meeting, await asyncio.wait_for(fake.created.get(), 20)


async def test_a_whole_meeting_through_recall(voiced: LiveServer, fake: FakeRecall) -> None:
    pytest.importorskip("av", reason="Recall's output audio is MP3: PyAV, of the audio extra")
    meeting, bot = await start(fake, voiced, "rec-1", attendees=["Bob Jones", "Carol Diaz"])
    assert bot.request["bot_name"] == "Alice Smith (AI delegate)"
    assert await bot.status("joining_call") == 200
    assert await bot.status("in_waiting_room") == 200
    assert await bot.participant(100, "Bob Jones") == 200
    assert await bot.status("in_call_not_recording") == 200
    assert await bot.status("in_call_recording") == 200  # still in the meeting: no second disclosure

    disclosure = await until(lambda: [s for s in spoken(voiced, "rec-1") if s.get("disclosure")])
    await until(lambda: len(bot.clips) == 1)
    assert abs(mp3_seconds(bot.clips[0]) - disclosure[0]["sent_ms"] / 1000) < 0.2  # all of it, as MP3

    assert await bot.transcript(100, "Bob Jones", QUESTION) == 200
    answer = await until(lambda: [s for s in spoken(voiced, "rec-1") if not s.get("disclosure")])
    assert "Friday" in answer[0]["said"]
    await until(lambda: len(bot.clips) == 2)
    assert abs(mp3_seconds(bot.clips[1]) - answer[0]["sent_ms"] / 1000) < 0.2

    # Recall transcribes the bot too: the delegate's own voice heard back is no turn of the meeting.
    assert await bot.participant(999, "Alice Smith (AI delegate)") == 200
    assert await bot.transcript(999, "Alice Smith (AI delegate)", answer[0]["said"]) == 200
    assert await bot.transcript(999, None, "Hello, this is Alice Smith's AI delegate.") == 200
    assert await bot.participant(205, "Dana Lee") == 200  # a late joiner
    assert await bot.transcript(205, "Dana Lee", "Sorry I'm late, what did I miss?") == 200
    assert await bot.participant(100, "Bob (mobile)", "update") == 200  # a display-name change
    assert await bot.transcript(100, "Bob (mobile)", "Friday it is then.") == 200
    assert await bot.transcript(311, None, "I will write the release notes.") == 200  # no name: Carol, the one left
    assert await bot.status("call_ended", "bot_kicked_from_call") == 200
    attended = await asyncio.wait_for(meeting, 20)
    assert attended.admission == "removed" and attended.utterances == 4 and bot.left

    events = read_events(voiced.settings.db_path, "rec-1")
    assert [e.payload["speaker"] for e in events if e.kind == AuditKind.utterance] == [
        "Bob Jones", "Dana Lee", "Bob Jones", "Carol Diaz"]
    assert [e.payload["text"] for e in events if e.kind == AuditKind.utterance][0] == QUESTION
    assert [e.payload["state"] for e in events if e.kind == AuditKind.admission] == [
        "waiting_room", "in_meeting", "removed"]
    assert [e.kind for e in events].count(AuditKind.disclosure) == 1
    assert events[-1].kind == AuditKind.closed and events[-1].payload["reason"] == "removed"
    everything = json.dumps([e.payload for e in events])
    assert fake.api_key not in everything and fake.webhook_secret not in everything


async def test_requests_not_signed_by_recall_change_nothing_and_retries_count_once(
    make_server: Any, fake: FakeRecall
) -> None:
    server = make_server()
    meeting, bot = await start(fake, server, "rec-2")
    other = "whsec_" + "QUJD" * 8
    assert await bot.post(bot.realtime_url, payload("transcript.data"), secret=other) == 401
    # The same message delivered twice (a retry whose first answer was lost) is one turn.
    body = payload("transcript.data")
    body["data"]["bot"]["id"] = bot.id
    raw = json.dumps(body).encode()
    now = int(time.time())
    headers = {"webhook-id": "msg_same", "webhook-timestamp": str(now), "webhook-signature": sign("msg_same", now, raw, fake.webhook_secret)}
    async with httpx.AsyncClient() as http:
        for _ in range(2):
            assert (await http.post(bot.realtime_url, content=raw, headers=headers)).status_code == 200
    assert await bot.status("call_ended") == 200
    assert (await asyncio.wait_for(meeting, 20)).admission == "ended"
    turns = [e for e in read_events(server.settings.db_path, "rec-2") if e.kind == AuditKind.utterance]
    assert [(t.payload["speaker"], t.payload["text"]) for t in turns] == [("Bob Jones", "Alice,")]


def test_svix_signatures_and_statuses_as_recall_documents_them() -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"event": "bot.in_waiting_room"}'
    now = 1731705121
    good = {"webhook-id": "msg_loFOjxBNrRLzqYUf", "webhook-timestamp": str(now),
            "webhook-signature": "v1,bogus " + sign("msg_loFOjxBNrRLzqYUf", now, body, secret)}
    assert verified(good, body, secret, now=now + 10)
    assert not verified(good, body + b" ", secret, now=now + 10)
    assert not verified(good, body, secret, now=now + 3600)  # replayed an hour later
    legacy = {k.replace("webhook-", "svix-"): v for k, v in good.items()}
    assert verified(legacy, body, secret, now=now)
    assert admission_of(Status(code="in_waiting_room")) == "waiting_room"
    assert admission_of(Status(code="in_call_recording")) == "in_meeting"
    assert admission_of(Status(code="call_ended", sub_code="bot_kicked_from_waiting_room")) == "removed"
    assert admission_of(Status(code="call_ended", sub_code="call_ended_by_host")) == "ended"
    assert admission_of(Status(code="recording_done")) is None


async def test_a_delegate_server_restart_mid_meeting_loses_no_turn_and_keeps_the_admission(
    make_server: Any, fake: FakeRecall
) -> None:
    from testkit.live import start_server

    server = make_server()
    meeting, bot = await start(fake, server, "rec-3")
    assert await bot.status("in_call_recording") == 200
    assert await bot.transcript(100, "Bob Jones", "First we look at the rollout.") == 200
    await asyncio.to_thread(server.stop)
    # Said while the server is down: the bridge holds it until its connection is back.
    during = asyncio.create_task(bot.transcript(100, "Bob Jones", "Then the migration plan."))
    await asyncio.sleep(0.5)
    server = await asyncio.to_thread(start_server, server.settings, server.port)
    try:
        assert await asyncio.wait_for(during, 30) == 200
        assert await bot.transcript(205, "Dana Lee", "And the budget last.") == 200
        async with httpx.AsyncClient(base_url=server.url) as http:
            assert (await http.get("/v1/meetings/rec-3")).json()["admission"] == "in_meeting"
        assert await bot.status("done") == 200
        assert (await asyncio.wait_for(meeting, 30)).admission == "ended"
    finally:
        server.stop()
    events = read_events(server.settings.db_path, "rec-3")
    assert [e.payload["text"] for e in events if e.kind == AuditKind.utterance] == [
        "First we look at the rollout.", "Then the migration plan.", "And the budget last."]
    assert [e.payload["state"] for e in events if e.kind == AuditKind.admission] == ["in_meeting", "ended"]
    assert [e.kind for e in events].count(AuditKind.disclosure) == 1  # not said again after the takeover
