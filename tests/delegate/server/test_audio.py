"""Audio in over a real WebSocket: PCM frames become transcripts, finals become utterances and decisions."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from benchmark.asr import AUDIO_FIXTURES
from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio
from testkit.live import LiveServer, expect_error, join, open_ws, recv, send

SIRUI = {
    "name": "Sirui Zhao",
    "aliases": ["Sirui"],
    "background": [
        {
            "context": "if asked about the data collection",
            "information": "The data collection is on track: two hundred recordings are in",
        }
    ],
}
CHUNK = SAMPLE_RATE // 10 * 2  # 100 ms of 16-bit mono


async def stream_pcm(ws: Any, pcm: bytes, realtime: bool = False, realtime_s: float = 0.0) -> None:
    """Send `pcm` in 100 ms chunks: in real time (all of it, or its first `realtime_s`), else at once."""
    for i in range(0, len(pcm), CHUNK):
        await ws.send(pcm[i : i + CHUNK])
        if realtime or i / 2 / SAMPLE_RATE < realtime_s:
            await asyncio.sleep(0.1)


async def frames_until(ws: Any, done: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Frames received until `done(frame)` holds for one of them (that one included)."""
    frames: list[dict[str, Any]] = []
    while True:
        frames.append(await recv(ws, timeout))
        if done(frames[-1]):
            return frames


async def test_streamed_name_cue_is_transcribed_and_answered(server: LiveServer) -> None:
    load_speech_model()  # the server shares this process's model: load it outside the timed part
    pcm = read_audio(AUDIO_FIXTURES / "name_cue.wav")
    async with await open_ws(server, "audio-1") as ws:
        await join(ws, principal=SIRUI, attendees=["Peter"])
        await send(ws, {"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"})
        assert (await recv(ws, 30))["of"] == "audio_start"
        # Partials come while audio comes in real time: the first turn is, the rest at once.
        sender = asyncio.create_task(stream_pcm(ws, pcm, realtime_s=3.0))
        frames = await frames_until(
            ws, lambda f: f["type"] == "decision" and f["decision"]["utterance_id"] == 1
        )
        await sender
        await send(ws, {"type": "audio_end"})
        frames += await frames_until(ws, lambda f: f["type"] == "ack" and f["of"] == "audio_end")

    transcripts = [f["utterance"] for f in frames if f["type"] == "transcript"]
    finals = [u for u in transcripts if u["final"]]
    assert [u["id"] for u in finals] == [0, 1]
    assert all(u["speaker"] == "Peter" for u in transcripts)
    assert any(not u["final"] for u in transcripts), "partials while someone speaks"
    assert "Sirui" in finals[1]["text"] and "data collection" in finals[1]["text"]
    # Each final goes through the session like a typed utterance: transcript, ack, then decision.
    kinds = [(f["type"], f.get("of")) for f in frames if f["type"] != "transcript" or f["utterance"]["final"]]
    assert kinds[:3] == [("transcript", None), ("ack", "utterance"), ("decision", None)]
    decisions = {f["decision"]["utterance_id"]: f["decision"] for f in frames if f["type"] == "decision"}
    assert not decisions[0]["speak"]
    assert decisions[1]["scenario"] == "explicit_cue"
    assert "data collection" in decisions[1]["speak"]


async def test_bad_audio_gets_error_frames_and_the_session_goes_on(server: LiveServer) -> None:
    async with await open_ws(server, "audio-faults") as ws:
        await join(ws, principal=SIRUI)
        await ws.send(b"\x00\x01" * 800)  # audio before audio_start
        await expect_error(ws, "binary_not_supported")
        for rate in (0, 100, 10_000_000):
            await send(ws, {"type": "audio_start", "sample_rate": rate})
            await expect_error(ws, "bad_message" if rate == 0 else "bad_audio")
        await send(ws, {"type": "audio_start", "sample_rate": 48_000})
        assert (await recv(ws, 30))["of"] == "audio_start"
        await ws.send(b"\x01\x02\x03")  # odd byte counts are carried over, not refused
        await ws.send(b"\x00" * 48_001)
        await send(ws, {"type": "audio_end"})
        ack = await recv(ws, 30)
        assert ack["type"] == "ack" and ack["of"] == "audio_end", "silence transcribes to nothing"
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Peter", "text": "Sirui, any news?"})
        assert (await recv(ws))["of"] == "utterance"
        assert (await recv(ws))["type"] == "decision"


async def test_audio_without_the_audio_extra_is_refused_naming_it(server: LiveServer, monkeypatch) -> None:
    # As if faster-whisper were not installed: importing delegate.asr.whisper afresh fails on it.
    monkeypatch.delitem(sys.modules, "delegate.asr.whisper")
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    async with await open_ws(server, "audio-missing-extra") as ws:
        await join(ws, principal=SIRUI)
        await send(ws, {"type": "audio_start", "sample_rate": SAMPLE_RATE})
        error = await expect_error(ws, "audio_not_supported")
        assert "pip install 'meeting-delegate[audio]'" in error["detail"]
        await send(ws, {"type": "utterance", "id": 0, "speaker": "Peter", "text": "Sirui, any news?"})
        assert (await recv(ws))["of"] == "utterance"  # the session goes on with typed utterances


async def test_audio_past_capacity_gets_asr_busy_and_typed_utterances_still_work(make_server) -> None:
    import httpx

    live = make_server(asr_max_streams=1)
    load_speech_model()
    pcm = read_audio(AUDIO_FIXTURES / "name_cue.wav")
    async with await open_ws(live, "busy-a") as a, await open_ws(live, "busy-b") as b:
        await join(a, principal=SIRUI, attendees=["Peter"])
        await join(b, principal=SIRUI, attendees=["Peter"])
        await send(a, {"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"})
        assert (await recv(a, 30))["of"] == "audio_start"
        await send(b, {"type": "audio_start", "sample_rate": SAMPLE_RATE})
        error = await expect_error(b, "asr_busy")
        assert "at most 1 audio stream" in error["detail"]
        await b.send(pcm[:CHUNK])
        await expect_error(b, "binary_not_supported")  # nothing was opened
        await send(b, {"type": "utterance", "id": 0, "speaker": "Peter", "text": "Sirui, any news on the data collection?"})
        frames = await frames_until(b, lambda f: f["type"] == "decision")
        assert "data collection" in frames[-1]["decision"]["speak"]
        # The meeting that has the place may start its stream again (the new one replaces the old).
        await send(a, {"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"})
        assert (await recv(a, 30))["of"] == "audio_start"
        async with httpx.AsyncClient(base_url=live.url) as http:
            metrics = (await http.get("/metrics")).text
        assert "delegate_asr_streams 1.0" in metrics
        assert "delegate_asr_capacity 1.0" in metrics
        assert 'delegate_errors_total{code="asr_busy"} 1.0' in metrics

        # Meeting a streams its cue; its finals are decoded (queue wait measured), then it ends its stream.
        await stream_pcm(a, pcm, realtime_s=3.0)
        await send(a, {"type": "audio_end"})
        frames = await frames_until(a, lambda f: f["type"] == "ack" and f["of"] == "audio_end")
        assert sum(f["type"] == "transcript" and f["utterance"]["final"] for f in frames) == 2
        # The place is free again: b's audio is heard now.
        await send(b, {"type": "audio_start", "sample_rate": SAMPLE_RATE})
        assert (await recv(b, 30))["of"] == "audio_start"
        async with httpx.AsyncClient(base_url=live.url) as http:
            metrics = (await http.get("/metrics")).text
        assert 'delegate_asr_queue_wait_seconds_count{kind="final"} 2.0' in metrics
        assert "delegate_asr_partials_shed_total" in metrics
        # Leaving without audio_end gives the place up too.
        await send(b, {"type": "leave"})
        assert (await recv(b))["of"] == "leave"
    async with httpx.AsyncClient(base_url=live.url) as http:
        assert "delegate_asr_streams 0.0" in (await http.get("/metrics")).text


async def test_a_bot_gone_mid_sentence_frees_its_place_and_its_last_words_are_kept(make_server) -> None:
    from delegate.store import AuditKind, read_events

    live = make_server(asr_max_streams=1)
    load_speech_model()
    pcm = read_audio(AUDIO_FIXTURES / "name_cue.wav")
    cut = int(8.9 * SAMPLE_RATE) * 2  # the cue's last word has just been said: no silence has ended it yet
    a = await open_ws(live, "gone-a")
    await join(a, principal=SIRUI, attendees=["Peter"])
    await send(a, {"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"})
    assert (await recv(a, 30))["of"] == "audio_start"
    await stream_pcm(a, pcm[:cut], realtime_s=3.0)
    await frames_until(a, lambda f: f["type"] == "decision" and f["decision"]["utterance_id"] == 0)
    await a.close()  # the bot is gone, without audio_end or leave

    async with await open_ws(live, "gone-b") as b:
        await join(b, principal=SIRUI, attendees=["Peter"])
        for _ in range(50):  # its place frees once the gone stream's words are decoded
            await send(b, {"type": "audio_start", "sample_rate": SAMPLE_RATE})
            frame = await recv(b, 30)
            if frame["type"] == "ack":
                break
            assert frame["code"] == "asr_busy", frame
            await asyncio.sleep(0.2)
        assert frame["type"] == "ack" and frame["of"] == "audio_start", frame

    heard = [e.payload["text"] for e in read_events(live.settings.db_path, "gone-a") if e.kind == AuditKind.utterance]
    assert len(heard) == 2 and "data collection" in heard[1].lower(), heard
    async with await open_ws(live, "gone-a") as again:
        ack = await join(again, principal=None, last_utterance_id=0)
        assert ack["last_utterance_id"] == 1
        decision = await recv(again, 30)  # decided while the bot was away: sent on its return
        assert decision["resumed"] and decision["decision"]["utterance_id"] == 1
        assert "two hundred recordings" in decision["decision"]["speak"]
        await again.send(pcm[:CHUNK])  # its stream ended with its connection: audio_start opens another
        await expect_error(again, "binary_not_supported")
