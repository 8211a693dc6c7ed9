"""`python -m benchmark.intelligibility`: can the delegate's voice be understood? Every reply it speaks in the
fixture benchmark, synthesised by the shipped voice and transcribed back by the shipped tiny.en.

The replies are those of the snapshot replay (`python -m benchmark.replay`'s cases, local engine), each
distinct text once. The figure is the word error rate over all their words, after the usual
normalisation for WER (case, punctuation, and numbers written as digits on both sides: the voice says
"two thousand" where the text had "2,000", and Whisper writes digits).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import BaseModel
from rapidfuzz.distance import Levenshtein
from text_to_num import alpha2digit

from benchmark.replay import VARIANTS, replay_snapshots, select_cases
from benchmark.scoring.data import FIXTURES, load
from benchmark.scoring.judge import OfflineJudge
from delegate.decide import build_engine
from delegate.extras import run_cli
from delegate.voice.base import SpokenSentence, Synthesizer
from delegate.voice.echo import ECHO_MIN_RATIO, ECHO_MIN_WORDS, echo_ratio
from delegate.voice.pcm import pcm_to_float
from delegate.voice.stream import load_synthesizer, synthesize_all

if TYPE_CHECKING:
    from delegate.asr.whisper import SpeechModel

CHUNK_S = 15.0
"""Sentences are transcribed together up to this long: the live recogniser hears turns of this order, and
tiny.en tends to repeat itself on a lone short sentence."""

_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_NOT_WORD = re.compile(r"[^\w'%$.]|(?<!\d)\.|\.(?!\d)")


class ReplyWER(BaseModel):
    text: str
    heard: str
    wer: float


class Intelligibility(BaseModel):
    replies: int
    echo_ratios: list[float]
    """`echo_ratio` of each piece heard back (3 words or more) against its reply: the echo detector's view."""
    words: int
    wer: float
    """Word errors over all replies / their words."""
    audio_s: float
    synthesis_s: float
    recognition_s: float
    worst: list[ReplyWER]


def wer(references: list[str], hypotheses: list[str]) -> float:
    """Word error rate: word edits (substitutions, deletions, insertions) over the references' words."""
    edits = sum(Levenshtein.distance(r.split(), h.split()) for r, h in zip(references, hypotheses, strict=True))
    return edits / max(1, sum(len(r.split()) for r in references))


def normalise(text: str) -> str:
    """Lower case, digits for number words, no punctuation but a decimal point, `%` and `$`."""
    text = text.lower().replace("’", "'").replace("-", " ")
    text = alpha2digit(text, "en", threshold=0)
    text = _THOUSANDS.sub("", _ORDINAL.sub(r"\1", text))
    text = text.replace("%", " % ").replace("$", " $ ")
    return " ".join(_NOT_WORD.sub(" ", text).split())


def spoken_replies(data: Path = FIXTURES) -> list[str]:
    """Each distinct text the delegate speaks in the snapshot replay of `data`, sorted."""
    return sorted({text for texts in _replies_by_meeting(data).values() for text in texts})


def _replies_by_meeting(data: Path) -> dict[str, set[str]]:
    meetings = load(data)
    cases = select_cases(meetings, set(VARIANTS), None, 0, None)
    results = asyncio.run(replay_snapshots(meetings, cases, build_engine("local"), OfflineJudge()))
    out: dict[str, set[str]] = {}
    for r in results:
        if r.spoke:
            out.setdefault(r.meeting_id, set()).add(r.response)
    return out


def turn_echo_ratios(data: Path = FIXTURES) -> list[float]:
    """`echo_ratio` of each turn of a meeting (3 words or more) against each reply the delegate speaks in it:
    what the echo detector would make of people, were they speaking while the delegate does."""
    replies = _replies_by_meeting(data)
    return [
        echo_ratio(u.text, reply)
        for m in load(data)
        for u in m.utterances
        if len(u.text.split()) >= ECHO_MIN_WORDS
        for reply in replies.get(m.meeting_id, ())
    ]


def _chunks(sentences: list[SpokenSentence]) -> list[list[SpokenSentence]]:
    chunks: list[list[SpokenSentence]] = [[]]
    for s in sentences:
        if chunks[-1] and sum(x.seconds for x in chunks[-1]) + s.seconds > CHUNK_S:
            chunks.append([])
        chunks[-1].append(s)
    return chunks


def measure(replies: list[str], synthesizer: Synthesizer, model: SpeechModel, worst: int = 5) -> Intelligibility:
    from delegate.asr.whisper import (
        SAMPLE_RATE,  # the audio extra: imported when used, so --help works without it
    )

    refs: list[str] = []
    heard: list[str] = []
    echo_ratios: list[float] = []
    audio_s = synth_s = asr_s = 0.0
    for text in replies:
        t0 = time.perf_counter()
        sentences = synthesize_all(synthesizer, text)
        t1 = time.perf_counter()
        parts = []
        for chunk in _chunks(sentences):
            audio = pcm_to_float(b"".join(s.pcm for s in chunk), synthesizer.sample_rate, SAMPLE_RATE)
            parts.append(model.transcribe(audio, beam_size=5))
            if len(parts[-1].split()) >= ECHO_MIN_WORDS:
                echo_ratios.append(echo_ratio(parts[-1], text))
        asr_s += time.perf_counter() - t1
        synth_s += t1 - t0
        audio_s += sum(s.seconds for s in sentences)
        refs.append(normalise(text))
        heard.append(" ".join(parts))
    per_reply = sorted(
        (ReplyWER(text=t, heard=h, wer=wer([r], [normalise(h)])) for t, h, r in zip(replies, heard, refs, strict=True)),
        key=lambda x: -x.wer,
    )
    return Intelligibility(
        replies=len(replies),
        echo_ratios=echo_ratios,
        words=sum(len(r.split()) for r in refs),
        wer=wer(refs, [normalise(h) for h in heard]),
        audio_s=audio_s,
        synthesis_s=synth_s,
        recognition_s=asr_s,
        worst=per_reply[:worst],
    )


def main(
    data: Path = typer.Option(FIXTURES, help="A delegate-bench/1 file or a folder of them (default: the shipped fixtures).", show_default=False),
    voice: Path = typer.Option(None, help="A Piper voice (.onnx); default: DELEGATE_TTS_VOICE, else the shipped one."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures here as JSON."),
) -> None:
    """Synthesise every spoken reply of the benchmark and transcribe it back: the voice's word error rate."""
    from delegate.config import Settings

    replies = spoken_replies(data)
    from delegate.asr.whisper import load_speech_model

    result = measure(replies, load_synthesizer(voice or Settings().tts_voice), load_speech_model())
    typer.echo(
        f"{result.replies} replies, {result.words} words, {result.audio_s:.0f} s of speech: "
        f"WER {result.wer:.1%} (synthesis {result.synthesis_s:.0f} s, "
        f"real-time factor {result.synthesis_s / max(result.audio_s, 1e-9):.2f}; recognition {result.recognition_s:.0f} s)"
    )
    people = turn_echo_ratios(data)
    echoes = sorted(result.echo_ratios)
    if echoes and people:
        typer.echo(
            f"echo detector (partial_ratio >= {ECHO_MIN_RATIO:.0f}): the voice heard back scores {echoes[0]:.1f} at the "
            f"lowest, {echoes[len(echoes) // 2]:.1f} at the median ({len(echoes)} pieces); people's turns against the "
            f"replies of their meeting reach it in {sum(r >= ECHO_MIN_RATIO for r in people) / len(people):.2%} of {len(people)} pairs"
        )
    for w in result.worst:
        typer.echo(f"  {w.wer:.0%}  said: {w.text}\n       heard: {w.heard}")
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result.model_dump(), indent=2), encoding="utf-8")


def cli() -> None:
    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    app.command()(main)
    app()


if __name__ == "__main__":
    run_cli(cli)
