"""A meeting's audio input: one speech-to-text stream at a time, its finals fed on as utterances."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from delegate.models import MAX_UTTERANCE_ID, UNKNOWN_SPEAKER, Utterance
from delegate.server.protocol import Ack, AudioStart, ErrorCode, ProtocolError, TranscriptMessage, UtteranceIn
from delegate.server.session.outbox import SessionBase

if TYPE_CHECKING:
    from delegate.asr.whisper import Transcriber, TranscriptEvent


class TranscriberFactory(Protocol):
    """Opens a speech-to-text stream (delegate.asr.whisper) for one `audio_start` of `meeting`.

    Raises ValueError for an unusable sample rate, OSError or RuntimeError when there is no model,
    ProtocolError (`asr_busy`) when the server transcribes as many streams as it can.
    """

    async def __call__(self, sample_rate: int, names: list[str], meeting: str) -> Transcriber: ...


class AudioInput(SessionBase):
    """The audio side of `MeetingSession`."""

    _asr: TranscriberFactory | None
    _audio: Transcriber | None
    _audio_speaker: str
    _audio_clock: float
    """Monotonic time of the stream's first sample, as of the latest frame (a live client sends in real time)."""
    _audio_heard_s: float
    _audio_rate: int
    _hearing: asyncio.Lock
    """Held while a stream's audio is fed or flushed: one stream is fed from one task at a time."""
    _ending: set[asyncio.Task[None]]
    # Implemented by the voice side (VoiceOut): declared, not defined.
    heard_echo: Callable[..., Awaitable[bool]]
    barge_in: Callable[..., Awaitable[None]]

    async def audio(self, pcm: bytes) -> None:
        """One binary frame of the open audio stream; its transcripts go out, its finals on as utterances."""
        if self.closed:
            raise ProtocolError(ErrorCode.meeting_closed)
        async with self._hearing:
            stream = self._audio
            if stream is None:
                raise ProtocolError(ErrorCode.binary_not_supported)
            self.last_activity = time.time()
            self._audio_heard_s += len(pcm) / 2 / self._audio_rate
            self._audio_clock = time.monotonic() - self._audio_heard_s
            await self._on_transcripts(await stream.afeed(pcm))

    async def _on_audio_start(self, message: AudioStart) -> None:
        if self._asr is None:
            raise ProtocolError(ErrorCode.audio_not_supported)
        # Recognition is biased toward the names people here will be called by.
        names = [self.principal.name, *self.principal.aliases]
        names += [self.state.display_name(a) for a in self.state.attendees]
        try:
            stream = await self._asr(message.sample_rate, names, self.audit_id)
        except ValueError as e:
            raise ProtocolError(ErrorCode.bad_audio, f"The audio stream cannot be transcribed: {e}.") from e
        except (OSError, RuntimeError) as e:
            self._log.exception("asr_unavailable")
            raise ProtocolError(ErrorCode.audio_not_supported) from e
        await self._end_audio()  # a new stream ends the one before
        self._audio, self._audio_speaker = stream, message.speaker or UNKNOWN_SPEAKER
        self._audio_rate, self._audio_heard_s, self._audio_clock = message.sample_rate, 0.0, time.monotonic()
        await self._send(Ack(of="audio_start", meeting_id=self.meeting_id))

    async def _end_audio(self) -> None:
        async with self._hearing:
            stream, self._audio = self._audio, None
            if stream is not None:
                await self._on_transcripts(await stream.aflush())

    def _end_audio_of_gone_client(self) -> None:
        """The bot's connection is gone: its stream ends, so that a dead bot holds no place of the server's.

        What the stream had heard is transcribed and decided on as at `audio_end` (nothing is lost); a
        client that comes back sends `audio_start` again.
        """
        if self._audio is None or self.closed:
            return
        task = asyncio.create_task(self._end_audio(), name=f"audio-end-{self.meeting_id}")
        self._ending.add(task)
        task.add_done_callback(self._ended_audio)

    def _ended_audio(self, task: asyncio.Task[None]) -> None:
        self._ending.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self._log.warning("audio_end_failed", error=type(error).__name__, detail=str(error))

    def _drop_audio(self) -> None:
        """The meeting ends or is let go: its stream gives its place up, what it had not decoded is lost."""
        stream, self._audio = self._audio, None
        if stream is not None:
            stream.close()

    async def _on_transcripts(self, events: list[TranscriptEvent]) -> None:
        for event in events:
            start, end = self._audio_clock + event.start, self._audio_clock + event.end
            if await self.heard_echo(event.text, start, end, event.final, stream_start=event.start, stream_end=event.end):
                continue  # the delegate's own voice: not a turn, not someone speaking over it
            if not event.final and event.text.strip():
                await self.barge_in(self._audio_speaker, event.text)  # someone is speaking: speech detected
            uid = 0 if self.state.last_id is None else self.state.last_id + 1
            if uid > MAX_UTTERANCE_ID:
                raise ProtocolError(ErrorCode.bad_utterance_id, "This meeting has used up its utterance ids.")
            utterance = Utterance(
                id=uid,
                speaker=self._audio_speaker,
                text=event.text,
                start=event.start,
                end=event.end,
                final=event.final,
            )
            await self._send(TranscriptMessage(meeting_id=self.meeting_id, utterance=utterance))
            if event.final:
                await self._on_utterance(UtteranceIn(type="utterance", **utterance.model_dump()))
