"""Bots the server hosts (`POST /v1/meetings/{id}/attend`): a real server on loopback runs the Attendee bridge
against the Attendee and Recall fakes (testkit/), the fakes calling the server's own `/v1/bots/...` routes."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from delegate.config import Settings
from delegate.integrations.attend import serving
from testkit.attendee_fake import FakeAttendee, FakeBot
from testkit.live import ALICE, EventStream, LiveServer, start_server, watch
from testkit.recall_fake import FakeRecall, FakeRecallBot

TOKEN = "principal-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MEETING_URL = "https://meet.google.com/abc-def-ghi"
QUESTION = "Alice, when does the database migration finish?"


@pytest.fixture
async def fake() -> AsyncIterator[FakeAttendee]:
    service = FakeAttendee()
    async with serving(service.app(), "127.0.0.1", 0) as port:
        service.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
        yield service


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_keys(monkeypatch: pytest.MonkeyPatch, fake: FakeAttendee | None) -> None:
    """The server's environment: Attendee's keys (the fake's) or none; never Recall's."""
    for name in ("ATTENDEE_URL", "ATTENDEE_API_KEY", "ATTENDEE_WEBHOOK_SECRET", "RECALL_URL", "RECALL_API_KEY",
                 "RECALL_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    if fake is not None:
        monkeypatch.setenv("ATTENDEE_URL", fake.url)  # type: ignore[attr-defined]
        monkeypatch.setenv("ATTENDEE_API_KEY", fake.api_key)
        monkeypatch.setenv("ATTENDEE_WEBHOOK_SECRET", fake.webhook_secret)


def hosting(make_server: Callable[..., LiveServer], **overrides: Any) -> LiveServer:
    port = free_port()
    values: dict[str, Any] = {"api_tokens": TOKEN, "public_url": f"http://127.0.0.1:{port}"}
    return make_server(**(values | overrides), port=port)


async def until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    for _ in range(int(timeout / 0.05)):
        found = check()
        if asyncio.iscoroutine(found):
            found = await found
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


async def start_meeting(http: httpx.AsyncClient, meeting_id: str) -> str:
    r = await http.post("/v1/meetings", json={"meeting_id": meeting_id, "principal": ALICE, "attendees": ["Bob Jones"]},
                        headers=AUTH)
    assert r.status_code == 201, r.text
    return str(r.json()["bot_token"])


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """As the conftest's, on a port given first: the server's public URL names it."""
    started: list[LiveServer] = []

    def make(port: int | None = None, **overrides: Any) -> LiveServer:
        values: dict[str, Any] = {"db_path": tmp_path / "audit.sqlite", "log_level": "warning", "engine": "local",
                                  "voice": False}
        live = start_server(Settings(**(values | overrides)), port=port)
        started.append(live)
        return live

    yield make
    for live in started:
        if live.thread.is_alive():
            live.stop()


async def test_a_whole_short_meeting_with_a_bot_the_server_hosts(
    make_server: Callable[..., LiveServer], fake: FakeAttendee, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_keys(monkeypatch, fake)
    server = hosting(make_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        bot_token = await start_meeting(http, "hosted-1")
        async with watch(server, "hosted-1", TOKEN) as events:
            seen = await meeting_through_a_hosted_bot(http, server, fake, bot_token, events)
        r = await http.get("/v1/meetings/hosted-1/audit", headers=AUTH)
        audit = [json.loads(line) for line in r.text.splitlines()]
    told = [(e["type"], e["state"]) for e in seen if e["type"] in ("bot", "admission")]
    assert told == [("admission", "joining"), ("bot", "requested"), ("admission", "waiting_room"),
                    ("admission", "in_meeting")]

    assert [e["payload"]["state"] for e in audit if e["kind"] == "admission"] == ["joining", "waiting_room", "in_meeting"]
    turns = [(e["payload"]["speaker"], e["payload"]["text"]) for e in audit if e["kind"] == "utterance"]
    assert turns == [("Bob Jones", QUESTION)]
    kinds = [e["kind"] for e in audit]
    assert kinds.index("disclosure") < kinds.index("decision")  # said what it is on entering, before answering
    assert audit[-1]["kind"] == "left"  # the bot left the call, and so the meeting
    everything = json.dumps(audit)
    assert fake.api_key not in everything and fake.webhook_secret not in everything


async def meeting_through_a_hosted_bot(
    http: httpx.AsyncClient, server: LiveServer, fake: FakeAttendee, bot_token: str, events: EventStream
) -> list[dict[str, Any]]:
    """Attend → waiting room → admitted → a named question answered → leave; the watcher's events until the end."""
    body = {"meeting_url": MEETING_URL, "via": "attendee", "listen": "transcript"}
    refused = await http.post("/v1/meetings/hosted-1/attend", json=body, headers={"Authorization": f"Bearer {bot_token}"})
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"

    r = await http.post("/v1/meetings/hosted-1/attend", json=body, headers=AUTH)
    assert r.status_code == 202 and r.json()["state"] == "requested", r.text
    bot: FakeBot = await asyncio.wait_for(fake.created.get(), 20)
    assert bot.request["meeting_url"] == MEETING_URL and bot.request["bot_name"] == "Alice Smith (AI delegate)"
    assert bot.webhook_url.startswith(f"{server.settings.public_url}/v1/bots/")
    assert bot.audio_url.startswith(f"ws://127.0.0.1:{server.port}/v1/bots/")
    await bot.connect_audio()  # Attendee's audio socket, through the server's own route

    async def state() -> tuple[str, str]:
        info = (await http.get("/v1/meetings/hosted-1", headers=AUTH)).json()
        return info["bot"]["state"], info["admission"]

    assert await bot.change_state("joining", "join_requested") == 200
    assert await bot.change_state("waiting_room", "put_in_waiting_room") == 200
    assert await until(lambda: _is(state(), ("waiting_room", "waiting_room")))
    assert await bot.change_state("joined_recording", "joined_meeting") == 200
    assert await until(lambda: _is(state(), ("in_meeting", "in_meeting")))

    assert await bot.participant("16778240", "Bob Jones") == 200
    assert await bot.transcript("16778240", "Bob Jones", QUESTION) == 200
    decisions = await until(lambda: _decisions(http))
    assert decisions[0]["utterance_id"] == 0 and "Friday" in decisions[0]["speak"]

    left = await http.delete("/v1/meetings/hosted-1/attend", headers=AUTH)
    assert left.status_code == 200 and left.json()["state"] == "ended", left.text
    assert left.json()["detail"] == "asked to leave" and bot.left  # the service was asked to take it out
    info = (await http.get("/v1/meetings/hosted-1", headers=AUTH)).json()
    assert info["ended"] and info["bot"]["state"] == "ended"
    assert (await http.delete("/v1/meetings/hosted-1/attend", headers=AUTH)).status_code == 404

    return await events.until("meeting_ended")


async def _is(pending: Any, wanted: tuple[str, str]) -> bool:
    return bool(await pending == wanted)


async def _decisions(http: httpx.AsyncClient, meeting_id: str = "hosted-1") -> list[dict[str, Any]]:
    return [d for d in (await http.get(f"/v1/meetings/{meeting_id}/decisions", headers=AUTH)).json() if d["speak"]]


async def test_a_missing_public_url_or_key_is_one_clear_error_and_the_meeting_goes_on(
    make_server: Callable[..., LiveServer], fake: FakeAttendee, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_keys(monkeypatch, fake)
    server = hosting(make_server, public_url=None)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        await start_meeting(http, "hosted-2")
        r = await http.post("/v1/meetings/hosted-2/attend", json={"meeting_url": MEETING_URL, "via": "attendee"}, headers=AUTH)
        assert r.status_code == 503 and r.json()["code"] == "not_configured"
        assert "DELEGATE_PUBLIC_URL" in r.json()["detail"] and "\n" not in r.json()["detail"]
        info = (await http.get("/v1/meetings/hosted-2", headers=AUTH)).json()
        assert info["bot"] is None and info["admission"] == "in_meeting" and not info["ended"]
    server.stop()

    with_keys(monkeypatch, None)
    server = hosting(make_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        await start_meeting(http, "hosted-3")
        for via, named in (("recall", "RECALL_API_KEY"), ("attendee", "ATTENDEE_WEBHOOK_SECRET")):
            r = await http.post("/v1/meetings/hosted-3/attend", json={"meeting_url": MEETING_URL, "via": via}, headers=AUTH)
            assert r.status_code == 503 and r.json()["code"] == "not_configured", r.text
            assert named in r.json()["detail"] and "\n" not in r.json()["detail"]
        # The keys are the server's: a request that brings one is refused, and so is an unknown service.
        r = await http.post("/v1/meetings/hosted-3/attend", headers=AUTH,
                            json={"meeting_url": MEETING_URL, "via": "attendee", "api_key": "k"})
        assert r.status_code == 422 and r.json()["fields"][0]["loc"] == "api_key"
        r = await http.post("/v1/meetings/hosted-3/attend", headers=AUTH, json={"meeting_url": MEETING_URL, "via": "zoom"})
        assert r.status_code == 422 and r.json()["fields"][0]["loc"] == "via"
        assert (await http.get("/v1/meetings/hosted-3", headers=AUTH)).json()["admission"] == "in_meeting"


async def test_a_bot_the_service_refuses_is_failed_with_one_line_and_the_meeting_goes_on(
    make_server: Callable[..., LiveServer], fake: FakeAttendee, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_keys(monkeypatch, fake)
    monkeypatch.setenv("ATTENDEE_API_KEY", "not-the-services-key")
    server = hosting(make_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        await start_meeting(http, "hosted-4")
        body = {"meeting_url": MEETING_URL, "via": "attendee"}
        assert (await http.post("/v1/meetings/hosted-4/attend", json=body, headers=AUTH)).status_code == 202

        async def failed() -> dict[str, Any] | None:
            bot = (await http.get("/v1/meetings/hosted-4", headers=AUTH)).json()["bot"]
            return bot if bot["state"] == "failed" else None

        bot = await until(failed)
        assert "Attendee refused the bot (401)" in bot["detail"] and "\n" not in bot["detail"]
        assert "not-the-services-key" not in bot["detail"]
        info = (await http.get("/v1/meetings/hosted-4", headers=AUTH)).json()
        assert not info["ended"] and info["admission"] == "joining"  # silent until a bot is in; another may be sent
        assert (await http.delete("/v1/meetings/hosted-4/attend", headers=AUTH)).status_code == 404
        assert (await http.post("/v1/bots/no-such-bot/attendee/webhook", json={})).status_code == 404
        audit = (await http.get("/v1/meetings/hosted-4/audit", headers=AUTH)).text
        assert "not-the-services-key" not in audit


async def test_a_server_that_stops_takes_its_bot_out_and_keeps_the_meeting(
    make_server: Callable[..., LiveServer], fake: FakeAttendee, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_keys(monkeypatch, fake)
    server = hosting(make_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        await start_meeting(http, "hosted-5")
        body = {"meeting_url": MEETING_URL, "via": "attendee"}
        assert (await http.post("/v1/meetings/hosted-5/attend", json=body, headers=AUTH)).status_code == 202
        bot: FakeBot = await asyncio.wait_for(fake.created.get(), 20)
        assert await bot.change_state("waiting_room", "put_in_waiting_room") == 200
    await asyncio.to_thread(server.stop)
    assert bot.left  # no bot left behind in the call, unserved

    again = make_server(port=server.port, **{k: getattr(server.settings, k) for k in ("api_tokens", "public_url")})
    async with httpx.AsyncClient(base_url=again.url, timeout=30) as http:
        info = (await http.get("/v1/meetings/hosted-5", headers=AUTH)).json()
        assert not info["ended"] and info["bot"] is None  # open, to send a bot again
        assert (await http.post("/v1/meetings/hosted-5/attend", json=body, headers=AUTH)).status_code == 202
        second: FakeBot = await asyncio.wait_for(fake.created.get(), 20)
        assert await second.change_state("joined_recording", "joined_meeting") == 200

        async def disclosed() -> bool:
            audit = (await http.get("/v1/meetings/hosted-5/audit", headers=AUTH)).text
            return '"kind":"disclosure"' in audit.replace(" ", "")

        assert await until(disclosed)  # the bot sent again says what it is once it is in


async def test_recall_status_webhooks_come_to_the_one_workspace_endpoint(
    make_server: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall's dashboard has one webhook endpoint per workspace: `PUBLIC_URL/v1/bots/recall/webhook` on the server
    hands each status to the Recall bots it hosts, each taking its own bot's."""
    service = FakeRecall()
    async with serving(service.app(), "127.0.0.1", 0) as port:
        with_keys(monkeypatch, None)
        monkeypatch.setenv("RECALL_URL", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("RECALL_API_KEY", service.api_key)
        monkeypatch.setenv("RECALL_WEBHOOK_SECRET", service.webhook_secret)
        server = hosting(make_server)
        service.status_url = f"{server.settings.public_url}/v1/bots/recall/webhook"
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            await start_meeting(http, "hosted-6")
            body = {"meeting_url": MEETING_URL, "via": "recall"}
            assert (await http.post("/v1/meetings/hosted-6/attend", json=body, headers=AUTH)).status_code == 202
            bot: FakeRecallBot = await asyncio.wait_for(service.created.get(), 20)
            assert bot.realtime_url.startswith(f"{server.settings.public_url}/v1/bots/")

            async def bot_state() -> str:
                return str((await http.get("/v1/meetings/hosted-6", headers=AUTH)).json()["bot"]["state"])

            assert await bot.status("in_waiting_room") == 200
            assert await until(lambda: _equals(bot_state(), "waiting_room"))
            assert await bot.status("in_call_recording") == 200
            assert await until(lambda: _equals(bot_state(), "in_meeting"))
            assert await bot.participant(100, "Bob Jones") == 200
            assert await bot.transcript(100, "Bob Jones", QUESTION) == 200
            decisions = await until(lambda: _decisions(http, "hosted-6"))
            assert "Friday" in decisions[0]["speak"]
            assert await bot.status("call_ended", "bot_kicked_from_call") == 200
            assert await until(lambda: _equals(bot_state(), "removed"))
            info = (await http.get("/v1/meetings/hosted-6", headers=AUTH)).json()
            assert info["ended"] and info["admission"] == "removed"


async def _equals(pending: Any, wanted: str) -> bool:
    return bool(await pending == wanted)
