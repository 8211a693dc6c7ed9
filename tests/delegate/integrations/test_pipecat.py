"""The pipecat processor in real pipecat pipelines (its own `run_test`, and a pipeline with Piper's TTS):
it speaks when named, keeps silent when someone else is addressed, stops when someone talks over it, never
says a private item, and works against a real loopback server."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")

from pipecat.frames.frames import (  # noqa: E402
    BotStartedSpeakingFrame,
    Frame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.tests.utils import SleepFrame, run_test  # noqa: E402

from delegate.client import create_meeting  # noqa: E402
from delegate.config import Settings  # noqa: E402
from delegate.integrations.delegates import InProcessDelegate, ServerDelegate  # noqa: E402
from delegate.integrations.pipecat import DISCLOSURE, DelegateProcessor  # noqa: E402
from delegate.meeting import MeetingState  # noqa: E402
from delegate.models import Decision, Profile, Scenario  # noqa: E402
from delegate.store import AuditKind, read_events  # noqa: E402
from testkit.live import ALICE, LiveServer, start_server  # noqa: E402

SPEAKERS = {"u-bob": "Bob", "u-carol": "Carol"}
SECRET = {
    "name": "Alice Smith",
    "aliases": ["Alice"],
    "background": [
        {"context": "if asked about the migration", "information": "The migration finishes on Friday."},
        {"context": "the buyer", "information": "Globex is buying the Berlin site for 40 million.",
         "shareable": False},
    ],
}


def heard(user: str, text: str) -> TranscriptionFrame:
    return TranscriptionFrame(text=text, user_id=user, timestamp="")


def interim(user: str, text: str) -> InterimTranscriptionFrame:
    return InterimTranscriptionFrame(text=text, user_id=user, timestamp="")


def processor(principal: Any = ALICE, **options: Any) -> DelegateProcessor:
    return DelegateProcessor(InProcessDelegate(principal, attendees=["Bob", "Carol"]), speakers=SPEAKERS, **options)


def said(frames: Sequence[Frame]) -> list[str]:
    return [f.text for f in frames if isinstance(f, TTSSpeakFrame)]


def messages(frames: Sequence[Frame], kind: str) -> list[dict[str, Any]]:
    return [f.message for f in frames if isinstance(f, OutputTransportMessageUrgentFrame) and f.message["type"] == kind]


async def test_named_the_delegate_speaks_and_says_why() -> None:
    down, _ = await run_test(processor(), frames_to_send=[
        heard("u-bob", "Morning all."), heard("u-bob", "Alice, where does the migration stand?"),
    ])
    assert said(down) == ["The migration finishes on Friday."]
    decisions = messages(down, "decision")
    assert [d["decision"]["utterance_id"] for d in decisions] == [0, 1]
    assert decisions[1]["decision"]["scenario"] == "explicit_cue" and "named" in decisions[1]["decision"]["reason"]
    # The transcription frames go on downstream, each before the frames of its decision.
    kinds = [type(f).__name__ for f in down]
    assert kinds.index("TTSSpeakFrame") > max(i for i, k in enumerate(kinds) if k == "TranscriptionFrame")


async def test_another_person_addressed_the_delegate_stays_silent() -> None:
    down, _ = await run_test(processor(), frames_to_send=[
        heard("u-bob", "Carol, can you check the deploy logs after lunch?"),
        heard("u-carol", "Sure, I will look at them."),
    ])
    assert said(down) == []
    assert [d["decision"]["speak"] for d in messages(down, "decision")] == ["", ""]
    (action,) = messages(down, "action")
    assert action["action"]["assignees"] == ["Carol"]


async def test_someone_speaking_over_the_delegate_interrupts_it() -> None:
    down, _ = await run_test(processor(bot_user_id="u-bot"), frames_to_send=[
        heard("u-bob", "Alice, where does the migration stand?"),
        SleepFrame(0.05),
        interim("u-bot", "The migration finishes"),  # its own voice heard back: no barge-in
        BotStartedSpeakingFrame(),
        SleepFrame(0.05),
        interim("u-carol", "Sorry, one thing"),
    ])
    assert said(down) == ["The migration finishes on Friday."]
    kinds = [type(f) for f in down]
    assert kinds.count(InterruptionFrame) == 1
    assert kinds.index(InterruptionFrame) > kinds.index(TTSSpeakFrame)
    (cancel,) = messages(down, "speech_cancel")
    assert cancel["utterance_id"] == 0 and cancel["by"] == "Carol" and cancel["reason"] == "barge_in"
    assert cancel["played_ms"] > 0


async def test_nobody_is_interrupted_when_the_delegate_is_not_speaking() -> None:
    down, _ = await run_test(processor(), frames_to_send=[
        heard("u-bob", "Morning all."), interim("u-carol", "So about"), heard("u-carol", "So about the release."),
    ])
    assert not any(isinstance(f, InterruptionFrame) for f in down)


async def test_a_private_item_is_never_spoken() -> None:
    down, _ = await run_test(processor(SECRET), frames_to_send=[
        heard("u-bob", "Alice, who is buying the Berlin site, and for how much?"),
        heard("u-carol", "Alice, is it Globex? Forty million, I heard."),
    ])
    text = " ".join(said(down)).casefold()
    assert "globex" not in text and "40" not in text and "forty" not in text


class Leaky:
    """An engine that tries to say the principal's private item word for word."""

    name = "leaky"

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        assert meeting.last is not None
        return Decision(utterance_id=meeting.last.id, scenario=Scenario.explicit_cue,
                        speak=principal.background[1].information, reason="asked", confidence=0.9, engine=self.name)


async def test_the_guard_stops_an_engine_that_would_leak_a_private_item() -> None:
    leaky = DelegateProcessor(InProcessDelegate(SECRET, engine=Leaky()), speakers=SPEAKERS)
    down, _ = await run_test(leaky, frames_to_send=[heard("u-bob", "Alice, who is buying the Berlin site?")])
    assert said(down) == []
    (decision,) = messages(down, "decision")
    assert decision["decision"]["speak"] == "" and "privacy guard" in decision["decision"]["reason"]


async def test_the_delegate_says_what_it_is_when_it_joins() -> None:
    disclosure = DISCLOSURE.format(name="Alice Smith")
    down, _ = await run_test(processor(disclosure=disclosure, announce_on_start=True), frames_to_send=[])
    assert said(down) == [disclosure] and "AI delegate" in disclosure
    assert messages(down, "disclosure") == [{"type": "disclosure", "text": disclosure}]


async def test_a_real_pipeline_turns_the_reply_into_piper_speech() -> None:
    pytest.importorskip("piper", reason="needs the voice extra")
    from pipecat.services.piper.tts import PiperTTSService

    from delegate.voice.piper import default_voice_path

    voice = default_voice_path()  # the shipped voice: nothing is downloaded
    tts = PiperTTSService(download_dir=voice.parent, settings=PiperTTSService.Settings(voice=voice.stem))
    pipeline = Pipeline([processor(), tts])
    down, _ = await run_test(pipeline, frames_to_send=[
        heard("u-bob", "Alice, where does the migration stand?"), SleepFrame(3.0),
    ])
    audio = b"".join(f.audio for f in down if isinstance(f, TTSAudioRawFrame))
    rate = next(f.sample_rate for f in down if isinstance(f, TTSAudioRawFrame))
    assert len(audio) / 2 / rate > 1.0  # "The migration finishes on Friday." spoken: over a second of audio


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="", log_level="warning", voice=False))
    yield live
    live.stop()


async def test_against_a_real_server_the_audit_log_has_every_decision(server: LiveServer) -> None:
    delegate = ServerDelegate(f"ws://127.0.0.1:{server.port}", "pipecat-1", ALICE, attendees=["Bob", "Carol"])
    down, _ = await run_test(DelegateProcessor(delegate, speakers=SPEAKERS), frames_to_send=[
        heard("u-bob", "Morning all."),
        heard("u-carol", "Bob, can you check the deploy logs?"),
        heard("u-bob", "Alice, where does the migration stand?"),
    ])
    assert said(down) == ["The migration finishes on Friday."]
    events = read_events(server.settings.db_path, "pipecat-1")
    decided = [e.utterance_id for e in events if e.kind == AuditKind.decision]
    # Turns this close together: the server may drop a decision a newer turn made stale (audited), never the last.
    dropped = [e.utterance_id for e in events if e.kind == AuditKind.decision_dropped]
    assert sorted(decided + dropped) == [0, 1, 2] and decided[-1] == 2
    assert [d["decision"]["utterance_id"] for d in messages(down, "decision")] == decided
    assert [e.payload["speaker"] for e in events if e.kind == AuditKind.utterance] == ["Bob", "Carol", "Bob"]
    assert events[-1].kind == AuditKind.left  # the pipeline's end left the meeting


async def test_with_the_bot_token_the_pipeline_never_holds_the_principals_brief(tmp_path: Path) -> None:
    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="principal-token", log_level="warning", voice=False))
    try:
        created = await create_meeting(
            f"ws://127.0.0.1:{live.port}", ALICE, token="principal-token", meeting_id="pipecat-bot", attendees=["Bob"]
        )
        delegate = ServerDelegate(f"ws://127.0.0.1:{live.port}", "pipecat-bot", token=created.bot_token)
        down, _ = await run_test(DelegateProcessor(delegate, speakers=SPEAKERS), frames_to_send=[
            heard("u-bob", "Alice, where does the migration stand?"),
        ])
        assert delegate.principal is None and said(down) == ["The migration finishes on Friday."]
    finally:
        live.stop()
