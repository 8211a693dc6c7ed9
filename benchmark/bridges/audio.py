"""The audio round trip through Attendee: the fake Attendee's mixed audio in, the answer's first bot audio out."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from delegate.integrations import attendee


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
