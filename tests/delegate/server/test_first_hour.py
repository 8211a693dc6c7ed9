"""Mistakes a new user makes in their first hour with the server, each answered with what is wrong and where."""

from __future__ import annotations

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from testkit.live import ALICE, LiveServer, expect_error, join, open_ws, recv, say, send

ODD_IDS = {
    "space": "stand%20up",
    "encoded slash": "team%2Fstandup",
    "too long": "m" * 129,
    "control character": "stand%00up",
    "newline": "standup%0A",
}


@pytest.mark.parametrize("meeting_id", ODD_IDS.values(), ids=ODD_IDS.keys())
async def test_an_odd_meeting_id_gets_bad_meeting_id_on_rest(server: LiveServer, meeting_id: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        for method, path, body in [
            ("GET", "", None),
            ("GET", "/decisions", None),
            ("GET", "/audit", None),
            ("GET", "/events", None),
            ("POST", "/ask", {"question": "Who is here?"}),
        ]:
            r = await http.request(method, f"/v1/meetings/{meeting_id}{path}", json=body)
            assert r.status_code == 422 and r.json()["code"] == "bad_meeting_id", (path, r.text)
        good = await http.get("/v1/meetings/standup")
        assert good.status_code == 404 and good.json()["code"] == "not_found"  # a good id is only not there


@pytest.mark.parametrize("meeting_id", ODD_IDS.values(), ids=ODD_IDS.keys())
async def test_an_odd_meeting_id_gets_bad_meeting_id_on_the_stream(server: LiveServer, meeting_id: str) -> None:
    async with await open_ws(server, meeting_id) as ws:
        await expect_error(ws, "bad_meeting_id")  # at once, before any frame
        with pytest.raises(ConnectionClosed) as closed:
            await recv(ws)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_a_malformed_json_body_says_where_and_what(server: LiveServer) -> None:
    body = '{\n  "meeting_id": "standup",\n  "principal": {"name": "Alice Smith"}\n  "attendees": ["Bob"]\n}'
    async with httpx.AsyncClient(base_url=server.url) as http:
        r = await http.post("/v1/meetings", content=body, headers={"content-type": "application/json"})
        error = r.json()
        assert r.status_code == 400 and error["code"] == "bad_json", r.text
        assert "line 4 column 3" in error["detail"] and "Expecting ',' delimiter" in error["detail"], error
        assert "JSON decode error" not in error["detail"]
        fixed = body.replace('"}\n', '"},\n')
        created = await http.post("/v1/meetings", content=fixed, headers={"content-type": "application/json"})
        assert created.status_code == 201, created.text


async def test_a_misspelt_field_is_named_with_the_one_meant_on_the_stream_as_on_rest(server: LiveServer) -> None:
    async with await open_ws(server, "typos") as ws:
        await join(ws)
        await send(ws, {"type": "utterance", "id": 0, "speeker": "Bob", "text": "Morning all."})
        error = await expect_error(ws, "bad_message")
        assert error["detail"].startswith("speeker: ") and "did you mean `speaker`?" in error["detail"], error
        await say(ws, 0, "Bob", "Morning all.")  # the session goes on
    async with httpx.AsyncClient(base_url=server.url) as http:
        r = await http.post("/v1/meetings", json={"principal": {k: v for k, v in ALICE.items() if k != "name"} | {"nam": "Alice Smith"}})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("principal.nam: ") and "did you mean `name`?" in r.json()["detail"], r.text
