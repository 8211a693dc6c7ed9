"""Two real servers on one real PostgreSQL: a meeting is served by one process at a time and moves between them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from testkit.live import ALICE, LiveServer, expect_error, join, open_ws, recv, say, send


async def test_a_meeting_created_on_one_process_is_streamed_on_another_and_held_by_one_at_a_time(
    make_server: Callable[..., LiveServer], postgres_url: str
) -> None:
    a = make_server(database_url=postgres_url, release_seconds=0.3)
    b = make_server(database_url=postgres_url, release_seconds=0.3)
    async with httpx.AsyncClient(base_url=a.url) as http_a, httpx.AsyncClient(base_url=b.url) as http_b:
        created = await http_a.post("/v1/meetings", json={"principal": ALICE, "attendees": ["Bob"]})
        assert created.status_code == 201, created.text
        meeting_id = created.json()["meeting_id"]
        async with await open_ws(b, meeting_id) as ws:
            await join(ws, principal=None)
            await say(ws, 0, "Bob", "Alice, where does the database migration stand?")
            # Held by b while its client is connected: a refuses to take it.
            assert (await http_a.get(f"/v1/meetings/{meeting_id}")).status_code == 409
            assert (await http_b.get(f"/v1/meetings/{meeting_id}")).json()["utterances"] == 1
        # Its client gone, b lets it go; a takes it over from the log.
        await asyncio.sleep(1.0)
        info = (await http_a.get(f"/v1/meetings/{meeting_id}")).json()
        assert info["utterances"] == 1 and info["decisions"] == 1
        async with await open_ws(a, meeting_id) as ws:
            await join(ws, principal=None, last_utterance_id=0)
            assert (await recv(ws))["resumed"]
            await say(ws, 1, "Bob", "Thanks, that's all.")
            await send(ws, {"type": "leave"})
            assert (await recv(ws))["of"] == "leave"
        async with await open_ws(b, meeting_id) as ws:
            await send(ws, {"type": "join", "principal": ALICE})
            await expect_error(ws, "meeting_closed")
        ended = (await http_b.get(f"/v1/meetings/{meeting_id}")).json()  # any process reads it from the log
        assert ended["ended"] is True and ended["utterances"] == 2
