"""Bearer tokens, meeting ownership and loopback-only binding, in isolation and on a real server."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from delegate.config import Settings
from delegate.server.auth import (
    ANONYMOUS,
    Auth,
    Credential,
    Role,
    check_binding,
    fingerprint,
    is_loopback,
    owner_key,
)
from delegate.server.protocol import ErrorCode, ProtocolError
from testkit.live import ALICE, LiveServer, expect_error, join, open_ws, recv, say, send

KEY = b"install-key"


def test_callers_are_identified_by_token_fingerprint() -> None:
    auth = Auth(" tok-a , tok-b ,", KEY)
    assert auth.enabled
    assert auth.caller("Bearer tok-a") == fingerprint("tok-a", KEY) != auth.caller("bearer tok-b")
    for header in (None, "", "Bearer", "Basic tok-a", "Bearer tok-c", "tok-a"):
        with pytest.raises(ProtocolError) as err:
            auth.caller(header)
        assert err.value.code == ErrorCode.unauthorized


def test_the_owner_id_is_keyed_not_a_plain_hash_of_the_token() -> None:
    owner = Auth("tok-a", KEY).caller("Bearer tok-a")
    assert owner != hashlib.sha256(b"tok-a").hexdigest()[:16]
    assert owner not in hashlib.sha256(b"tok-a").hexdigest()
    # Another install (another key) sees another owner id for the same token.
    assert Auth("tok-a", b"other-install").caller("Bearer tok-a") != owner


def test_the_install_key_is_made_once_and_kept_private(tmp_path: Path) -> None:
    settings = Settings(db_path=tmp_path / "audit.sqlite")
    key = owner_key(settings)
    assert len(key) >= 32 and owner_key(settings) == key
    assert stat.S_IMODE(os.stat(f"{settings.db_path}.owner-key").st_mode) == 0o600
    assert owner_key(Settings(db_path=tmp_path / "audit.sqlite", owner_key="from-env")) == b"from-env"


def test_a_bot_token_is_its_owners_bot_on_one_meeting_and_cannot_be_forged() -> None:
    auth = Auth("tok-a", KEY)
    owner = auth.caller("Bearer tok-a")
    assert auth.credential("Bearer tok-a") == Credential(owner, Role.principal)
    token = auth.bot_token(owner, "standup.42")
    assert auth.credential(f"Bearer {token}") == Credential(owner, Role.bot, "standup.42")
    assert token != auth.bot_token(owner, "standup.43") and token != Auth("tok-a", b"other-install").bot_token(owner, "standup.42")
    forged = [
        token.replace("standup.42", "standup.43"),  # another meeting under the same signature
        token.replace(owner, fingerprint("tok-b", KEY)),  # another owner
        token[:-1], "bot.", "bot.x.y", f"bot.{owner}..standup.42",
        Auth("", KEY).bot_token(ANONYMOUS, "standup.42"),  # a loopback server's token, once it has tokens
    ]
    for header in forged:
        with pytest.raises(ProtocolError) as err:
            auth.credential(f"Bearer {header}")
        assert err.value.code == ErrorCode.unauthorized, header
    # A token the operator configured is a principal's, whatever it looks like.
    assert Auth("bot.mine", KEY).credential("Bearer bot.mine").role is Role.principal


def test_without_tokens_everyone_is_anonymous() -> None:
    auth = Auth("", KEY)
    assert not auth.enabled and auth.caller(None) == ANONYMOUS
    # ... but a bot token is still its meeting's bot.
    bot = auth.credential(f"Bearer {auth.bot_token(ANONYMOUS, 'standup')}")
    assert bot == Credential(ANONYMOUS, Role.bot, "standup")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_may_be_bound_without_tokens(host: str) -> None:
    assert is_loopback(host)
    check_binding(host, Auth("", KEY))


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.org"])
def test_anything_else_needs_tokens(host: str) -> None:
    with pytest.raises(ValueError, match="DELEGATE_API_TOKENS"):
        check_binding(host, Auth("", KEY))
    check_binding(host, Auth("tok", KEY))


@pytest.fixture
def guarded(make_server: Callable[..., LiveServer]) -> LiveServer:
    return make_server(api_tokens="tok-a,tok-b")


async def test_stream_refuses_missing_and_wrong_tokens(guarded: LiveServer) -> None:
    for token in (None, "tok-z"):
        async with await open_ws(guarded, "secret", token=token) as ws:
            await expect_error(ws, "unauthorized")
            with pytest.raises(ConnectionClosed) as closed:
                await recv(ws)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_a_token_cannot_see_use_or_take_another_tokens_meeting_ids(guarded: LiveServer) -> None:
    owner = await open_ws(guarded, "alices", token="tok-a")
    await join(owner)
    await say(owner, 0, "Bob", "Alice, are you there?")
    await say(owner, 1, "Bob", "Alice, and the migration?")

    headers_b = {"Authorization": "Bearer tok-b"}
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        # tok-a's meeting and a never-used id answer alike: tok-b learns nothing of the ids tok-a uses.
        for suffix in ("", "/decisions", "/actions"):
            used = await http.get(f"/v1/meetings/alices{suffix}", headers=headers_b)
            unused = await http.get(f"/v1/meetings/nobodys{suffix}", headers=headers_b)
            assert (used.status_code, used.json()["code"]) == (unused.status_code, unused.json()["code"])
            assert used.status_code == 404
        anonymous = await http.get("/v1/meetings/alices")
        assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthorized")

        # Meeting ids are per token: tok-b does not reach tok-a's meeting, it gets one of its own.
        async with await open_ws(guarded, "alices", token="tok-b") as other:
            await send(other, {"type": "utterance", "id": 2, "speaker": "Eve", "text": "Alice?"})
            await expect_error(other, "not_joined")
            await join(other)
            await say(other, 0, "Eve", "Alice, what did Bob ask?")
            theirs = (await http.get("/v1/meetings/alices", headers=headers_b)).json()
            assert theirs["utterances"] == 1 and theirs["last_utterance_id"] == 0
        # And taking an id first blocks no one: tok-a creates over REST an id tok-b already holds.
        created = await http.post(
            "/v1/meetings", json={"principal": ALICE, "meeting_id": "bobs"}, headers=headers_b
        )
        assert created.status_code == 201
        also = await http.post(
            "/v1/meetings",
            json={"principal": ALICE, "meeting_id": "bobs"},
            headers={"Authorization": "Bearer tok-a"},
        )
        assert also.status_code == 201
        mine = await http.get("/v1/meetings/alices", headers={"Authorization": "Bearer tok-a"})
        assert mine.json()["utterances"] == 2
        assert (await http.get("/healthz")).status_code == 200

    # The owner's session went on untouched.
    await say(owner, 2, "Carol", "Alice, one more thing.")
    await send(owner, {"type": "leave"})
    assert (await recv(owner))["of"] == "leave"
    await owner.close()


async def test_metrics_need_a_token_when_tokens_are_set_and_healthz_does_not(guarded: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        assert (await http.get("/metrics")).status_code == 401
        assert (await http.get("/metrics", headers={"Authorization": "Bearer nope"})).status_code == 401
        ok = await http.get("/metrics", headers={"Authorization": "Bearer tok-b"})
        assert ok.status_code == 200 and "delegate_open_sessions" in ok.text
        assert (await http.get("/healthz")).status_code == 200


async def test_api_docs_load_without_a_cdn(guarded: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=guarded.url) as http:
        page = await http.get("/docs")
        assert page.status_code == 200
        assert "cdn.jsdelivr.net" not in page.text and "unpkg.com" not in page.text
        assets = [src for src in (page.text.split('"')) if src.endswith((".js", ".css")) and src.startswith("/")]
        assert assets, page.text[:400]
        for asset in assets:
            assert (await http.get(asset)).status_code == 200, asset
