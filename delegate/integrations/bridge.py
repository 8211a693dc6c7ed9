"""What every meeting-bot bridge does with the delegate server, whichever service it speaks to: the service's
events become utterances, audio and admission states on the meeting's stream; the delegate's speech becomes the
service's audio. A bridge makes no decision and knows no brief (the server has it)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Protocol

from delegate.client import Message, SpeechChunk
from delegate.integrations.speakers import Roster
from delegate.server.protocol import AdmissionState, SpeechCancel, SpeechEnd, SpeechStart, TranscriptMessage

log = logging.getLogger("delegate.integrations.bridge")


class ServiceError(Exception):
    """The service refused what the bridge asked (a key, a meeting URL): one line to show."""


class DelegateLink(Protocol):
    """The part of `delegate.client.DelegateClient` a bridge uses (a benchmark passes a recorder)."""

    async def send(self, speaker: str, text: str, *, start: float | None = None, end: float | None = None) -> int: ...

    async def admission(self, state: AdmissionState, detail: str = "") -> None: ...

    async def start_audio(self, sample_rate: int = 16000, speaker: str | None = None) -> None: ...

    async def send_pcm(self, pcm: bytes) -> None: ...


class AudioOut(Protocol):
    """Where the delegate's voice goes: the service's audio output."""

    async def speak(self, utterance_id: int, pcm: bytes, sample_rate: int, *, last: bool) -> None:
        """A piece of the reply to `utterance_id` (-1: the disclosure); `last` once all of it came."""
        ...

    async def cancel(self, utterance_id: int) -> None:
        """Someone spoke over it: what was not played yet is dropped."""
        ...


@dataclass
class MeetingBridge:
    """One meeting's bridge: `link` to the delegate server, `roster` of who is who, `audio_out` to the service."""

    link: DelegateLink
    roster: Roster
    audio_out: AudioOut | None = None
    admission_state: AdmissionState = "joining"
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the bot was removed or the meeting ended: the bridge's work is done."""
    heard_ids: list[int] = field(default_factory=list)
    """The utterance ids of the turns it sent, in order."""
    transcribed: int = 0
    """Turns the server's recogniser made of the audio it sent."""
    _audio_speaker: str | None = field(default=None, init=False)
    _audio_open: bool = field(default=False, init=False)
    _speaking: SpeechStart | None = field(default=None, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    """One frame at a time to the delegate, in the order the service's events came."""

    async def admission(self, state: AdmissionState | None, detail: str = "") -> None:
        """The service's bot state, as an admission state (None: a state of the service's own that is none)."""
        if state is None or self.ended.is_set():
            return
        async with self._lock:
            await self.link.admission(state, detail)
            self.admission_state = state
        if state in ("removed", "ended"):
            self.ended.set()

    async def heard(
        self, participant_id: str | None, name: str | None, text: str, start: float | None = None,
        end: float | None = None,
    ) -> int | None:
        """A finished turn of the service's transcript; its utterance id once the server has it. The bot's own
        voice transcribed back is no turn of the meeting (the server recorded what it said): None."""
        if not text.strip() or self.ended.is_set() or self.roster.is_own(participant_id, name):
            return None
        speaker = self.roster.label(participant_id, name)
        async with self._lock:
            uid = await self.link.send(speaker, text.strip(), start=start, end=end)
        self.heard_ids.append(uid)
        return uid

    def participant(self, participant_id: str, name: str | None) -> str:
        """Someone joined or changed their display name: their label (kept from the first time)."""
        if self.roster.is_own(participant_id, name):
            return name or ""
        return self.roster.label(participant_id, name)

    async def speaking(self, participant_id: str, name: str | None) -> None:
        """Someone started speaking (audio in): the meeting's audio from now on is theirs."""
        if self.roster.is_own(participant_id, name):
            return  # the delegate's own voice is no participant's turn
        speaker = self.roster.label(participant_id, name)
        if speaker == self._audio_speaker or self.ended.is_set():
            return
        async with self._lock:
            self._audio_speaker = speaker
            if self._audio_open:  # a new stream ends the one before: its words stay its speaker's
                await self.link.start_audio(16000, speaker)

    async def audio(self, pcm: bytes) -> None:
        """16 kHz 16-bit mono PCM of the meeting (mixed): the server's recogniser transcribes it."""
        if self.ended.is_set():
            return
        if not self._audio_open:
            async with self._lock:
                if not self._audio_open:
                    await self.link.start_audio(16000, self._audio_speaker)
                    self._audio_open = True
        await self.link.send_pcm(pcm)

    async def on_message(self, message: Message) -> None:
        """The delegate's frames: its speech goes to the service's audio output."""
        if isinstance(message, TranscriptMessage) and message.utterance.final:
            self.transcribed += 1
        out = self.audio_out
        if out is None:
            return
        match message:
            case SpeechStart():
                self._speaking = message
            case SpeechChunk() if self._speaking is not None and message.utterance_id == self._speaking.utterance_id:
                await out.speak(message.utterance_id, message.pcm, message.sample_rate, last=False)
            case SpeechEnd() if self._speaking is not None and message.utterance_id == self._speaking.utterance_id:
                await out.speak(message.utterance_id, b"", self._speaking.sample_rate, last=True)
                self._speaking = None
            case SpeechCancel():
                if self._speaking is not None and self._speaking.utterance_id == message.utterance_id:
                    self._speaking = None
                await out.cancel(message.utterance_id)
