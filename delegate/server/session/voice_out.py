"""A meeting's voice out: released replies spoken to the bot as paced PCM, cut on barge-in, echoes recognised.

The server keeps the playback clock of what it sent (audio plays from when its first byte left, without
gaps unless synthesis fell behind), so it knows at any moment how much of a reply has been heard: that is
`played_ms` on a barge-in, and the words up to it are what the audit log says was said.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from delegate.decide.reply.compose import likely_openings
from delegate.models import UNKNOWN_SPEAKER, Decision
from delegate.server.protocol import SpeechCancel, SpeechEnd, SpeechStart, UtteranceIn
from delegate.server.session.core import MeetingCore
from delegate.server.session.outbox import Outbox
from delegate.store import AuditKind
from delegate.voice.base import SAMPLE_WIDTH, SpokenSentence
from delegate.voice.cut import said_until
from delegate.voice.echo import SpokenWindow, find_echo

if TYPE_CHECKING:
    from delegate.voice.base import Synthesizer

CHUNK_S = 0.1
"""Audio per binary frame."""
LEAD_S = 0.4
"""How far ahead of playback the server sends: enough to ride out network jitter, little to take back."""
RECENT_SPEECH = 8
"""Speech windows kept to recognise echoes (one meeting rarely has more than one in flight)."""
DISCLOSURE_ID = -1
"""The `utterance_id` of the disclosure's speech: it answers no turn."""


class VoiceSource(Protocol):
    """The process-wide voice: whether this server can speak, and the loaded synthesizer when it can."""

    @property
    def available(self) -> bool: ...

    @property
    def warm_pieces(self) -> int:
        """How many likely reply openings a meeting synthesises ahead when it joins with voice."""
        ...

    async def get(self) -> Synthesizer | None:
        """The synthesizer, loaded the first time (off the loop); None when it cannot be loaded."""
        ...


@dataclass
class _Playing:
    """One reply going out: what has been sent and the playback clock."""

    utterance_id: int
    text: str
    sentences: list[SpokenSentence] = field(default_factory=list)
    sent_s: float = 0.0
    started: float | None = None
    """Monotonic time its first byte was sent."""
    ends: float = 0.0
    """Monotonic time all audio sent so far will have finished playing."""
    task: asyncio.Task[None] | None = None

    def played_s(self, now: float) -> float:
        return max(0.0, self.sent_s - max(0.0, self.ends - now))


class VoiceOut:
    """A meeting's voice: what it is saying now, what it said lately (to tell its echo), and whether the
    connected client wants speech at all."""

    def __init__(self, core: MeetingCore, outbox: Outbox, voice: VoiceSource | None) -> None:
        self._core = core
        self._outbox = outbox
        self._voice = voice if voice is not None and voice.available else None
        self.on = False
        """Whether the connected client asked for speech (`voice` on its join, and this server can speak)."""
        self._warming: asyncio.Task[None] | None = None
        self._playing: _Playing | None = None
        self._spoken: deque[SpokenWindow] = deque(maxlen=RECENT_SPEECH)

    @property
    def available(self) -> bool:
        return self._voice is not None

    def join(self, wanted: bool | None) -> None:
        """A client joined: it has speech unless it said `voice: false` (or this server cannot speak)."""
        self.on = wanted is not False and self._voice is not None
        if self.on:
            self._warm_voice()

    def _warm_voice(self) -> None:
        """Synthesise the likely openings of this meeting's replies in the background, once."""
        if self._warming is None and self._voice is not None and self._voice.warm_pieces > 0:
            self._warming = asyncio.create_task(self._warm(self._voice), name=f"voice-warm-{self._core.meeting_id}")

    async def _warm(self, voice: VoiceSource) -> None:
        from delegate.voice.stream import warm

        synthesizer = await voice.get()
        if synthesizer is None:
            return
        began = time.perf_counter()
        try:
            n = await warm(synthesizer, likely_openings(self._core.principal, self._core.state.names), voice.warm_pieces)
        except Exception:
            self._core.log.exception("voice_warm_failed")  # only a head start lost: replies synthesise as they come
            return
        self._core.log.info("voice_warmed", pieces=n, ms=round((time.perf_counter() - began) * 1000))

    async def say(self, decision: Decision) -> None:
        """Speak a released decision (its text already went out), if this connection wants voice."""
        if decision.spoke:
            await self._start(decision.utterance_id, decision.speak)

    async def announce(self, text: str) -> None:
        """Speak the disclosure (its text already went out), if this connection wants voice."""
        await self._start(DISCLOSURE_ID, text)

    async def _start(self, utterance_id: int, text: str) -> None:
        if not self.on or self._voice is None or not self._outbox.connected:
            return
        if self._playing is not None:
            await self._cut(self._playing, "superseded")
        playing = _Playing(utterance_id=utterance_id, text=text)
        self._playing = playing
        playing.task = asyncio.create_task(self._play(playing), name=f"speak-{self._core.meeting_id}-{utterance_id}")

    @property
    def speaking(self) -> bool:
        return self._playing is not None

    async def _play(self, playing: _Playing) -> None:
        from delegate.voice.stream import speak

        ulog = self._core.log.bind(utterance_id=playing.utterance_id)
        assert self._voice is not None
        synthesizer = await self._voice.get()
        if synthesizer is None:
            self._playing = None
            return
        chunk = int(synthesizer.sample_rate * CHUNK_S) * SAMPLE_WIDTH
        try:
            await self._outbox.send(
                SpeechStart(
                    meeting_id=self._core.meeting_id, utterance_id=playing.utterance_id, text=playing.text,
                    sample_rate=synthesizer.sample_rate,
                )
            )
            async for sentence in speak(synthesizer, playing.text):
                playing.sentences.append(sentence)
                for offset in range(0, len(sentence.pcm), chunk):
                    await self._pace(playing)
                    pcm = sentence.pcm[offset : offset + chunk]
                    now = time.monotonic()
                    if playing.started is None:
                        playing.started = now
                    seconds = len(pcm) / SAMPLE_WIDTH / synthesizer.sample_rate
                    playing.sent_s += seconds
                    playing.ends = max(playing.ends, now) + seconds
                    # Shielded: a barge-in cancels this task, never a frame half sent.
                    if not await asyncio.shield(self._outbox.send_audio(pcm)):
                        return
            await self._outbox.send(
                SpeechEnd(meeting_id=self._core.meeting_id, utterance_id=playing.utterance_id,
                          duration_ms=round(playing.sent_s * 1000))
            )
            # The last LEAD_S of it is still playing at the client: a barge-in may still cut it.
            await asyncio.sleep(max(0.0, playing.ends - time.monotonic()))
        except asyncio.CancelledError:
            raise
        except Exception:
            ulog.exception("speech_failed")
            if self._playing is playing:
                await self._cut(playing, "failed")
            return
        if self._playing is playing:
            self._playing = None
            await self._record(playing, playing.sent_s, cut=False, reason=None)
            ulog.info("spoke", ms=round(playing.sent_s * 1000), sentences=len(playing.sentences))

    @staticmethod
    async def _pace(playing: _Playing) -> None:
        ahead = playing.ends - time.monotonic()
        if ahead > LEAD_S:
            await asyncio.sleep(ahead - LEAD_S)

    async def barge_in(self, by: str, heard: str | None = None) -> None:
        """Someone else speaks (`heard`: the partial transcript that says so, for audio): stop the delegate's
        speech where it is, and tell the client so."""
        playing = self._playing
        if playing is None:
            return
        await self._cut(playing, "barge_in", by=by, **({"heard": heard} if heard is not None else {}))

    async def _cut(self, playing: _Playing, reason: str, **extra: object) -> None:
        self._playing = None
        task = playing.task
        if task is not None and task is not asyncio.current_task() and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        played = playing.played_s(time.monotonic())
        await self._outbox.send(
            SpeechCancel(
                meeting_id=self._core.meeting_id, utterance_id=playing.utterance_id, played_ms=round(played * 1000),
                reason=reason if reason in ("failed", "superseded") else "barge_in",  # type: ignore[arg-type]
            )
        )
        await self._record(playing, played, cut=True, reason=reason, **extra)
        self._core.log.info("speech_cut", utterance_id=playing.utterance_id, played_ms=round(played * 1000), reason=reason)

    async def _record(self, playing: _Playing, played_s: float, *, cut: bool, reason: str | None, **extra: object) -> None:
        said = said_until(playing.sentences, played_s)
        if playing.started is not None and said:
            self._spoken.append(
                SpokenWindow(utterance_id=playing.utterance_id, text=said, start=playing.started,
                             end=playing.started + played_s)
            )
        disclosure = playing.utterance_id == DISCLOSURE_ID
        await self._outbox.audit(
            AuditKind.speech, None if disclosure else playing.utterance_id, said=said, played_ms=round(played_s * 1000),
            sent_ms=round(playing.sent_s * 1000), cut=cut, reason=reason, **({"disclosure": True} if disclosure else {}),
            **extra,
        )

    def echo_of(self, text: str, start: float, end: float, final: bool = True) -> SpokenWindow | None:
        """The delegate's speech that `text`, heard from `start` to `end` (monotonic seconds), repeats."""
        windows = list(self._spoken)
        playing = self._playing
        if playing is not None and playing.started is not None:
            # Still going out: all of its text may be heard back, up to where it will have played.
            windows.append(
                SpokenWindow(utterance_id=playing.utterance_id, text=playing.text, start=playing.started,
                             end=max(playing.ends, time.monotonic()))
            )
        return find_echo(text, start, end, windows, final=final)

    def _could_be_delegate(self, speaker: str) -> bool:
        """Whether a transcript's speaker label may be the delegate's own voice as a bot heard it."""
        return speaker.strip().casefold() == UNKNOWN_SPEAKER or self._core.principal.is_speaker(speaker)

    async def stop(self, reason: str) -> None:
        """The meeting ends or is let go: stop speaking, record what was said, tell nobody."""
        warming, self._warming = self._warming, None
        if warming is not None and not warming.done():
            warming.cancel()
        playing, self._playing = self._playing, None
        if playing is None:
            return
        if playing.task is not None and not playing.task.done():
            playing.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await playing.task
        played = playing.played_s(time.monotonic())
        await self._record(playing, played, cut=played < playing.sent_s or not playing.sentences, reason=reason)

    async def heard_echo(self, text: str, start: float, end: float, final: bool = True, **where: object) -> bool:
        """Whether `text` is the delegate hearing itself (then it is not a turn of the meeting); a final one
        is recorded as such."""
        if not self._spoken and self._playing is None:
            return False
        echo = self.echo_of(text, start, end, final)
        if echo is None:
            return False
        if not final:
            return True
        await self._outbox.audit(AuditKind.echo, self._core.state.last_id, text=text, of_utterance_id=echo.utterance_id, **where)
        self._core.log.info("echo", of_utterance_id=echo.utterance_id)
        return True

    async def typed_echo(self, message: UtteranceIn) -> bool:
        """A typed final that repeats what the delegate is saying or just said (a bot transcribing the meeting
        itself heard the delegate): heard now, as far as the server can tell. Only a turn the bot could have
        heard from the delegate counts: one it gave to the principal or to nobody. Another attendee's typed
        turn is theirs, whatever it says."""
        if not self._could_be_delegate(message.speaker):
            return False
        now = time.monotonic()
        return await self.heard_echo(message.text, now, now, client_utterance_id=message.id, speaker=message.speaker)
