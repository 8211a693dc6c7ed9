"""The typed client against real loopback servers: decisions, actions, answers, verdicts, speech, errors, resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmark.asr import AUDIO_FIXTURES
from delegate.client import (
    RETRY_FIRST_S,
    RETRY_MAX_S,
    ConnectionLost,
    DelegateClient,
    DelegateError,
    create_meeting,
    retry_delay,
)
from delegate.config import Settings
from delegate.server.protocol import ActionMessage, DecisionMessage
from testkit.live import ALICE, LiveServer, start_server, watch

SIRUI = {
    "name": "Sirui Zhao",
    "aliases": ["Sirui"],
    "background": [
        {"context": "if asked about the data collection",
         "information": "The data collection is on track: two hundred recordings are in"}
    ],
}


@pytest.fixture
def settings(tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "db_path": tmp_path / "audit.sqlite", "api_tokens": "", "log_level": "warning", "voice": False
        }
        return Settings(**(values | overrides))

    return make


@pytest.fixture
def server(settings: Callable[..., Settings]) -> Iterator[LiveServer]:
    live = start_server(settings())
    yield live
    if live.thread.is_alive():
        live.stop()


def ws_url(live: LiveServer) -> str:
    return f"ws://127.0.0.1:{live.port}"


async def test_a_meeting_gets_typed_decisions_actions_and_answers(server: LiveServer) -> None:
    seen: list[type] = []
    async with DelegateClient(
        ws_url(server), "typed-1", principal=ALICE, attendees=["Bob", "Carol"],
        on_message=lambda m: seen.append(type(m)),
    ) as meeting:
        assert not (await meeting.say("Bob", "Morning all.")).spoke
        named = await meeting.say("Bob", "Alice, where does the migration stand?")
        assert named.utterance_id == 1 and named.scenario == "explicit_cue"
        assert "Friday" in named.speak
        await meeting.say("Carol", "Alice, can you schedule the rollback drill for Thursday?")
        for _ in range(200):  # action items come a beat after the decision
            if meeting.actions:
                break
            await asyncio.sleep(0.01)
        (action,) = meeting.actions.values()
        assert action.assignees == ["Alice Smith"] and "rollback drill" in action.description
        answer = await meeting.ask("Who will schedule the rollback drill?")
        assert answer.answered and answer.turn_ids == [2]
    assert DecisionMessage in seen and ActionMessage in seen
    with httpx.Client(base_url=server.url) as http:
        info = http.get("/v1/meetings/typed-1").json()
    assert info["ended"] and info["utterances"] == 3  # leaving the block left the meeting


async def test_the_address_serve_prints_http_is_taken_as_its_websocket(server: LiveServer) -> None:
    assert server.url.startswith("http://")
    async with DelegateClient(server.url, "typed-http", principal=ALICE) as meeting:
        assert meeting.url.startswith("ws://127.0.0.1:")
        assert "Friday" in (await meeting.say("Bob", "Alice, where does the migration stand?")).speak
    assert DelegateClient("https://delegate.example.com/", "m").url == "wss://delegate.example.com/v1/meetings/m/stream"
    with pytest.raises(ValueError, match="starts with ws://, wss://, http:// or https://"):
        DelegateClient("127.0.0.1:8000", "m")


async def test_a_refused_frame_raises_its_error_and_the_meeting_goes_on(server: LiveServer) -> None:
    async with DelegateClient(ws_url(server), "typed-errors", principal=ALICE) as meeting:
        await meeting.say("Bob", "Morning all.", id=5)
        with pytest.raises(DelegateError) as refused:
            await meeting.send("Bob", "Going back in time.", id=3)
        assert refused.value.error.code == "bad_utterance_id"
        with pytest.raises(DelegateError) as empty:
            await meeting.say("Bob", "   ")
        assert empty.value.error.code == "empty_text"
        decision = await meeting.say("Bob", "Alice, where does the migration stand?", id=7)
        assert "Friday" in decision.speak


async def test_the_client_resumes_across_a_server_restart_and_sends_what_was_missed(
    server: LiveServer, settings: Callable[..., Settings]
) -> None:
    async with DelegateClient(ws_url(server), "typed-resume", principal=ALICE, reconnect_s=30) as meeting:
        await meeting.say("Bob", "Morning all.")
        await asyncio.to_thread(server.stop)  # connections closed (1012); the meeting lives on in its log
        restarted = start_server(settings(), port=server.port)
        try:
            decision = await meeting.say("Bob", "Alice, where does the migration stand?", timeout=30)
            assert decision.utterance_id == 1 and "Friday" in decision.speak
            assert meeting.reconnects == 1 and meeting.server_last_utterance_id == 0
        finally:
            await meeting.close()
            restarted.stop()


async def test_a_new_client_resumes_an_open_meeting_where_the_server_left_it(server: LiveServer) -> None:
    with pytest.raises(RuntimeError):
        async with DelegateClient(ws_url(server), "typed-handover", principal=ALICE) as first:
            await first.say("Bob", "Morning all.")
            await first.say("Carol", "Let us start with the migration.")
            raise RuntimeError("the bot crashed")  # leaves the meeting open: only the socket closes
    async with DelegateClient(ws_url(server), "typed-handover") as second:  # no principal: resume
        assert second.server_last_utterance_id == 1 and second.next_utterance_id == 2
        decision = await second.say("Bob", "Alice, where does the migration stand?")
        assert decision.utterance_id == 2 and "Friday" in decision.speak


async def test_a_meeting_that_ended_cannot_be_resumed(server: LiveServer) -> None:
    async with DelegateClient(ws_url(server), "typed-ended", principal=ALICE) as meeting:
        await meeting.say("Bob", "Morning all.")
    with pytest.raises(DelegateError) as closed:
        async with DelegateClient(ws_url(server), "typed-ended"):
            pass
    assert closed.value.error.code == "meeting_closed"


async def test_a_held_speech_comes_once_the_principal_approves_an_edit(server: LiveServer) -> None:
    async with DelegateClient(ws_url(server), "typed-approval", principal=ALICE, approval="speech") as meeting:
        uid = await meeting.send("Bob", "Alice, where does the migration stand?")
        async with watch(server, "typed-approval") as events:  # what the principal's console sees
            await events.until("speech_pending", utterance_id=uid)
        await meeting.verdict("approve", utterance_id=uid, text="It lands on Friday, all being well.")
        decision = await meeting.decision(uid)
        assert decision.speak == "It lands on Friday, all being well."
        assert meeting.decisions[uid].approval == "edited"
        with pytest.raises(DelegateError) as again:
            await meeting.verdict("reject", utterance_id=uid)
        assert again.value.error.code == "not_pending"


async def test_a_taken_over_client_is_told_its_connection_is_gone(server: LiveServer) -> None:
    async with DelegateClient(ws_url(server), "typed-taken", principal=ALICE) as first:
        await first.say("Bob", "Morning all.")
        async with DelegateClient(ws_url(server), "typed-taken") as second:
            await second.say("Bob", "Alice, where does the migration stand?")
            with pytest.raises(ConnectionLost):
                await first.say("Carol", "Anything else?", timeout=5)


async def test_speech_in_and_out_with_the_audio_helpers(settings: Callable[..., Settings]) -> None:
    from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio

    load_speech_model()  # the server shares this process's model
    live = start_server(settings(voice=True))
    try:
        async with DelegateClient(ws_url(live), "typed-audio", principal=SIRUI, attendees=["Peter"], voice=True) as meeting:
            await meeting.start_audio(SAMPLE_RATE, speaker="Peter")
            await meeting.send_pcm(read_audio(AUDIO_FIXTURES / "name_cue.wav"))
            await meeting.end_audio()
            decision = await meeting.decision(1, timeout=30)
            assert decision.scenario == "explicit_cue" and "data collection" in decision.speak
            speech = await meeting.speech(1)
            assert speech.text == decision.speak and speech.end is not None
            assert speech.sample_rate == 22050
            # All of the reply's audio: about as long as it says it is.
            assert abs(len(speech.pcm) / 2 / speech.sample_rate * 1000 - speech.end.duration_ms) <= 100
    finally:
        live.stop()


async def test_the_principal_creates_the_meeting_and_its_bot_streams_with_the_bot_token(
    settings: Callable[..., Settings],
) -> None:
    live = start_server(settings(api_tokens="principal-token"))
    private = {**ALICE, "background": [*ALICE["background"], {
        "context": "if the sale comes up", "information": "Globex offered 340 million dollars", "shareable": False,
    }]}
    try:
        created = await create_meeting(ws_url(live), private, token="principal-token", meeting_id="typed-bot", approval="speech")
        assert created.meeting_id == "typed-bot" and created.bot_token != "principal-token"
        async with DelegateClient(ws_url(live), "typed-bot", token=created.bot_token) as bot:
            uid = await bot.send("Bob", "Alice, where does the migration stand?")
            for refused in (
                bot.ask("What did Globex offer?", audience="principal"),
                bot.verdict("approve", utterance_id=uid, text="Globex offered 340 million dollars."),
            ):
                with pytest.raises(DelegateError) as err:
                    await refused
                assert err.value.error.code == "forbidden"
            answer = await bot.ask("What did Globex offer?")  # for the meeting's ears: the session lives on
            assert "340" not in answer.text
            async with httpx.AsyncClient(base_url=live.url, headers={"Authorization": "Bearer principal-token"}) as http:
                r = await http.post(f"/v1/meetings/typed-bot/speech/{uid}", json={"verdict": "approve"})
                assert r.status_code == 200, r.text
            assert (await bot.decision(uid)).speak == "The migration finishes on Friday."
        with pytest.raises(DelegateError) as err:
            await create_meeting(ws_url(live), ALICE, token=created.bot_token)
        assert err.value.error.code == "forbidden"
    finally:
        live.stop()


def test_reconnection_waits_are_random_under_a_cap_that_doubles() -> None:
    # A thousand clients of a dead process must not come back in the same instant.
    first = [retry_delay(0) for _ in range(500)]
    late = [retry_delay(12) for _ in range(500)]
    assert all(0 <= w <= RETRY_FIRST_S for w in first) and len(set(first)) > 400
    assert all(0 <= w <= RETRY_MAX_S for w in late) and max(late) > RETRY_MAX_S / 2
    assert max(retry_delay(3) for _ in range(500)) <= RETRY_FIRST_S * 8
