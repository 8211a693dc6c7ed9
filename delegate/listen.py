"""`python -m delegate listen`: transcribe a recording and show the decisions the delegate would have made live.

With `--speak FILE.wav` it also voices them: the recording with the delegate's spoken replies mixed in,
each placed where it would have started live.
"""

from __future__ import annotations

import asyncio
import io
import time
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import ValidationError
from rich.console import Console

from delegate.asr.whisper import (
    SAMPLE_RATE,
    StreamingTranscriber,
    TranscriptEvent,
    load_speech_model,
    load_turn_end,
    read_audio,
)
from delegate.config import Settings
from delegate.decide import build_engine
from delegate.decide.base import Engine, hear
from delegate.language.counts import counted
from delegate.meeting import MeetingState
from delegate.models import UNKNOWN_SPEAKER, Decision, Profile, Speaking, Utterance
from delegate.server.protocol import field_hint
from delegate.voice.base import split_sentences
from delegate.voice.pcm import pcm_to_float

if TYPE_CHECKING:
    from delegate.voice.base import Synthesizer

_CHUNK_BYTES = SAMPLE_RATE // 10 * 2  # 100 ms, as a live client would send it


class ListenInputError(Exception):
    """A recording or profile that cannot be used, said in one line."""


def run_listen(
    audio: Path,
    principal: Path,
    *,
    settings: Settings | None = None,
    console: Console | None = None,
    attendees: list[str] | None = None,
    speak: Path | None = None,
    speaking: Speaking | None = None,
) -> list[tuple[Utterance, Decision]]:
    """Feed `audio` through recognition and the engine, printing each utterance and decision as it comes;
    with `speak`, write the recording with the delegate's replies voiced into it there (16 kHz mono WAV);
    `speaking`: how forward the delegate is (default: the profile's)."""
    settings = settings or Settings()
    console = console or Console()
    try:
        profile = Profile.model_validate_json(principal.read_bytes())
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "(profile)"
        raise ListenInputError(f"{principal}: not a valid profile: {where}: {first['msg']}{field_hint(first)}") from e
    if speaking is not None:
        profile = profile.model_copy(update={"speaking": speaking})
    try:
        pcm = read_audio(audio)
    except Exception as e:  # av and wave raise many kinds for a file that is not audio
        raise ListenInputError(f"{audio}: cannot read it as audio ({type(e).__name__}: {e})") from e
    synthesizer = None
    if speak is not None:
        from delegate.voice.stream import load_synthesizer

        with console.status("Loading the voice…"):
            synthesizer = load_synthesizer(settings.tts_voice)
    voice = _ReplyTrack(synthesizer, settings.asr_silence_s) if synthesizer is not None else None
    results = asyncio.run(_listen(audio, pcm, profile, settings, console, attendees or [], voice))
    if voice is not None and speak is not None:
        speak.write_bytes(voice.mix(pcm))
        n = len(voice.placed)
        console.print(f"wrote {speak}: the recording with the delegate's {n} spoken repl{'ies' if n != 1 else 'y'} in it")
    return results


@dataclass(frozen=True)
class PlacedReply:
    """A spoken reply (16 kHz float audio) and where it starts in the recording."""

    utterance_id: int
    at_s: float
    text: str
    audio: np.ndarray

    @property
    def seconds(self) -> float:
        return len(self.audio) / SAMPLE_RATE


class _ReplyTrack:
    """Voices the replies and places each where it would have started live.

    Live, a reply starts after the cue's end plus: the end-of-turn silence the recogniser waits for, the
    recognition of the final, the decision, and the synthesis of the reply's first sentence. The last
    three are measured here as they happen; a reply never starts before the previous one has ended.
    """

    def __init__(self, synthesizer: Synthesizer, silence_s: float) -> None:
        self.synthesizer, self.silence_s = synthesizer, silence_s
        self.placed: list[PlacedReply] = []

    def place(self, utterance: Utterance, decision: Decision, recognition_s: float) -> PlacedReply:
        sentences = split_sentences(decision.speak)
        t0 = time.perf_counter()
        pcm = [self.synthesizer.synthesize(sentences[0])] if sentences else []
        first_s = time.perf_counter() - t0
        pcm += [self.synthesizer.synthesize(s) for s in sentences[1:]]
        at = (utterance.end or 0.0) + self.silence_s + recognition_s + decision.latency_ms / 1000 + first_s
        if self.placed:
            at = max(at, self.placed[-1].at_s + self.placed[-1].seconds)
        audio = pcm_to_float(b"".join(pcm), self.synthesizer.sample_rate, SAMPLE_RATE)
        reply = PlacedReply(utterance.id, at, decision.speak, audio)
        self.placed.append(reply)
        return reply

    def mix(self, pcm: bytes) -> bytes:
        """The recording with the replies added, as a WAV file; longer than the recording if a reply ends later."""
        meeting = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        end = max([len(meeting), *(round(r.at_s * SAMPLE_RATE) + len(r.audio) for r in self.placed)])
        out = np.zeros(end, dtype=np.float32)
        out[: len(meeting)] = meeting
        for r in self.placed:
            start = round(r.at_s * SAMPLE_RATE)
            out[start : start + len(r.audio)] += r.audio
        samples = (np.clip(out, -1.0, 32767 / 32768) * 32768).astype("<i2")
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(SAMPLE_RATE)
            w.writeframes(samples.tobytes())
        return buffer.getvalue()


async def _listen(
    audio: Path,
    pcm: bytes,
    profile: Profile,
    settings: Settings,
    console: Console,
    attendees: list[str],
    voice: _ReplyTrack | None = None,
) -> list[tuple[Utterance, Decision]]:
    engine = build_engine(settings.engine, settings)
    with console.status("Loading the speech model…"):
        model = load_speech_model(settings.asr_model, settings.asr_threads)
        turn_end = load_turn_end(settings) if settings.asr_turn_end == "smart-turn" else None
    transcriber = StreamingTranscriber(
        model,
        names=[profile.name, *profile.aliases, *attendees],
        silence_s=settings.asr_silence_s,
        turn_end=turn_end,
        turn_wait_s=settings.asr_turn_wait_s,
        check_names=settings.asr_check_names,
    )
    meeting = MeetingState(meeting_id=audio.stem, attendees=[profile.speaker_label])
    console.print(
        f"[bold]{audio.name}[/]: {len(pcm) / 2 / SAMPLE_RATE:.1f} s, delegate for [bold]{profile.name}[/] ({profile.speaking} speaking)"
        f" ({engine.name} engine)"
    )

    out: list[tuple[Utterance, Decision]] = []
    for offset in range(0, len(pcm), _CHUNK_BYTES):
        t0 = time.perf_counter()
        events = await transcriber.afeed(pcm[offset : offset + _CHUNK_BYTES])
        for event in events:
            out.extend(await _on_event(event, meeting, engine, profile, console, voice, time.perf_counter() - t0))
    t0 = time.perf_counter()
    for event in await transcriber.aflush():
        out.extend(await _on_event(event, meeting, engine, profile, console, voice, time.perf_counter() - t0))

    spoke = sum(d.spoke for _, d in out)
    console.print(
        f"\n{counted(len(out), 'utterance')}, the delegate would have spoken {counted(spoke, 'time')}."
    )
    return out


async def _on_event(
    event: TranscriptEvent,
    meeting: MeetingState,
    engine: Engine,
    profile: Profile,
    console: Console,
    voice: _ReplyTrack | None,
    recognition_s: float,
) -> list[tuple[Utterance, Decision]]:
    if not event.final:
        return []
    utterance = Utterance(
        id=len(meeting), speaker=UNKNOWN_SPEAKER, text=event.text, start=event.start, end=event.end
    )
    decision = await hear(engine, meeting, profile, utterance)
    console.print(
        f"[dim]{_clock(event.start)}–{_clock(event.end)}[/] [cyan]{utterance.speaker}[/]: {event.text}"
    )
    if decision.spoke:
        console.print(
            f"  [bold green]▶ {profile.name} (delegate) says:[/] {decision.speak}\n"
            f"    [dim]{decision.scenario.value}, confidence {decision.confidence:.2f}: {decision.reason}[/]"
        )
        if voice is not None:
            placed = voice.place(utterance, decision, recognition_s)
            console.print(f"    [dim]voiced at {_clock(placed.at_s)}, {placed.seconds:.1f} s[/]")
    else:
        console.print(f"  [dim]· stays silent ({decision.scenario.value}): {decision.reason}[/]")
    return [(utterance, decision)]


def _clock(seconds: float) -> str:
    minutes, secs = divmod(seconds, 60)
    return f"{int(minutes):02d}:{secs:04.1f}"
