"""Least privilege on a real server: the meeting's bot token cannot obtain a private note by any route, while the
principal's token still reads them back where it should. One test per route."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from delegate.server.auth import Auth
from testkit.live import ALICE, LiveServer, expect_error, join, open_ws, recv, say, send, texts, watch
from tests.delegate.server.test_briefs import sources_folder

TOKEN = "principal-token"
PRINCIPAL = {"Authorization": f"Bearer {TOKEN}"}
SECRET_WORDS = ("Globex", "340")
BRIEF = {
    **ALICE,
    "background": [
        *ALICE["background"],
        {
            "context": "if the sale of the analytics unit comes up",
            "information": "Globex offered 340 million dollars for the analytics unit",
            "shareable": False,
        },
    ],
}
ASKED = "Alice, where does the database migration stand?"
"""The local engine answers it from the shareable item: a speech to hold for approval."""
QUESTION = "What was offered for the analytics unit?"


def leaks(value: Any) -> list[str]:
    """The texts of a JSON value that hold a word of the private item."""
    return [t for t in texts(value) if any(w.casefold() in t.casefold() for w in SECRET_WORDS)]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def live(make_server: Callable[..., LiveServer], tmp_path: Path) -> LiveServer:
    return make_server(api_tokens=TOKEN, sources_dir=sources_folder(tmp_path))


def create(live: LiveServer, meeting_id: str, approval: str = "none") -> str:
    """The principal creates the meeting; returns the bot token it yields."""
    body = {"meeting_id": meeting_id, "principal": BRIEF, "attendees": ["Bob", "Carol"], "approval": approval}
    r = httpx.post(f"{live.url}/v1/meetings", headers=PRINCIPAL, json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["bot_token"])


async def bot_joins(live: LiveServer, meeting_id: str, token: str) -> ClientConnection:
    ws = await open_ws(live, meeting_id, token=token)
    await join(ws, principal=None)
    await say(ws, 0, "Bob", "We should talk about the sale of the analytics unit.")
    return ws


def assert_forbidden(r: httpx.Response) -> None:
    assert r.status_code == 403 and r.json()["code"] == "forbidden", r.text
    assert "principal" in r.json()["detail"]


async def next_of(ws: ClientConnection, kind: str) -> dict[str, Any]:
    for _ in range(20):
        frame = await recv(ws)
        if frame["type"] == kind:
            return frame
    raise AssertionError(f"no {kind} frame")


async def test_rest_ask_a_bot_is_answered_for_the_meeting_only(live: LiveServer) -> None:
    bot = create(live, "rest-ask")
    ws = await bot_joins(live, "rest-ask", bot)
    async with httpx.AsyncClient(base_url=live.url) as http:
        refused = await http.post("/v1/meetings/rest-ask/ask", headers=bearer(bot), json={"question": QUESTION, "audience": "principal"})
        assert_forbidden(refused)
        relayed = await http.post("/v1/meetings/rest-ask/ask", headers=bearer(bot), json={"question": QUESTION})
        assert relayed.status_code == 200 and relayed.json()["text"] and not leaks(relayed.json())
        mine = await http.post("/v1/meetings/rest-ask/ask", headers=PRINCIPAL, json={"question": QUESTION, "audience": "principal"})
        assert mine.status_code == 200 and "Globex" in mine.json()["text"]
    await ws.close()


async def test_stream_ask_a_bot_is_refused_the_private_notes_and_its_session_lives_on(live: LiveServer) -> None:
    bot = create(live, "ws-ask")
    ws = await bot_joins(live, "ws-ask", bot)
    await send(ws, {"type": "ask", "id": "p", "audience": "principal", "question": QUESTION})
    refused = await expect_error(ws, "forbidden")
    assert "principal" in refused["detail"]
    await send(ws, {"type": "ask", "id": "m", "audience": "meeting", "question": QUESTION})
    answer = await next_of(ws, "answer")
    assert answer["id"] == "m" and not leaks(answer)
    decision = await say(ws, 1, "Bob", ASKED)  # the connection and the meeting go on
    assert decision["decision"]["speak"] and not leaks(decision)
    await ws.close()


async def test_get_the_meeting_a_bot_sees_private_items_as_blanks(live: LiveServer) -> None:
    bot = create(live, "get-meeting")
    for token in (bot, TOKEN):
        r = httpx.get(f"{live.url}/v1/meetings/get-meeting", headers=bearer(token))
        assert r.status_code == 200 and not leaks(r.json()), r.text
        assert r.json()["background"][-1] == {"context": None, "information": None, "shareable": False}


def test_the_brief_a_bot_can_neither_draft_one_nor_list_the_sources(live: LiveServer) -> None:
    bot = create(live, "brief")
    draft = {"principal": "ana@example.org", "event_id": "review"}
    assert_forbidden(httpx.post(f"{live.url}/v1/briefs", headers=bearer(bot), json=draft))
    assert_forbidden(httpx.get(f"{live.url}/v1/sources/events", headers=bearer(bot)))
    mine = httpx.post(f"{live.url}/v1/briefs", headers=PRINCIPAL, json=draft)
    assert mine.status_code == 200 and any(not b["shareable"] for b in mine.json()["profile"]["background"])


async def test_watch_a_bot_cannot_watch_the_console_view(live: LiveServer) -> None:
    bot = create(live, "watched", approval="speech")
    ws = await bot_joins(live, "watched", bot)
    r = httpx.get(f"{live.url}/v1/meetings/watched/events", headers=bearer(bot))
    assert_forbidden(r)
    async with watch(live, "watched", token=TOKEN) as events:
        seen = await events.until("live")
    assert [e["type"] for e in seen][:2] == ["utterance", "decision"]
    await ws.close()


async def test_audit_download_is_the_principals_alone_and_holds_no_private_note(live: LiveServer) -> None:
    bot = create(live, "audited")
    ws = await bot_joins(live, "audited", bot)
    await send(ws, {"type": "ask", "id": "m", "question": QUESTION})
    await next_of(ws, "answer")
    await ws.close()
    assert_forbidden(httpx.get(f"{live.url}/v1/meetings/audited/audit", headers=bearer(bot)))
    r = httpx.get(f"{live.url}/v1/meetings/audited/audit", headers=PRINCIPAL)
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert r.status_code == 200 and {e["kind"] for e in lines} >= {"meeting_created", "ask", "answer"}
    assert not leaks(lines)


async def test_approval_edits_a_bot_can_neither_settle_nor_probe_a_held_speech(live: LiveServer) -> None:
    bot = create(live, "held", approval="speech")
    ws = await bot_joins(live, "held", bot)
    await send(ws, {"type": "utterance", "id": 1, "speaker": "Bob", "text": ASKED})
    assert (await recv(ws))["type"] == "ack"  # its speech is held: no decision frame for the bot yet
    probe = {"verdict": "approve", "text": "Globex offered 340 million dollars."}
    async with httpx.AsyncClient(base_url=live.url) as http:
        # An edit the guard refuses would say which item it gives away: the bot never gets that far.
        assert_forbidden(await http.post("/v1/meetings/held/speech/1", headers=bearer(bot), json=probe))
        assert_forbidden(await http.post("/v1/meetings/held/speech/1", headers=bearer(bot), json={"verdict": "reject"}))
        assert_forbidden(await http.post("/v1/meetings/held/actions/a0", headers=bearer(bot), json={"verdict": "approve"}))
        await send(ws, {"type": "feedback", "utterance_id": 1, **probe})
        await expect_error(ws, "forbidden")
        # What the bot may read of the decisions is what it was sent: not the held speech.
        seen = (await http.get("/v1/meetings/held/decisions", headers=bearer(bot))).json()
        assert [d["utterance_id"] for d in seen] == [0]
        held = (await http.get("/v1/meetings/held/decisions", headers=PRINCIPAL)).json()
        assert [d["utterance_id"] for d in held] == [0, 1] and held[1]["speak"]
        refused = await http.post("/v1/meetings/held/speech/1", headers=PRINCIPAL, json=probe)
        assert refused.status_code == 422 and refused.json()["code"] == "private_text"
        settled = await http.post("/v1/meetings/held/speech/1", headers=PRINCIPAL, json={"verdict": "approve"})
        assert settled.status_code == 200 and settled.json()["status"] == "approved"
    released = await next_of(ws, "decision")
    assert released["approval"] == "approved" and released["decision"]["speak"] == held[1]["speak"]
    await ws.close()


async def test_join_a_bot_cannot_test_a_guessed_profile_against_the_meeting(live: LiveServer) -> None:
    bot = create(live, "join-probe")
    ws = await open_ws(live, "join-probe", token=bot)
    await send(ws, {"type": "join", "principal": BRIEF})
    await expect_error(ws, "forbidden")
    await join(ws, principal=None)  # the same connection joins as a bot should
    await ws.close()


async def test_a_bot_token_reaches_its_own_meeting_only(live: LiveServer) -> None:
    bot = create(live, "mine")
    create(live, "other")
    async with await open_ws(live, "other", token=bot) as ws:
        await expect_error(ws, "forbidden")
        with pytest.raises(ConnectionClosed) as closed:
            await recv(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert_forbidden(httpx.get(f"{live.url}/v1/meetings/other", headers=bearer(bot)))
    assert_forbidden(httpx.get(f"{live.url}/v1/meetings", headers=bearer(bot)))
    assert_forbidden(httpx.post(f"{live.url}/v1/meetings", headers=bearer(bot), json={"principal": BRIEF}))
    assert_forbidden(httpx.post(f"{live.url}/v1/meetings/mine/bot-token", headers=bearer(bot)))
    assert_forbidden(httpx.get(f"{live.url}/metrics", headers=bearer(bot)))
    again = httpx.post(f"{live.url}/v1/meetings/mine/bot-token", headers=PRINCIPAL)
    assert again.status_code == 200 and again.json()["bot_token"] == bot
    forged = bot[:-len("mine")] + "other"
    r = httpx.get(f"{live.url}/v1/meetings/other", headers=bearer(forged))
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"


async def test_without_server_tokens_a_bot_token_still_is_the_bots(server: LiveServer) -> None:
    created = httpx.post(f"{server.url}/v1/meetings", json={"meeting_id": "open", "principal": BRIEF})
    bot = created.json()["bot_token"]
    assert_forbidden(httpx.post(f"{server.url}/v1/meetings/open/ask", headers=bearer(bot), json={"question": QUESTION, "audience": "principal"}))
    mine = httpx.post(f"{server.url}/v1/meetings/open/ask", json={"question": QUESTION, "audience": "principal"})
    assert mine.status_code == 200 and "Globex" in mine.json()["text"]
    # A token of a server without tokens does not outlive its becoming one with tokens.
    assert Auth("tok", b"k").bot_token("anonymous", "open") != bot
