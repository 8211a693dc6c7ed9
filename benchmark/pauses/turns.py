"""Turns with a pause inserted after their middle word, and what the live cut does with them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchmark.asr import load_clips

if TYPE_CHECKING:
    from delegate.asr.turn_end import TurnEnd
    from delegate.asr.turn_words import TurnWords
    from delegate.asr.whisper import SpeechModel

RATE = 16_000
LEAD_S = 0.5
TAIL_S = 2.0
CHUNK_S = 0.1


@dataclass(frozen=True)
class PausedTurn:
    clip: str
    text: str
    pause_s: float
    audio: np.ndarray
    pause_at_s: float
    """Where the inserted pause starts in `audio`."""
    end_s: float
    """Where the turn's speech ends in `audio`."""


@dataclass(frozen=True)
class Outcome:
    turn: PausedTurn
    false_end: bool
    wait_s: float | None
    """Audio streamed past the turn's end before its last final; None: no final at all."""
    text: str


def _room_tone(audio: np.ndarray, seconds: float) -> np.ndarray:
    """`seconds` of the clip's quietest 0.1 s, repeated: its own background, not digital silence."""
    step = RATE // 10
    windows = [audio[i : i + step] for i in range(0, len(audio) - step, step // 2)]
    quiet = min(windows, key=lambda w: float(np.sqrt(np.mean(w**2))))
    return np.tile(quiet, int(np.ceil(seconds * 10)) + 1)[: int(seconds * RATE)]


def paused_turns(folder: Path, model: SpeechModel, pauses: list[float]) -> list[PausedTurn]:
    """Each turn of `folder`'s clips with three or more words, once per pause length."""
    from delegate.asr.whisper import read_audio

    turns = []
    for clip in load_clips(folder):
        audio = np.frombuffer(read_audio(clip.path), "<i2").astype(np.float32) / 32768
        for segment in clip.segments:
            lo = max(0, int((segment.start - 0.15) * RATE))
            hi = min(len(audio), int((segment.end + 0.05) * RATE))
            speech = audio[lo:hi]
            words = model.word_times(speech)
            if len(words) < 3:
                continue
            k = len(words) // 2
            split = int((words[k - 1][2] + words[k][1]) / 2 * RATE)
            for pause in pauses:
                parts = [
                    _room_tone(audio, LEAD_S),
                    speech[:split],
                    _room_tone(audio, pause),
                    speech[split:],
                    _room_tone(audio, TAIL_S),
                ]
                turns.append(
                    PausedTurn(
                        clip=clip.name,
                        text=segment.text,
                        pause_s=pause,
                        audio=np.concatenate(parts).astype(np.float32),
                        pause_at_s=LEAD_S + split / RATE,
                        end_s=LEAD_S + pause + len(speech) / RATE,
                    )
                )
    return turns


class TimedTurnEnd:
    """A TurnEnd that keeps how long each judgement took and what it said."""

    def __init__(self, inner: TurnEnd) -> None:
        self.inner = inner
        self.seconds: list[float] = []
        self.said: list[float] = []

    def complete(self, audio: np.ndarray) -> float:
        t0 = time.perf_counter()
        probability = self.inner.complete(audio)
        self.seconds.append(time.perf_counter() - t0)
        self.said.append(probability)
        return probability


def stream_turn(
    turn: PausedTurn,
    model: SpeechModel,
    turn_end: TurnEnd | None,
    silence_s: float,
    turn_wait_s: float,
    turn_words: TurnWords | None = None,
) -> Outcome:
    """`turn` through the live recogniser in 100 ms chunks (no partials: the cut does not depend on them)."""
    from delegate.asr.whisper import StreamingTranscriber

    transcriber = StreamingTranscriber(
        model,
        silence_s=silence_s,
        partial_every_s=1e6,
        turn_end=turn_end,
        turn_wait_s=turn_wait_s,
        turn_words=turn_words,
    )
    pcm = (np.clip(turn.audio, -1.0, 32767 / 32768) * 32768).astype("<i2").tobytes()
    step = int(CHUNK_S * RATE) * 2
    # (cut start and end in the stream, audio fed when it came, text)
    finals: list[tuple[float, float, float, str]] = []
    for offset in range(0, len(pcm), step):
        fed = (offset + step) / 2 / RATE
        events = transcriber.feed(pcm[offset : offset + step])
        finals += [(e.start, e.end, fed, e.text) for e in events if e.final]
    finals += [(e.start, e.end, len(pcm) / 2 / RATE, e.text) for e in transcriber.flush() if e.final]
    # One turn is one final across the pause; a final cut inside the pause may decode to nothing (and
    # come out as no event), so the test is that the final which ends the turn began before the pause.
    resumed = turn.pause_at_s + turn.pause_s
    last = finals[-1] if finals and finals[-1][1] >= resumed else None
    false_end = last is None or last[0] >= turn.pause_at_s or len(finals) > 1
    wait = last[2] - turn.end_s if last is not None else None
    return Outcome(turn, false_end, wait, " ".join(f[3] for f in finals))
