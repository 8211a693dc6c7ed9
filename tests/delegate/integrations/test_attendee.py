"""The Attendee bridge against a fake Attendee on loopback (testkit/attendee_fake.py, Attendee's own payloads) and a
real delegate server: a whole meeting from the bot's request to its removal."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from delegate.integrations import attendee
from delegate.integrations.attend import attend, serving
from delegate.integrations.attendee import AttendeeSettings, StateChange, admission_of, sign, verified
from delegate.store import AuditKind, read_events
from testkit.attendee_fake import FakeAttendee, FakeBot, payload
from testkit.live import ALICE, LiveServer

QUESTION = "Alice, when does the database migration finish?"
MEETING_URL = "https://meet.google.com/abc-def-ghi"


@pytest.fixture
async def fake() -> AsyncIterator[FakeAttendee]:
    service = FakeAttendee()
    async with serving(service.app(), "127.0.0.1", 0) as port:
        service.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
        yield service


def settings_of(fake: FakeAttendee) -> AttendeeSettings:
    return AttendeeSettings(url=fake.url, api_key=fake.api_key, webhook_secret=fake.webhook_secret)  # type: ignore[attr-defined]


async def until(check: Any, timeout: float = 20.0) -> Any:
    """Poll `check()` until it returns something truthy (what a bot would wait for in a meeting)."""
    for _ in range(int(timeout / 0.05)):
        found = check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


def spoken(server: LiveServer, meeting_id: str) -> list[dict[str, Any]]:
    return [e.payload for e in read_events(server.settings.db_path, meeting_id) if e.kind == AuditKind.speech]


async def test_a_whole_meeting_through_attendee(voiced: LiveServer, fake: FakeAttendee) -> None:
    meeting = asyncio.create_task(attend(
        MEETING_URL, ALICE, attendee.service(settings_of(fake), listen="transcript"),
        delegate_url=voiced.url, public_url=lambda port: f"http://127.0.0.1:{port}", meeting_id="att-1",
        attendees=["Bob Jones", "Carol Diaz"],
    ))
    bot: FakeBot = await asyncio.wait_for(fake.created.get(), 20)
    assert bot.request["bot_name"] == "Alice Smith (AI delegate)"
    assert bot.request["websocket_settings"]["audio"]["sample_rate"] == 16000
    await bot.connect_audio()

    assert await bot.change_state("joining", "join_requested") == 200
    assert await bot.change_state("waiting_room", "put_in_waiting_room") == 200
    assert await bot.participant("16778240", "Bob Jones") == 200
    # Heard while still in the lobby: recorded, never answered.
    assert await bot.transcript("16778240", "Bob Jones", QUESTION) == 200

    assert await bot.change_state("joined_recording", "joined_meeting") == 200
    disclosure = await until(lambda: [s for s in spoken(voiced, "att-1") if s.get("disclosure")])
    assert "AI delegate" in disclosure[0]["said"] and not disclosure[0]["cut"]
    heard_disclosure = len(bot.output_pcm)
    assert heard_disclosure > 16000 * 2  # over a second of it, played through the bot

    # The named question, answered aloud; Attendee's socket drops while the answer plays, and comes back.
    assert await bot.transcript("16778240", "Bob Jones", QUESTION, at_ms=60_000) == 200
    await until(lambda: len(bot.output_pcm) > heard_disclosure)
    await bot.drop_audio()
    await asyncio.sleep(1.0)
    await bot.connect_audio()
    answer = await until(lambda: [s for s in spoken(voiced, "att-1") if not s.get("disclosure")])
    assert "Friday" in answer[0]["said"] and not answer[0]["cut"]
    sent_ms = disclosure[0]["sent_ms"] + answer[0]["sent_ms"]
    await until(lambda: len(bot.output_pcm) >= (sent_ms - 10) * 32)  # 16 kHz, 2 bytes a sample: nothing lost
    assert set(bot.output_rates) == {16000}

    # A late joiner; a participant renamed; one the service cannot name.
    assert await bot.participant("16778999", "Dana Lee") == 200
    assert await bot.transcript("16778999", "Dana Lee", "Sorry I'm late, did I miss the migration date?") == 200
    assert await bot.transcript("16778240", "Bob J. (away)", "Friday it is then.") == 200
    assert await bot.participant("16779555", None) == 200
    assert await bot.transcript("16779555", None, "I will write the release notes.") == 200

    assert await bot.removed_by("Bob Jones") == 200
    attended = await asyncio.wait_for(meeting, 20)
    assert attended.admission == "removed" and attended.utterances == 5
    assert bot.left  # the bridge asked Attendee to take the bot out

    events = read_events(voiced.settings.db_path, "att-1")
    turns = [(e.payload["speaker"], e.payload["text"]) for e in events if e.kind == AuditKind.utterance]
    assert [s for s, _ in turns] == ["Bob Jones", "Bob Jones", "Dana Lee", "Bob Jones", "Carol Diaz"]
    assert [e.payload["state"] for e in events if e.kind == AuditKind.admission] == ["waiting_room", "in_meeting", "removed"]
    decisions = {e.utterance_id: e.payload for e in events if e.kind == AuditKind.decision}
    assert decisions[0]["speak"] == "" and "not in the meeting" in decisions[0]["reason"]
    assert "Friday" in decisions[1]["speak"]
    kinds = [e.kind for e in events]
    assert kinds.index(AuditKind.disclosure) < kinds.index(AuditKind.decision, kinds.index(AuditKind.disclosure))
    assert events[-1].kind == AuditKind.closed and events[-1].payload["reason"] == "removed"
    everything = json.dumps([e.payload for e in events])
    assert fake.api_key not in everything and fake.webhook_secret not in everything


async def test_a_webhook_not_signed_by_attendee_changes_nothing(make_server: Any, fake: FakeAttendee) -> None:
    server = make_server()
    meeting = asyncio.create_task(attend(
        MEETING_URL, ALICE, attendee.service(settings_of(fake), listen="transcript"),
        delegate_url=server.url, public_url=lambda port: f"http://127.0.0.1:{port}", meeting_id="att-2",
    ))
    bot = await asyncio.wait_for(fake.created.get(), 20)
    forged = payload("bot.state_change")
    forged["data"].update(new_state="joined_recording", event_type="joined_meeting", event_metadata=None)
    assert await bot.post(forged, signature=sign(forged, base64.b64encode(b"x" * 32).decode())) == 401
    changed = dict(forged, data={**forged["data"], "new_state": "waiting_room"})
    assert await bot.post(changed, signature=sign(forged, fake.webhook_secret)) == 401  # signed, then altered
    async with httpx.AsyncClient(base_url=server.url) as http:
        assert (await http.get("/v1/meetings/att-2")).json()["admission"] == "joining"
    assert await bot.change_state("ended", "meeting_ended") == 200
    assert (await asyncio.wait_for(meeting, 20)).admission == "ended"


def test_the_recorded_payloads_verify_and_map_as_attendee_means_them() -> None:
    secret = base64.b64encode(b"k" * 32).decode()
    body = payload("bot.state_change")
    raw = json.dumps(body, indent=2).encode()  # whitespace and key order do not matter: the JSON is canonicalised
    assert verified(raw, sign(body, secret), secret) == body
    assert verified(raw, sign(body, secret)[:-2] + "AA", secret) is None
    assert admission_of(StateChange.model_validate(body["data"])) == "removed"  # a remover is named
    plain = {"new_state": "post_processing", "event_type": "meeting_ended", "event_metadata": None}
    assert admission_of(StateChange.model_validate(plain)) == "ended"
    denied = {"new_state": "fatal_error", "event_type": "could_not_join_meeting", "event_sub_type": "request_to_join_denied"}
    assert admission_of(StateChange.model_validate(denied)) == "removed"
    assert admission_of(StateChange.model_validate({"new_state": "waiting_room"})) == "waiting_room"
    assert admission_of(StateChange.model_validate({"new_state": "joined_not_recording"})) == "in_meeting"
    assert admission_of(StateChange.model_validate({"new_state": "scheduled"})) is None


async def test_the_meetings_audio_into_the_delegates_recogniser_and_its_answer_out_as_bot_audio(
    voiced: LiveServer, fake: FakeAttendee
) -> None:
    from benchmark.asr import AUDIO_FIXTURES
    from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio

    load_speech_model()  # the server shares this process's model: loaded before the meeting
    sirui = json.loads((AUDIO_FIXTURES / "principal_sirui.json").read_text())
    question = read_audio(AUDIO_FIXTURES / "cue_named.wav")  # Peter: "Sirui, how is the data collection going?"
    meeting = asyncio.create_task(attend(
        MEETING_URL, sirui, attendee.service(settings_of(fake), listen="audio"), delegate_url=voiced.url,
        public_url=lambda port: f"http://127.0.0.1:{port}", meeting_id="att-3", attendees=["Peter"],
    ))
    bot = await asyncio.wait_for(fake.created.get(), 20)
    await bot.connect_audio()
    assert await bot.change_state("joined_recording", "joined_meeting") == 200
    await until(lambda: [s for s in spoken(voiced, "att-3") if s.get("disclosure")])
    before = len(bot.output_pcm)

    assert await bot.participant("p-7", "Peter", "speech_start") == 200  # Attendee says who speaks now
    step = SAMPLE_RATE // 10 * 2
    for at in range(0, len(question), step):  # in real time, 100 ms at a time, as Attendee streams it
        await bot.send_audio(question[at : at + step])
        await asyncio.sleep(0.1)
    answer = await until(lambda: [s for s in spoken(voiced, "att-3") if not s.get("disclosure")], timeout=60)
    assert "two hundred recordings" in answer[0]["said"]
    await until(lambda: len(bot.output_pcm) - before >= (answer[0]["sent_ms"] - 10) * 32)

    assert await bot.change_state("ended", "meeting_ended") == 200
    attended = await asyncio.wait_for(meeting, 30)
    turns = [e.payload for e in read_events(voiced.settings.db_path, "att-3") if e.kind == AuditKind.utterance]
    assert attended.admission == "ended" and attended.utterances == len(turns)
    assert turns and {t["speaker"] for t in turns} == {"Peter"}
    assert "data collection" in turns[-1]["text"].lower()
