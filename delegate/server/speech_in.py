"""Speech-to-text streams for `audio_start`: at most `asr_max_streams` open at once, their decodes measured.

A process has the CPU for so many real-time streams; one more would make every meeting's transcripts
late. So the stream past capacity is refused with `asr_busy` (typed utterances still work) and the
others keep their latency. A meeting that replaces its own stream does not need a second place.
"""

from __future__ import annotations

import asyncio
import importlib
from collections import Counter
from typing import TYPE_CHECKING

from delegate.config import Settings
from delegate.server.metrics import Metrics
from delegate.server.protocol import ErrorCode, ProtocolError, unavailable

if TYPE_CHECKING:
    from delegate.asr.whisper import Transcriber


class _Listener:
    """A stream's decode figures into the server's metrics (called on the decode thread)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def waited(self, final: bool, seconds: float) -> None:
        self._metrics.asr_queue_wait.labels(kind="final" if final else "partial").observe(seconds)

    def shed(self) -> None:
        self._metrics.asr_partials_shed.inc()


class SpeechStreams:
    """Opens the streams of this server, on one model loaded when audio first comes."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self._settings = settings
        self._metrics = metrics
        self._listener = _Listener(metrics)
        self._open: Counter[str] = Counter()  # meeting -> streams open (two while one replaces the other)
        self.capacity = settings.asr_max_streams
        metrics.asr_capacity.set(self.capacity)

    @property
    def open(self) -> int:
        """Meetings with an audio stream open."""
        return len(self._open)

    async def __call__(self, sample_rate: int, names: list[str], meeting: str) -> Transcriber:
        if meeting not in self._open and len(self._open) >= self.capacity:
            raise ProtocolError(
                ErrorCode.asr_busy,
                f"This server transcribes at most {self.capacity} audio streams at once, and all are "
                "taken; send typed utterances, or start audio again later.",
            )
        self._open[meeting] += 1  # held while the model loads, so two meetings cannot take the last place
        self._metrics.asr_streams.set(len(self._open))
        try:
            # Importing faster-whisper takes a while: off the event loop, and only once audio is used.
            try:
                asr = await asyncio.to_thread(importlib.import_module, "delegate.asr.whisper")
            except ModuleNotFoundError as e:
                raise unavailable(e, ErrorCode.audio_not_supported) from e
            return await asr.open_stream(
                self._settings,
                sample_rate,
                names,
                listener=self._listener,
                on_close=lambda: self._release(meeting),
            )
        except BaseException:
            self._release(meeting)
            raise

    def _release(self, meeting: str) -> None:
        self._open[meeting] -= 1
        if self._open[meeting] <= 0:
            del self._open[meeting]
        self._metrics.asr_streams.set(len(self._open))
