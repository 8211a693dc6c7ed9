"""A meeting's audio input: one speech-to-text stream at a time, its finals fed on as utterances."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from delegate.models import MAX_UTTERANCE_ID, UNKNOWN_SPEAKER, Utterance
from delegate.server.protocol import Ack, AudioStart, ErrorCode, ProtocolError, TranscriptMessage, UtteranceIn
from delegate.server.session.core import MeetingCore
from delegate.server.session.outbox import Outbox
from delegate.server.session.voice_out import VoiceOut

if TYPE_CHECKING:
    from delegate.asr.whisper import Transcriber, TranscriptEvent


class TranscriberFactory(Protocol):
    """Opens a speech-to-text stream (delegate.asr.whisper) for one `audio_start` of `meeting`.

    Raises ValueError for an unusable sample rate, OSError or RuntimeError when there is no model,
    ProtocolError (`asr_busy`) when the server transcribes as many streams as it can.
    """

    async def __call__(self, sample_rate: int, names: list[str], meeting: str) -> Transcriber: ...


class AudioIn:
    """A meeting's audio input: at most one open stream; its finals go on to `on_final` as utterances."""

    def __init__(
        self,
        core: MeetingCore,
        outbox: Outbox,
        voice: VoiceOut,
        asr: TranscriberFactory | None,
        on_final: Callable[[UtteranceIn], Awaitable[None]],
    ) -> None:
        self._core = core
        self._outbox = outbox
        self._voice = voice
        self._asr = asr
        self._on_final = on_final
        self._audio: Transcriber | None = None
        self._speaker = UNKNOWN_SPEAKER
        self._clock = 0.0
        """Monotonic time of the stream's first sample, as of the latest frame (a live client sends in real time)."""
        self._heard_s = 0.0
        self._rate = 16000
        self._hearing = asyncio.Lock()
        """Held while a stream's audio is fed or flushed: one stream is fed from one task at a time."""
        self._ending: set[asyncio.Task[None]] = set()
        outbox.on_detached = self._end_audio_of_gone_client

    async def feed(self, pcm: bytes) -> None:
        """One binary frame of the open audio stream; its transcripts go out, its finals on as utterances."""
        if self._core.closed:
            raise ProtocolError(ErrorCode.meeting_closed)
        async with self._hearing:
            stream = self._audio
            if stream is None:
                raise ProtocolError(ErrorCode.binary_not_supported)
            self._heard_s += len(pcm) / 2 / self._rate
            self._clock = time.monotonic() - self._heard_s
            await self._on_transcripts(await stream.afeed(pcm))

    async def start(self, message: AudioStart) -> None:
        if self._asr is None:
            raise ProtocolError(ErrorCode.audio_not_supported)
        # Recognition is biased toward the names people here will be called by.
        names = [self._core.principal.name, *self._core.principal.aliases]
        names += [self._core.state.display_name(a) for a in self._core.state.attendees]
        try:
            stream = await self._asr(message.sample_rate, names, self._core.audit_id)
        except ValueError as e:
            raise ProtocolError(ErrorCode.bad_audio, f"The audio stream cannot be transcribed: {e}.") from e
        except (OSError, RuntimeError) as e:
            self._core.log.exception("asr_unavailable")
            raise ProtocolError(ErrorCode.audio_not_supported) from e
        await self.end()  # a new stream ends the one before
        self._audio, self._speaker = stream, message.speaker or UNKNOWN_SPEAKER
        self._rate, self._heard_s, self._clock = message.sample_rate, 0.0, time.monotonic()
        await self._outbox.send(Ack(of="audio_start", meeting_id=self._core.meeting_id))

    async def end(self) -> None:
        async with self._hearing:
            stream, self._audio = self._audio, None
            if stream is not None:
                await self._on_transcripts(await stream.aflush())

    def _end_audio_of_gone_client(self) -> None:
        """The bot's connection is gone: its stream ends, so that a dead bot holds no place of the server's.

        What the stream had heard is transcribed and decided on as at `audio_end` (nothing is lost); a
        client that comes back sends `audio_start` again.
        """
        if self._audio is None or self._core.closed:
            return
        task = asyncio.create_task(self.end(), name=f"audio-end-{self._core.meeting_id}")
        self._ending.add(task)
        task.add_done_callback(self._ended_audio)

    def _ended_audio(self, task: asyncio.Task[None]) -> None:
        self._ending.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self._core.log.warning("audio_end_failed", error=type(error).__name__, detail=str(error))

    def drop(self) -> None:
        """The meeting ends or is let go: its stream gives its place up, what it had not decoded is lost."""
        stream, self._audio = self._audio, None
        if stream is not None:
            stream.close()

    async def _on_transcripts(self, events: list[TranscriptEvent]) -> None:
        for event in events:
            start, end = self._clock + event.start, self._clock + event.end
            if await self._voice.heard_echo(event.text, start, end, event.final, stream_start=event.start, stream_end=event.end):
                continue  # the delegate's own voice: not a turn, not someone speaking over it
            if not event.final and event.text.strip():
                await self._voice.barge_in(self._speaker, event.text)  # someone is speaking: speech detected
            uid = 0 if self._core.state.last_id is None else self._core.state.last_id + 1
            if uid > MAX_UTTERANCE_ID:
                raise ProtocolError(ErrorCode.bad_utterance_id, "This meeting has used up its utterance ids.")
            utterance = Utterance(
                id=uid,
                speaker=self._speaker,
                text=event.text,
                start=event.start,
                end=event.end,
                final=event.final,
                names_unheard=event.names_unheard,
            )
            await self._outbox.send(TranscriptMessage(meeting_id=self._core.meeting_id, utterance=utterance))
            if event.final:
                await self._on_final(UtteranceIn(type="utterance", **utterance.model_dump()))
