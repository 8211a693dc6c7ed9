"""docs/meetings.md: the example bot's pipeline, run verbatim in a real pipecat pipeline with Piper's TTS."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")
pytest.importorskip("piper", reason="needs the voice extra")

from pipecat.frames.frames import (  # noqa: E402
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.tests.utils import SleepFrame, run_test  # noqa: E402

from testkit.live import ALICE  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "meetings.md"


def _example() -> dict[str, object]:
    (code,) = re.findall(r"```python\n(import asyncio.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    namespace: dict[str, object] = {"__name__": "example_bot"}
    exec(compile(code, str(DOC), "exec"), namespace)  # defines the functions; main() needs a Daily room
    return namespace


async def test_the_example_bots_pipeline_speaks_when_the_principal_is_named() -> None:
    delegate, tts = _example()["delegate_pipeline"](ALICE, attendees=["Bob"])  # type: ignore[operator]
    delegate.name_speaker("p-1", "Bob")
    delegate.announce_on_start = True  # here no participant joins to call `announce()`
    down, _ = await run_test(Pipeline([delegate, tts]), frames_to_send=[
        TranscriptionFrame(text="Morning all.", user_id="p-1", timestamp=""),
        TranscriptionFrame(text="Alice, where does the migration stand?", user_id="p-1", timestamp=""),
        SleepFrame(4.0),
    ])
    # The TTS takes the TTSSpeakFrames and sends audio on.
    assert not any(isinstance(f, TTSSpeakFrame) for f in down)
    assert delegate.spoken[0].startswith("Hello, this is Alice Smith's AI delegate")
    assert delegate.spoken[1:] == ["The migration finishes on Friday."]
    audio = [f for f in down if isinstance(f, TTSAudioRawFrame)]
    assert sum(len(f.audio) for f in audio) / 2 / audio[0].sample_rate > 1.0  # the reply, spoken
    data = [f.message for f in down if isinstance(f, OutputTransportMessageUrgentFrame)]
    assert [d["decision"]["scenario"] for d in data if d["type"] == "decision"] == ["none", "explicit_cue"]
    # Bob's first words came while the disclosure was being said: it stopped for him (barge-in).
    assert [(d["utterance_id"], d["by"]) for d in data if d["type"] == "speech_cancel"] == [(-1, "Bob")]
