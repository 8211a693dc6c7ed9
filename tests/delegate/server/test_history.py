"""Ended meetings are served from the audit log, and each token lists its own meetings, a page at a time."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from testkit.live import ALICE, LiveServer, join, open_ws, recv, say, send


@pytest.fixture
def guarded(make_server: Callable[..., LiveServer]) -> LiveServer:
    return make_server(api_tokens="tok-a,tok-b")


async def _meeting(live: LiveServer, meeting_id: str, token: str) -> None:
    async with await open_ws(live, meeting_id, token=token) as ws:
        await join(ws)
        await say(ws, 0, "Bob", "Morning all.")
        await say(ws, 1, "Bob", "Alice, where does the database migration stand?")
        await send(ws, {"type": "leave"})
        assert (await recv(ws))["of"] == "leave"


async def test_an_ended_meeting_is_read_from_the_log(guarded: LiveServer) -> None:
    await _meeting(guarded, "weekly-1", "tok-a")
    a = {"Authorization": "Bearer tok-a"}
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        info = (await http.get("/v1/meetings/weekly-1", headers=a)).json()
        assert info["ended"] and not info["connected"] and info["utterances"] == 2 and info["decisions"] == 2
        decisions = (await http.get("/v1/meetings/weekly-1/decisions", headers=a)).json()
        assert [d["utterance_id"] for d in decisions] == [0, 1]
        assert "Friday" in decisions[1]["speak"]
        assert (await http.get("/v1/meetings/weekly-1/actions", headers=a)).status_code == 200
        # Another token's view: no such meeting, exactly as for an id never used.
        b = {"Authorization": "Bearer tok-b"}
        assert (await http.get("/v1/meetings/weekly-1", headers=b)).status_code == 404
        assert (await http.get("/v1/meetings/never-used", headers=a)).status_code == 404


async def test_a_token_lists_its_own_meetings_newest_first_in_pages(guarded: LiveServer) -> None:
    for k in range(3):
        await _meeting(guarded, f"m{k}", "tok-a")
    await _meeting(guarded, "theirs", "tok-b")
    a = {"Authorization": "Bearer tok-a"}
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        first = (await http.get("/v1/meetings", params={"limit": 2}, headers=a)).json()
        assert [m["meeting_id"] for m in first["meetings"]] == ["m2", "m1"] and first["next_offset"] == 2
        rest = (await http.get("/v1/meetings", params={"limit": 2, "offset": 2}, headers=a)).json()
        assert [m["meeting_id"] for m in rest["meetings"]] == ["m0"] and rest["next_offset"] is None
        assert not any(m["open"] for m in first["meetings"] + rest["meetings"])
        assert (await http.get("/v1/meetings")).status_code == 401


async def test_the_background_keeps_its_order_with_private_items_blank_live_and_after(guarded: LiveServer) -> None:
    secret = {"context": "if asked about her plans", "information": "She is leaving in March", "shareable": False}
    alice = {**ALICE, "background": [secret, *ALICE["background"]]}
    a = {"Authorization": "Bearer tok-a"}
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        async with await open_ws(guarded, "with-secret", token="tok-a") as ws:
            await join(ws, alice)
            decision = await say(ws, 0, "Bob", "Alice, where does the database migration stand?")
            assert decision["decision"]["used_background"] == [1]
            live = (await http.get("/v1/meetings/with-secret", headers=a)).json()
            await send(ws, {"type": "leave"})
            assert (await recv(ws))["of"] == "leave"
        ended = (await http.get("/v1/meetings/with-secret", headers=a)).json()
    for info in (live, ended):
        # used_background [1] still points at the migration item; the private one is a blank in its place.
        assert info["background"][0] == {"context": None, "information": None, "shareable": False}
        assert info["background"][1]["information"] == "The migration finishes on Friday"
        assert "March" not in str(info)
    assert ended["ended"] and not live["ended"]
