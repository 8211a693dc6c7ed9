"""`python -m benchmark.bridges`: what the meeting-bot bridges cost, against the fake services of testkit/.

- overhead per utterance: one signed `transcript.update` (Attendee) or `transcript.data` (Recall.ai) webhook
  through the bridge's own listener (in process, over ASGI: no network), its signature checked, its payload read,
  its speaker named, until the utterance is handed to the delegate's stream (a link that records it and returns:
  the delegate's own time is the server's, measured by benchmark.latency); p50 and p99 over `--events`;
- audio round trip (Attendee, the meeting's audio into the delegate's own recogniser): a real delegate server on
  loopback (its recogniser and its voice), the fake Attendee streaming `cue_named.wav` in real time; from the
  moment the question's last spoken sample was sent (its reference end time) to the first `realtime_audio.bot_output`
  chunk of the answer; once (each run is a meeting of about 30 s).

Figures go to stdout; nothing asserts them (tests/delegate/integrations test behaviour, not time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from delegate.integrations import attendee, recall
from delegate.integrations.bridge import MeetingBridge
from delegate.integrations.speakers import Roster

QUESTION = "Alice, when does the database migration finish?"


class RecordingLink:
    """A `DelegateLink` that only counts: what the bridge hands on, and when."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, float]] = []
        """(wall, this thread's CPU) when each utterance was handed on."""
        self._next = 0

    async def send(self, speaker: str, text: str, *, start: float | None = None, end: float | None = None) -> int:
        self.sent.append((time.perf_counter(), time.thread_time()))
        self._next += 1
        return self._next - 1

    async def admission(self, state: Any, detail: str = "") -> None:
        return None

    async def start_audio(self, sample_rate: int = 16000, speaker: str | None = None) -> None:
        return None

    async def send_pcm(self, pcm: bytes) -> None:
        return None


def _quantiles(took: list[tuple[float, float]]) -> dict[str, float]:
    """Wall time (what a loaded machine's scheduler adds is in it) and CPU time of this thread (what the bridge's
    code itself costs), after the first events (they warm Python's caches)."""
    took = took[min(50, len(took) // 10):]
    wall = statistics.quantiles([w for w, _ in took], n=100)
    cpu = statistics.quantiles([c for _, c in took], n=100)
    return {"p50_ms": round(wall[49], 3), "p99_ms": round(wall[98], 3), "cpu_p50_ms": round(cpu[49], 3),
            "cpu_p99_ms": round(cpu[98], 3), "n": len(took)}


def _since(link: RecordingLink, wall: float, cpu: float) -> tuple[float, float]:
    sent_wall, sent_cpu = link.sent[-1]
    return (sent_wall - wall) * 1000, (sent_cpu - cpu) * 1000


async def attendee_overhead(events: int) -> dict[str, float]:
    from testkit.attendee_fake import payload

    secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
    link = RecordingLink()
    bridge = MeetingBridge(link=link, roster=Roster(["Bob Jones", "Carol Diaz"]))
    listener = attendee.AttendeeListener(bridge, attendee.AttendeeAudioOut(), SecretStr(secret), "transcript")
    bodies = []
    for i in range(events):
        body = payload("transcript.update")
        body["idempotency_key"] = f"k{i}"
        body["data"]["speaker_uuid"] = str(i % 7)
        body["data"]["speaker_name"] = ["Bob Jones", "Carol Diaz", "Dana Lee"][i % 3]
        body["data"]["transcription"]["transcript"] = f"{QUESTION} ({i})"
        raw = json.dumps(body).encode()
        bodies.append((raw, attendee.sign(body, secret)))
    took: list[tuple[float, float]] = []
    transport = httpx.ASGITransport(app=listener.app())
    async with httpx.AsyncClient(transport=transport, base_url="http://bridge") as http:
        for raw, signature in bodies:
            began, cpu = time.perf_counter(), time.thread_time()
            r = await http.post("/attendee/webhook", content=raw, headers={"X-Webhook-Signature": signature})
            assert r.status_code == 200, r.text
            took.append(_since(link, began, cpu))
    return _quantiles(took)


async def recall_overhead(events: int) -> dict[str, float]:
    from testkit.recall_fake import payload

    secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="
    link = RecordingLink()
    bridge = MeetingBridge(link=link, roster=Roster(["Bob Jones", "Carol Diaz"]))
    listener = recall.RecallListener(bridge, SecretStr(secret))
    took: list[tuple[float, float]] = []
    transport = httpx.ASGITransport(app=listener.app())
    async with httpx.AsyncClient(transport=transport, base_url="http://bridge") as http:
        for i in range(events):
            body = payload("transcript.data")
            template = body["data"]["data"]["words"][0]
            body["data"]["data"]["words"] = [{**template, "text": w} for w in f"{QUESTION} ({i})".split()]
            body["data"]["data"]["participant"].update(id=i % 7, name=["Bob Jones", "Carol Diaz", "Dana Lee"][i % 3])
            raw = json.dumps(body).encode()
            now = int(time.time())
            headers = {"webhook-id": f"msg_{i}", "webhook-timestamp": str(now),
                       "webhook-signature": recall.sign(f"msg_{i}", now, raw, secret)}
            began, cpu = time.perf_counter(), time.thread_time()
            r = await http.post("/recall/realtime", content=raw, headers=headers)
            assert r.status_code == 200, r.text
            took.append(_since(link, began, cpu))
    return _quantiles(took)


async def attendee_audio_round_trip(db: Path) -> dict[str, Any]:
    """One meeting: the spoken question in through Attendee's mixed audio, the spoken answer out."""
    from benchmark.asr import AUDIO_FIXTURES
    from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio
    from delegate.config import Settings
    from delegate.integrations.attend import attend, serving
    from delegate.voice.stream import load_synthesizer
    from testkit.attendee_fake import FakeAttendee
    from testkit.live import start_server

    load_speech_model()
    load_synthesizer()
    references = json.loads((AUDIO_FIXTURES / "references.json").read_text())["clips"]["cue_named"]
    spoken_end_s = references["segments"][-1]["end"]
    question = read_audio(AUDIO_FIXTURES / "cue_named.wav")
    sirui = json.loads((AUDIO_FIXTURES / "principal_sirui.json").read_text())
    live = start_server(Settings(db_path=db, api_tokens="", log_level="warning", engine="local", voice=True))
    fake = FakeAttendee()
    try:
        async with serving(fake.app(), "127.0.0.1", 0) as port:
            settings = attendee.AttendeeSettings(url=f"http://127.0.0.1:{port}", api_key=fake.api_key,
                                                 webhook_secret=fake.webhook_secret)
            meeting = asyncio.create_task(attend(
                "https://meet.google.com/abc-def-ghi", sirui, attendee.service(settings, listen="audio"),
                delegate_url=live.url, public_url=lambda p: f"http://127.0.0.1:{p}", attendees=["Peter"],
            ))
            bot = await asyncio.wait_for(fake.created.get(), 30)
            await bot.connect_audio()
            await bot.change_state("joined_recording", "joined_meeting")
            while not bot.output or time.perf_counter() - bot.output_at[-1] < 1.5:  # the disclosure plays out
                await asyncio.sleep(0.1)
            heard = len(bot.output)
            await bot.participant("p-7", "Peter", "speech_start")
            step = SAMPLE_RATE // 10 * 2
            said_at: float | None = None
            began = time.monotonic()
            for i, at in enumerate(range(0, len(question), step)):
                await bot.send_audio(question[at : at + step])
                if said_at is None and (i + 1) * 0.1 >= spoken_end_s:
                    said_at = time.perf_counter()
                await asyncio.sleep(max(0.0, began + (i + 1) * 0.1 - time.monotonic()))
            while len(bot.output) == heard:
                await asyncio.sleep(0.005)
            answered_at = bot.output_at[heard]
            await bot.change_state("ended", "meeting_ended")
            await asyncio.wait_for(meeting, 30)
    finally:
        live.stop()
    assert said_at is not None
    return {"audio_round_trip_ms": round((answered_at - said_at) * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmark.bridges", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="Webhooks per service for the overhead (default 2000).")
    parser.add_argument("--no-audio", action="store_true", help="Skip the audio round trip (it needs the audio and voice extras, ~30 s).")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "attendee_overhead": asyncio.run(attendee_overhead(args.events)),
        "recall_overhead": asyncio.run(recall_overhead(args.events)),
    }
    if not args.no_audio:
        with tempfile.TemporaryDirectory() as tmp:
            figures["attendee_audio"] = asyncio.run(attendee_audio_round_trip(Path(tmp) / "audit.sqlite"))
    for name, values in figures.items():
        print(name, " ".join(f"{k}={v}" for k, v in values.items()))


if __name__ == "__main__":
    main()
