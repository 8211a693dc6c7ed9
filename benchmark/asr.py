"""`python -m benchmark.asr`: word error rate, speed and latency of streaming recognition on recorded clips.

Each clip is fed in small chunks as a live client would send it. A virtual clock stands for the wall
clock of a live meeting: a chunk cannot be processed before it has been spoken, and processing takes
the time it really took. So the latency of a final utterance (clock when it comes out minus the end of
its speech in the reference) is what a live user would wait, without the benchmark running in real time.
"""

from __future__ import annotations

import json
import re
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from delegate.config import Settings
from delegate.extras import run_cli
from delegate.resources import package_path

if TYPE_CHECKING:
    from delegate.asr.whisper import SpeechModel, StreamingTranscriber, TranscriptEvent

AUDIO_FIXTURES = package_path("benchmark", "audio_fixtures")
"""The top-level `audio_fixtures/`, shipped in the wheel so that the benchmark runs where it is installed."""
console = Console()
app = typer.Typer(rich_markup_mode=None, add_completion=False)


_DIGITS = "zero one two three four five six seven eight nine".split()


def words(text: str) -> list[str]:
    """Lower-case words without punctuation, each digit spelled out ("415" -> four one five): what WER
    compares. Digits are read one by one in the spoken-digit clips; Whisper writes them as numerals."""
    plain = re.sub(r"[^a-z0-9' ]", " ", text.lower()).replace("'", "")
    return re.sub(r"\d", lambda m: f" {_DIGITS[int(m.group())]} ", plain).split()


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        diag, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (r != h))
    return row[-1]


def error_counts(ref: list[str], hyp: list[str]) -> tuple[int, int]:
    """(errors, insertions) of the cheapest alignment of `hyp` to `ref`: words the recogniser invented."""
    row = [(j, j) for j in range(len(hyp) + 1)]
    for i, r in enumerate(ref, 1):
        diag, row[0] = row[0], (i, 0)
        for j, h in enumerate(hyp, 1):
            sub = (diag[0] + (r != h), diag[1])
            ins = (row[j - 1][0] + 1, row[j - 1][1] + 1)
            dele = (row[j][0] + 1, row[j][1])
            diag, row[j] = row[j], min(sub, dele, ins)
    return row[-1]


def insertion_rate(pairs: list[tuple[str, str]]) -> float:
    """Inserted words over all reference words (words heard that nobody said)."""
    inserted = sum(error_counts(words(r), words(h))[1] for r, h in pairs)
    total = sum(len(words(r)) for r, _ in pairs)
    return inserted / total if total else 0.0


def word_error_rate(pairs: list[tuple[str, str]]) -> float:
    """Corpus WER over (reference, hypothesis) pairs: all errors over all reference words."""
    errors = sum(edit_distance(words(r), words(h)) for r, h in pairs)
    total = sum(len(words(r)) for r, _ in pairs)
    return errors / total if total else 0.0


@dataclass(frozen=True)
class Segment:
    speaker: str
    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Clip:
    name: str
    path: Path
    attendees: list[str]
    text: str
    segments: list[Segment]


def load_clips(folder: Path) -> list[Clip]:
    """The clips of `folder/references.json` (the format audio_fixtures/make.sh writes)."""
    refs = json.loads((folder / "references.json").read_text())
    return [
        Clip(
            name=name,
            path=folder / c["file"],
            attendees=c.get("attendees", []),
            text=c["text"],
            segments=[Segment(**s) for s in c["segments"]],
        )
        for name, c in refs["clips"].items()
    ]


@dataclass
class ClipRun:
    clip: Clip
    duration_s: float
    busy_s: float = 0.0
    finals: list[TranscriptEvent] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    """Wall-clock wait from a turn's end to its final, compute included (what a user waits)."""
    audio_waits_s: list[float] = field(default_factory=list)
    """Audio streamed past a turn's end before its final came: the cut logic alone, whatever the CPU."""
    partials: int = 0

    @property
    def text(self) -> str:
        return " ".join(e.text for e in self.finals)


def stream_clip(clip: Clip, transcriber: StreamingTranscriber, chunk_ms: int) -> ClipRun:
    from delegate.asr.whisper import SAMPLE_RATE, read_audio

    pcm = read_audio(clip.path)
    step = SAMPLE_RATE * chunk_ms // 1000 * 2
    run = ClipRun(clip, duration_s=len(pcm) / 2 / SAMPLE_RATE)
    clock = 0.0
    fed = 0.0

    def take(events: list[TranscriptEvent]) -> None:
        for e in events:
            if not e.final:
                run.partials += 1
                continue
            run.finals.append(e)
            # The reference turn this final ends with: the last one that started before its end.
            ended = [s for s in clip.segments if s.start < e.end]
            if ended:
                run.latencies_s.append(clock - ended[-1].end)
                run.audio_waits_s.append(fed - ended[-1].end)

    for offset in range(0, len(pcm), step):
        chunk = pcm[offset : offset + step]
        fed = (offset + len(chunk)) / 2 / SAMPLE_RATE
        clock = max(clock, fed)
        t0 = time.perf_counter()
        events = transcriber.feed(chunk)
        run.busy_s += time.perf_counter() - t0
        clock += time.perf_counter() - t0
        take(events)
    t0 = time.perf_counter()
    events = transcriber.flush()
    run.busy_s += time.perf_counter() - t0
    clock += time.perf_counter() - t0
    take(events)
    return run


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


REAL_SPEECH = package_path("benchmark", "real_speech")
"""Recorded human speech with references (sources and licences in its README.md)."""


def transcribe_whole(model: SpeechModel, clip: Clip, names: bool) -> str:
    """The clip decoded in one piece by faster-whisper's own long-form path (beam 5): the yardstick."""
    from delegate.asr.whisper import name_prompt, read_audio

    audio = np.frombuffer(read_audio(clip.path), "<i2").astype(np.float32) / 32768
    return model.transcribe_whole(audio, hotwords=name_prompt(clip.attendees) if names else None)


@dataclass(frozen=True)
class BatchFigures:
    """Every reference turn of a set decoded alone and in batches of up to 8 as the decode queue forms them."""

    turns: int
    single_wer: float
    batched_wer: float
    identical: int
    """Turns whose batched text is the single one, word for word."""
    shared: int
    """Turns decoded in a call with another turn (the rest had no partner of their batch key)."""

    @property
    def gap(self) -> float:
        return self.batched_wer - self.single_wer


def batched_against_single(model: SpeechModel, clips: list[Clip], names: bool, batch: int = 8) -> BatchFigures:
    """Each reference turn (with the 0.2 s margins the streamer keeps) decoded alone, then in consecutive
    batches of `batch` turns of different clips, names and lengths, as finals queued together would be."""
    from delegate.asr.whisper import FINAL_BEAM, SAMPLE_RATE, name_prompt, read_audio

    turns: list[tuple[np.ndarray, str | None, str]] = []
    for clip in clips:
        pcm = np.frombuffer(read_audio(clip.path), "<i2").astype(np.float32) / 32768
        hotwords = name_prompt(clip.attendees) if names else None
        for s in clip.segments:
            lo, hi = max(0, int((s.start - 0.2) * SAMPLE_RATE)), int((s.end + 0.2) * SAMPLE_RATE)
            turns.append((pcm[lo:hi], hotwords, s.text))
    single = [model.transcribe(a, beam_size=FINAL_BEAM, hotwords=h) for a, h, _ in turns]
    batched: list[str] = []
    shared = 0
    for lo in range(0, len(turns), batch):
        part = turns[lo : lo + batch]
        batched += model.transcribe_batch([(a, h) for a, h, _ in part], beam_size=FINAL_BEAM)
        keys = [model.batch_key(len(a), h) for a, h, _ in part]
        shared += sum(keys.count(k) > 1 for k in keys)
    references = [t for _, _, t in turns]
    return BatchFigures(
        turns=len(turns),
        single_wer=word_error_rate(list(zip(references, single, strict=True))),
        batched_wer=word_error_rate(list(zip(references, batched, strict=True))),
        identical=sum(a == b for a, b in zip(single, batched, strict=True)),
        shared=shared,
    )


@dataclass(frozen=True)
class SetFigures:
    label: str
    streamed_wer: float
    whole_wer: float
    insertion_rate: float
    rtf: float
    latency_p95_s: float
    batches: BatchFigures

    @property
    def ratio(self) -> float:
        return self.streamed_wer / self.whole_wer if self.whole_wer else float("inf")


def run_set(
    label: str, folder: Path, model: SpeechModel, settings: Settings, names: bool, chunk_ms: int
) -> tuple[SetFigures, list[ClipRun], list[str]]:
    from delegate.asr.turn_words import load_turn_words
    from delegate.asr.whisper import StreamingTranscriber, load_turn_end

    clips = load_clips(folder)
    # The end of turn as the service has it (DELEGATE_ASR_TURN_END): smart-turn, or the silence rule.
    turn_end = load_turn_end(settings) if settings.asr_turn_end == "smart-turn" else None
    turn_words = load_turn_words() if turn_end is not None and settings.asr_turn_words else None
    runs = []
    for clip in clips:
        transcriber = StreamingTranscriber(
            model,
            names=clip.attendees if names else (),
            silence_s=settings.asr_silence_s,
            turn_end=turn_end,
            turn_wait_s=settings.asr_turn_wait_s,
            turn_words=turn_words,
            check_names=settings.asr_check_names,
        )
        runs.append(stream_clip(clip, transcriber, chunk_ms))
    wholes = [transcribe_whole(model, clip, names) for clip in clips]
    streamed = [(r.clip.text, r.text) for r in runs]
    latencies = [x for r in runs for x in r.latencies_s]
    figures = SetFigures(
        label=label,
        streamed_wer=word_error_rate(streamed),
        whole_wer=word_error_rate([(c.text, w) for c, w in zip(clips, wholes, strict=True)]),
        insertion_rate=insertion_rate(streamed),
        rtf=sum(r.busy_s for r in runs) / sum(r.duration_s for r in runs),
        latency_p95_s=percentile(latencies, 0.95),
        batches=batched_against_single(model, clips, names),
    )
    return figures, runs, wholes


def print_runs(label: str, runs: list[ClipRun], wholes: list[str]) -> None:
    table = Table(title=label)
    for col in ("clip", "audio s", "streamed WER", "whole WER", "inserted", "RTF", "finals/turns", "partials"):
        table.add_column(col, justify="left" if col == "clip" else "right")
    for r, whole in zip(runs, wholes, strict=True):
        table.add_row(
            r.clip.name,
            f"{r.duration_s:.1f}",
            f"{word_error_rate([(r.clip.text, r.text)]):.1%}",
            f"{word_error_rate([(r.clip.text, whole)]):.1%}",
            str(error_counts(words(r.clip.text), words(r.text))[1]),
            f"{r.busy_s / r.duration_s:.3f}",
            f"{len(r.finals)}/{len(r.clip.segments)}",
            str(r.partials),
        )
    console.print(table)
    for r, whole in zip(runs, wholes, strict=True):
        console.print(f"[bold]{r.clip.name}[/] streamed: {r.text}")
        console.print(f"[bold]{r.clip.name}[/] whole:    {whole}")


@app.command()
def main(
    audio: Annotated[
        list[Path] | None,
        typer.Option(help="Folder with references.json and the audio it names (repeat for several sets)."),
    ] = None,
    names: Annotated[bool, typer.Option(help="Bias recognition toward each clip's attendee names.")] = True,
    chunk_ms: Annotated[
        int, typer.Option(min=10, help="Audio per fed chunk, as a live client sends it.")
    ] = 100,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the figures of every set here.")
    ] = None,
) -> None:
    """Stream every clip as a live client would, decode it whole too, and report WER side by side with
    insertions, real-time factor, latency and memory. Default sets: the espeak-ng fixtures and real speech."""
    # Imported here, so that without the audio extra this command says which extra to install.
    from delegate.asr.whisper import SAMPLE_RATE, load_speech_model, read_audio

    settings = Settings()
    model = load_speech_model(settings.asr_model, settings.asr_threads)
    folders = audio or [AUDIO_FIXTURES, REAL_SPEECH]
    # One warm-up decode so the first clip does not pay for lazy initialisation.
    first = load_clips(folders[0])[0]
    warmup = np.frombuffer(read_audio(first.path)[: 2 * SAMPLE_RATE * 2], "<i2").astype(np.float32) / 32768
    model.transcribe(warmup, beam_size=1)

    results = []
    for folder in folders:
        label = {AUDIO_FIXTURES: "fixtures (espeak-ng)", REAL_SPEECH: "real speech"}.get(folder, str(folder))
        figures, runs, wholes = run_set(label, folder, model, settings, names, chunk_ms)
        print_runs(f"{label} ({model.path.name}, names biasing {'on' if names else 'off'})", runs, wholes)
        results.append(figures)

    table = Table(title="Streamed against whole-clip decoding")
    for col in ("set", "streamed WER", "whole WER (beam 5)", "ratio", "insertions", "RTF", "latency p95 s"):
        table.add_column(col, justify="left" if col == "set" else "right")
    for f in results:
        table.add_row(
            f.label,
            f"{f.streamed_wer:.1%}",
            f"{f.whole_wer:.1%}",
            f"{f.ratio:.2f}x",
            f"{f.insertion_rate:.1%}",
            f"{f.rtf:.3f}",
            f"{f.latency_p95_s:.2f}",
        )
    console.print(table)
    table = Table(title="Batched against single decodes of the same turns (batches of up to 8, mixed)")
    for col in ("set", "turns", "single WER", "batched WER", "gap", "identical", "in shared batches"):
        table.add_column(col, justify="left" if col == "set" else "right")
    for f in results:
        b = f.batches
        table.add_row(
            f.label,
            str(b.turns),
            f"{b.single_wer:.1%}",
            f"{b.batched_wer:.1%}",
            f"{b.gap * 100:+.1f} pt",
            f"{b.identical}/{b.turns}",
            str(b.shared),
        )
    console.print(table)
    figures_out = {
        "sets": [
            {
                "set": f.label,
                "wer": round(f.streamed_wer, 4),
                "whole_wer": round(f.whole_wer, 4),
                "ratio": round(f.ratio, 3),
                "insertion_rate": round(f.insertion_rate, 4),
                "rtf": round(f.rtf, 4),
                "final_latency_s_p95": round(f.latency_p95_s, 3),
                "single_wer": round(f.batches.single_wer, 4),
                "batched_wer": round(f.batches.batched_wer, 4),
                "batched_identical": f.batches.identical,
                "batched_shared": f.batches.shared,
                "turns": f.batches.turns,
            }
            for f in results
        ],
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    console.print(figures_out)
    if json_out:
        json_out.write_text(json.dumps(figures_out, indent=2) + "\n")


if __name__ == "__main__":
    run_cli(app)
