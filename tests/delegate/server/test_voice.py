"""Voice out over a real WebSocket: real Piper speech after the decision, paced; barge-in; echo; opt-out."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from benchmark.asr import AUDIO_FIXTURES
from benchmark.intelligibility import normalise, wer
from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio
from delegate.server.session.voice_out import CHUNK_S, LEAD_S
from delegate.store import AuditKind, read_events
from delegate.voice.pcm import pcm_to_float
from delegate.voice.stream import load_synthesizer
from testkit.live import LiveServer, frame, join, open_ws, send, ticks

CUE = "Alice, when does the database migration finish?"
BYTES_PER_S = 22050 * 2  # the voice's 16-bit PCM
SIRUI = json.loads((AUDIO_FIXTURES / "principal_sirui.json").read_text())


@pytest.fixture
def voiced(make_server: Any) -> LiveServer:
    load_synthesizer()  # the server shares this process's voice: load it outside the timed parts
    return make_server(voice=True)


async def until(ws: ClientConnection, kind: str, timeout: float = 20.0) -> tuple[list[bytes], dict[str, Any]]:
    """Binary frames received before the first JSON frame of `kind`, and that frame (others are skipped)."""
    audio: list[bytes] = []
    while True:
        f = await frame(ws, timeout)
        if isinstance(f, bytes):
            audio.append(f)
        elif f["type"] == kind:
            return audio, f


async def speech_events(server: LiveServer, meeting_id: str) -> list[dict[str, Any]]:
    """The meeting's `speech` audit events, once there is one (a reply is recorded once its last audio played)."""
    for _ in range(100):  # 5 s at most
        said = [e.payload for e in read_events(server.settings.db_path, meeting_id) if e.kind == AuditKind.speech]
        if said:
            break
        await asyncio.sleep(0.05)
    return said


async def test_a_spoken_reply_comes_as_speech_start_pcm_and_speech_end(voiced: LiveServer) -> None:
    async with await open_ws(voiced, "voice-1") as ws:
        await join(ws)
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": CUE})
        assert (await frame(ws))["type"] == "ack"  # type: ignore[index]
        decision = await frame(ws)
        assert isinstance(decision, dict) and decision["type"] == "decision"
        text = decision["decision"]["speak"]
        assert "Friday" in text
        start = await frame(ws)
        assert start == {"type": "speech_start", "meeting_id": "voice-1", "utterance_id": 0, "text": text,
                         "sample_rate": 22050}
        audio, end = await until(ws, "speech_end")
    pcm = b"".join(audio)
    assert audio and all(len(a) % 2 == 0 for a in audio)
    assert end["utterance_id"] == 0 and end["duration_ms"] == round(len(pcm) / 2 / 22050 * 1000)
    # What came out is the reply, said: tiny.en hears the text back.
    heard = load_speech_model().transcribe(pcm_to_float(pcm, 22050, SAMPLE_RATE), beam_size=5)
    assert wer([normalise(text)], [normalise(heard)]) <= 0.25, heard
    said = await speech_events(voiced, "voice-1")
    assert said == [{"said": text, "played_ms": end["duration_ms"], "sent_ms": end["duration_ms"], "cut": False,
                     "reason": None}]


async def test_a_client_that_opts_out_gets_text_only(voiced: LiveServer) -> None:
    async with await open_ws(voiced, "voice-2") as ws:
        await join(ws, voice=False)
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": CUE})
        assert (await frame(ws))["type"] == "ack"  # type: ignore[index]
        decision = await frame(ws)
        assert isinstance(decision, dict) and decision["decision"]["speak"]
        with pytest.raises(TimeoutError):
            await frame(ws, timeout=2.0)


async def test_a_voice_less_server_says_so_to_a_client_that_asks_for_voice(make_server: Any) -> None:
    server = make_server(voice=False)
    async with await open_ws(server, "voice-3") as ws:
        await join(ws, voice=True)
        error = await frame(ws)
        assert isinstance(error, dict) and error["code"] == "voice_not_supported"
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": CUE})
        assert (await frame(ws))["type"] == "ack"  # type: ignore[index]
        assert (await frame(ws))["type"] == "decision"  # type: ignore[index]
        with pytest.raises(TimeoutError):
            await frame(ws, timeout=1.0)


async def test_someone_speaking_cuts_the_reply_where_it_was_heard(voiced: LiveServer) -> None:
    async with await open_ws(voiced, "voice-4") as ws:
        await join(ws)
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": CUE})
        await until(ws, "speech_start")
        received = 0
        while received < 1.4 * BYTES_PER_S:  # about a second played: the server sends LEAD_S ahead
            f = await frame(ws)
            assert isinstance(f, bytes)
            received += len(f)
        await send(ws, {"type": "utterance", "id": 1, "speaker": "Carol", "text": "Sorry, one more thing on that."})
        heard = received
        late, cancel = await until(ws, "speech_cancel")
        received += sum(map(len, late))
        # Nothing more of it afterwards: the next frames are the new utterance's ack and decision.
        after = [await frame(ws) for _ in range(2)]
    assert [f["type"] for f in after if isinstance(f, dict)] == ["ack", "decision"], after
    assert cancel["utterance_id"] == 0 and cancel["reason"] == "barge_in"
    # Heard so far, by the server's clock: never more than was sent, and all that the client had before it
    # spoke up but the part the server sends ahead of playback.
    ahead_ms = (LEAD_S + CHUNK_S) * 1000
    assert heard / BYTES_PER_S * 1000 - ahead_ms <= cancel["played_ms"] <= received / BYTES_PER_S * 1000, cancel
    said = await speech_events(voiced, "voice-4")
    assert len(said) == 1 and said[0]["cut"] and said[0]["played_ms"] == cancel["played_ms"]
    # What was said is the reply's first words, as many as had played.
    words = said[0]["said"].split()
    assert words and words == reply_text(voiced, "voice-4").split()[: len(words)]
    assert len(words) < len(reply_text(voiced, "voice-4").split())
    assert said[0]["by"] == "Carol"


def reply_text(server: LiveServer, meeting_id: str) -> str:
    """The reply the delegate decided on (and started saying) in the meeting."""
    decision = next(e for e in read_events(server.settings.db_path, meeting_id) if e.kind == AuditKind.decision)
    return str(decision.payload["speak"])


async def test_the_delegate_hearing_itself_in_the_meetings_audio_is_not_decided_on(voiced: LiveServer) -> None:
    """A bot sends the meeting's mixed audio: the cue, then the delegate's own voice coming back."""
    load_speech_model()
    meeting = read_audio(AUDIO_FIXTURES / "name_cue.wav")
    cue = meeting[int(5.0 * SAMPLE_RATE) * 2 :]  # "Sirui, could you give us an update on the data collection?"
    chunk = SAMPLE_RATE // 10 * 2
    frames: list[dict[str, Any]] = []
    voice = bytearray()  # what the delegate said, as the bot plays it into the meeting (16 kHz)
    ended = asyncio.Event()
    async with await open_ws(voiced, "voice-5") as ws:
        await join(ws, principal=SIRUI, attendees=["Peter"])
        await send(ws, {"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"})

        async def receive() -> None:
            while True:
                f = await frame(ws, 60)
                if isinstance(f, bytes):
                    pcm = pcm_to_float(f, 22050, SAMPLE_RATE)
                    voice.extend((pcm * 32767).astype("<i2").tobytes())
                    continue
                frames.append(f)
                if f["type"] in ("speech_end", "speech_cancel"):
                    ended.set()

        receiver = asyncio.create_task(receive())
        # Real time, as a bot does: 100 ms of the meeting every 100 ms; after the cue, whatever the delegate
        # says comes back in (a 200 ms round trip), else silence; until 2 s after its speech ended.
        played = 0
        ended_at = None
        async for tick in ticks(0.1):
            i = tick * chunk
            if i < len(cue):
                out = cue[i : i + chunk]
            else:
                echo = bytes(voice[played : played + chunk])
                if len(voice) >= 2 * chunk or played:
                    played += len(echo)
                out = echo + bytes(chunk - len(echo))
            await ws.send(out)
            if ended.is_set() and played >= len(voice) and ended_at is None:
                ended_at = tick
            if ended_at is not None and tick - ended_at >= 25:  # 2.5 s of the meeting after the echo
                break
            assert i < 60 * SAMPLE_RATE * 2, "the reply never ended within a minute of the meeting"
        await send(ws, {"type": "audio_end"})
        await asyncio.sleep(1.0)
        receiver.cancel()

    decisions = [f["decision"] for f in frames if f["type"] == "decision"]
    assert len(decisions) == 1 and "data collection" in decisions[0]["speak"], decisions
    assert [f["type"] for f in frames if f["type"].startswith("speech")] == ["speech_start", "speech_end"]
    events = read_events(voiced.settings.db_path, "voice-5")
    echoes = [e.payload for e in events if e.kind == AuditKind.echo]
    assert echoes and all(e["of_utterance_id"] == decisions[0]["utterance_id"] for e in echoes)
    utterances = [e.payload["text"] for e in events if e.kind == AuditKind.utterance]
    assert len(utterances) == 1 and "Sirui" in utterances[0], utterances
    finals = [f["utterance"] for f in frames if f["type"] == "transcript" and f["utterance"]["final"]]
    assert len(finals) == 1, finals


async def test_with_approval_the_voice_follows_the_approval_and_says_the_edit(voiced: LiveServer) -> None:
    import httpx

    edited = "The migration lands on Friday afternoon."
    async with await open_ws(voiced, "voice-6") as ws:
        await join(ws, approval="speech")
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Bob", "text": CUE})
        assert (await frame(ws))["type"] == "ack"  # type: ignore[index]
        with pytest.raises(TimeoutError):  # held: neither text nor voice reaches the bot
            await frame(ws, timeout=1.5)
        async with httpx.AsyncClient(base_url=voiced.url) as http:
            r = await http.post("/v1/meetings/voice-6/speech/0", json={"verdict": "approve", "text": edited})
            assert r.status_code == 200, r.text
        decision = await frame(ws)
        assert isinstance(decision, dict) and decision["decision"]["speak"] == edited
        start = await frame(ws)
        assert isinstance(start, dict) and start["type"] == "speech_start" and start["text"] == edited
        audio, end = await until(ws, "speech_end")
    heard = load_speech_model().transcribe(pcm_to_float(b"".join(audio), 22050, SAMPLE_RATE), beam_size=5)
    assert wer([normalise(edited)], [normalise(heard)]) <= 0.25, heard
