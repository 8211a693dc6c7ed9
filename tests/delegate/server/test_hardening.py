"""Issue 11: what an attacker or a careless client tried, refused on a real server (and in the parser)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from delegate.server.protocol import ErrorCode, ProtocolError, parse_client_message
from delegate.server.registry import Sessions
from delegate.store import read_events
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

MAX_UTTERANCE_ID = 2**53 - 1
"""The documented largest id (`delegate.models.MAX_UTTERANCE_ID`), written out: the contract, not the code."""
SECRET = "We are being acquired by Globex; nobody may know yet."


def with_item(**item: Any) -> dict[str, Any]:
    principal = copy.deepcopy(ALICE)
    principal["background"].append({"context": "if the buyer comes up", "information": SECRET, **item})
    return principal


MISSPELLED_FLAGS = [{"sharable": False}, {"private": True}, {"Shareable": False}]


@pytest.mark.parametrize("flag", MISSPELLED_FLAGS)
def test_a_misspelled_privacy_flag_is_refused_by_the_parser(flag: dict[str, Any]) -> None:
    frame = json.dumps({"type": "join", "principal": with_item(**flag)})
    with pytest.raises(ProtocolError) as err:
        parse_client_message(frame)
    (key,) = flag
    assert err.value.code == ErrorCode.bad_message and key in err.value.detail


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "join", "principal": {**ALICE, "nickname": "Al"}},
        {"type": "join", "principal": ALICE, "attendees": ["Bob"], "names": {"Bob": "Bob"}, "x": 1},
        {"type": "join", "principal": {**ALICE, "shareable": False}},
    ],
)
def test_unknown_fields_are_refused_at_every_depth(frame: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_client_message(json.dumps(frame))
    assert err.value.code == ErrorCode.bad_message


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"type": {}}, ErrorCode.unknown_type),
        ({"type": ["join"]}, ErrorCode.unknown_type),
        ({"type": "utterance", "id": True, "speaker": "Bob", "text": "Hi"}, ErrorCode.bad_message),
        ({"type": "utterance", "id": 1.0, "speaker": "Bob", "text": "Hi"}, ErrorCode.bad_message),
        ({"type": "utterance", "id": "1", "speaker": "Bob", "text": "Hi"}, ErrorCode.bad_message),
        ({"type": "utterance", "id": 2**53, "speaker": "Bob", "text": "Hi"}, ErrorCode.bad_message),
        ({"type": "utterance", "id": 2**63, "speaker": "Bob", "text": "Hi"}, ErrorCode.bad_message),
        ({"type": "utterance", "id": -1, "speaker": "Bob", "text": "Hi"}, ErrorCode.bad_message),
        ({"type": "utterance", "id": 1, "speaker": "Bob", "text": "Hi", "final": "false"}, ErrorCode.bad_message),
        ({"type": "join", "principal": ALICE, "last_utterance_id": 2**64}, ErrorCode.bad_message),
        ({"type": "feedback", "verdict": "approve", "utterance_id": True}, ErrorCode.bad_message),
        (
            {"type": "join", "principal": with_item(shareable="false")},
            ErrorCode.bad_message,
        ),
    ],
)
def test_dangerous_coercions_are_refused(frame: dict[str, Any], code: ErrorCode) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_client_message(json.dumps(frame))
    assert err.value.code == code


def test_the_largest_id_is_the_largest_exact_json_integer() -> None:
    frame = {"type": "utterance", "id": MAX_UTTERANCE_ID, "speaker": "Bob", "text": "Hi"}
    assert parse_client_message(json.dumps(frame)).id == 2**53 - 1
    start = {"type": "utterance", "id": 1, "speaker": "Bob", "text": "Hi", "start": float("inf")}
    with pytest.raises(ProtocolError):
        parse_client_message(json.dumps(start))


@pytest.mark.parametrize("flag", MISSPELLED_FLAGS)
async def test_a_misspelled_privacy_flag_never_reaches_a_meeting(server: LiveServer, flag: dict[str, Any]) -> None:
    async with await open_ws(server, "flags") as ws:
        await send(ws, {"type": "join", "principal": with_item(**flag)})
        error = await expect_error(ws, "bad_message")
        assert next(iter(flag)) in error["detail"]
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": "Alice, who is the buyer?"})
        await expect_error(ws, "not_joined")
    async with httpx.AsyncClient(base_url=server.url) as http:
        created = await http.post("/v1/meetings", json={"principal": with_item(**flag), "meeting_id": "flags"})
        assert created.status_code == 422 and next(iter(flag)) in created.json()["detail"]
        assert (await http.get("/v1/meetings/flags")).status_code == 404


async def test_ids_past_the_bound_never_reach_the_audit_log(server: LiveServer) -> None:
    async with await open_ws(server, "ids") as ws:
        await join(ws)
        for bad in (True, 2**63, 2**63 - 1, 2**53):
            await send(ws, {"type": "utterance", "id": bad, "speaker": "Bob", "text": "Hello"})
            await expect_error(ws, "bad_message")
        await say(ws, MAX_UTTERANCE_ID - 1, "Bob", "Alice, are you there?")
        await say(ws, MAX_UTTERANCE_ID, "Bob", "Alice, still there?")
        await send(ws, {"type": "utterance", "id": MAX_UTTERANCE_ID, "speaker": "Bob", "text": "Again"})
        await expect_error(ws, "bad_utterance_id")
    ids = [e.utterance_id for e in read_events(server.settings.db_path, "ids") if e.kind == "utterance"]
    assert ids == [MAX_UTTERANCE_ID - 1, MAX_UTTERANCE_ID]


@pytest.mark.parametrize("meeting_id", ["standup%0A", "standup%0D", "%0Astandup"])
async def test_a_meeting_id_with_a_newline_is_refused(server: LiveServer, meeting_id: str) -> None:
    async with await open_ws(server, meeting_id) as ws:
        await expect_error(ws, "bad_meeting_id")
    async with httpx.AsyncClient(base_url=server.url) as http:
        created = await http.post("/v1/meetings", json={"principal": ALICE, "meeting_id": "standup\n"})
        assert created.status_code == 422


async def test_a_type_that_is_not_a_string_is_an_unknown_type(server: LiveServer) -> None:
    async with await open_ws(server, "types") as ws:
        await send(ws, {"type": {}})
        await expect_error(ws, "unknown_type")
        await join(ws)


async def test_a_rest_body_past_the_limit_gets_413(make_server: Callable[..., LiveServer]) -> None:
    live = make_server(max_body_bytes=4096)
    padded = with_item(information="x" * 10_000)
    async with httpx.AsyncClient(base_url=live.url) as http:
        big = await http.post("/v1/meetings", json={"principal": padded})
        assert big.status_code == 413 and big.json()["code"] == "too_large"

        async def chunks() -> Any:
            for _ in range(10):
                yield b" " * 1000

        chunked = await http.post("/v1/meetings", content=chunks(), headers={"content-type": "application/json"})
        assert chunked.status_code == 413 and chunked.json()["code"] == "too_large"
        small = await http.post("/v1/meetings", json={"principal": ALICE})
        assert small.status_code == 201


async def test_a_huge_profile_is_refused_before_it_costs_anything(
    make_server: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a meeting costs (its engine, the profile's index) starts when its session opens: none may.
    opened: list[str] = []
    real_open = Sessions.open

    async def counted_open(self: Sessions, meeting_id: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(meeting_id)
        return await real_open(self, meeting_id, *args, **kwargs)

    monkeypatch.setattr(Sessions, "open", counted_open)
    live = make_server(max_body_bytes=4 * 1024 * 1024)
    huge = {**ALICE, "background": [{"context": f"c{i}", "information": f"i{i}"} for i in range(10_000)]}
    async with httpx.AsyncClient(base_url=live.url) as http:
        refused = await http.post("/v1/meetings", json={"principal": huge})
        assert refused.status_code == 413 and refused.json()["code"] == "too_large"
        assert "principal.background" in refused.json()["detail"]
        assert opened == []
        for field, value in (
            ("intents", ["x"] * 51),
            ("aliases", ["x"] * 21),
            ("name", "x" * 2001),
        ):
            body = {"principal": {**ALICE, field: value}}
            answer = await http.post("/v1/meetings", json=body)
            assert answer.status_code == 413 and f"principal.{field}" in answer.json()["detail"], answer.json()
        many = await http.post("/v1/meetings", json={"principal": ALICE, "attendees": ["x"] * 201})
        assert many.status_code == 413 and "attendees" in many.json()["detail"]
    async with await open_ws(live, "huge") as ws:
        await send(ws, {"type": "join", "principal": {**ALICE, "intents": ["x"] * 51}})
        await expect_error(ws, "too_large")
        await join(ws)
    assert opened == ["huge"]  # the one meeting within the limits, and only it


async def test_sessions_and_sockets_per_token_are_capped(make_server: Callable[..., LiveServer]) -> None:
    live = make_server(api_tokens="tok-a,tok-b", max_sessions_per_token=2, max_sockets_per_token=3)
    a = {"Authorization": "Bearer tok-a"}
    async with httpx.AsyncClient(base_url=live.url) as http:
        for _ in range(2):
            assert (await http.post("/v1/meetings", json={"principal": ALICE}, headers=a)).status_code == 201
        third = await http.post("/v1/meetings", json={"principal": ALICE}, headers=a)
        assert third.status_code == 429 and third.json()["code"] == "too_many"
        # Another token is not held back by this one.
        other = await http.post("/v1/meetings", json={"principal": ALICE}, headers={"Authorization": "Bearer tok-b"})
        assert other.status_code == 201
    sockets = [await open_ws(live, f"s{i}", token="tok-a") for i in range(3)]
    async with await open_ws(live, "s3", token="tok-a") as extra:
        await expect_error(extra, "too_many")
        with pytest.raises(ConnectionClosed):
            await recv(extra)
    async with await open_ws(live, "s4", token="tok-b") as fine:
        await join(fine)
    await sockets[0].close()
    await asyncio.sleep(0.2)
    async with await open_ws(live, "s5", token="tok-a") as again:
        await send(again, {"type": "join", "principal": ALICE})
        await expect_error(again, "too_many")  # the socket is let in; the meeting cap still holds
    for ws in sockets[1:]:
        await ws.close()


async def test_a_socket_that_never_joins_is_closed(make_server: Callable[..., LiveServer]) -> None:
    live = make_server(join_timeout_s=0.3)
    async with await open_ws(live, "silent") as ws:
        await expect_error(ws, "join_timeout")
        with pytest.raises(ConnectionClosed):
            await recv(ws)
    # Garbage does not keep a socket alive either; a join does.
    async with await open_ws(live, "noisy") as ws:
        await send(ws, {"type": "nonsense"})
        await expect_error(ws, "unknown_type")
        await expect_error(ws, "join_timeout")
    async with await open_ws(live, "joined") as ws:
        await join(ws)
        await asyncio.sleep(0.5)
        await say(ws, 0, "Bob", "Alice, are you there?")


async def test_a_leaking_decision_never_leaves_the_server(server: LiveServer) -> None:
    principal = with_item(shareable=False)
    async with await open_ws(server, "guess") as ws:
        await join(ws, principal)
        frames = []
        for uid, text in enumerate(["Alice, is the buyer Globex?", "Alice, when does the migration finish?"]):
            frames.append(await say(ws, uid, "Bob", text))
    for frame in frames:
        assert "Globex" not in json.dumps(frame)
    logged = json.dumps([e.payload for e in read_events(server.settings.db_path, "guess")])
    assert "nobody may know" not in logged


async def test_a_client_sending_text_too_fast_is_refused_frames_not_the_connection(
    make_server: Callable[..., LiveServer],
) -> None:
    live = make_server(text_bytes_per_s=1000)
    long_text = "Alice, " + "the migration plan needs another review " * 20
    async with await open_ws(live, "fast") as ws, await open_ws(live, "calm") as calm:
        await join(ws)
        await join(calm)
        answers = []
        for uid in range(4):
            await send(ws, {"type": "utterance", "id": uid, "speaker": "Bob", "text": long_text})
        while len(answers) < 4:
            frame = await recv(ws)
            if frame["type"] in ("ack", "error"):
                answers.append(frame.get("code", "ack"))
        assert answers[0] == "ack" and "rate_limited" in answers
        # Another connection is not held back; the fast one is served again once its budget refills.
        await say(calm, 0, "Bob", "Alice, are you there?")
        await asyncio.sleep(2.5)
        await send(ws, {"type": "utterance", "id": 10, "speaker": "Bob", "text": "Alice?"})
        while (frame := await recv(ws))["type"] not in ("ack", "error"):
            pass
        assert frame["type"] == "ack", frame
