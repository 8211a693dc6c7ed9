"""`python -m benchmark.names`: are names heard where people are called, and never where nobody is?

- **Heard**: every name of a half of `first_names.txt` (held-out by default: the half the name matcher was
  never tuned on; `benchmark.garbles.held_out`) is spoken by espeak-ng in its opening cue ("{name}, what
  do you think?", the voices and speeds of `benchmark.garbles.plan`) and streamed through the live
  recogniser biased to the attendees (the name and two others), with and without the check of names
  against the audio (`delegate.asr.names_heard`). Counted: cues the shipped matcher
  (`delegate.language.names.find`) reads as addressing the person; and cues read as addressing one of
  the two others (a wrong name).
- **Look-alikes**: the same cues calling someone who is not in the meeting, by the name of the half most
  like the principal's (`sounds_like`, e.g. "Mikko, ..." to a meeting of Mika), biased to the same
  attendees; counted: cues read as addressing the principal (the biasing and the garble matcher invent
  the address; a name checked and not said should stop it).
- **False addresses**: the real recorded speech of `benchmark/real_speech/` (nobody is named in it),
  streamed with attendees drawn from the same half, several sets; counted: finals read as addressing any
  attendee.

Needs espeak-ng (Debian package). A few minutes on two cores for the held-out half.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from benchmark.asr import REAL_SPEECH, load_clips
from benchmark.garbles import Clip, held_out, load_names, plan, synthesise
from delegate.extras import run_cli
from delegate.language.names import Reference, find, sounds_like
from delegate.models import Profile

if TYPE_CHECKING:
    from delegate.asr.whisper import SpeechModel

console = Console()
app = typer.Typer(rich_markup_mode=None, add_completion=False)


def addressed(text: str, person: str, attendees: tuple[str, ...], unheard: frozenset[str] = frozenset()) -> bool:
    """As the decision reads it: names the recogniser found not said (`unheard`, lower-case) name nobody."""
    others = frozenset(a.lower() for a in attendees if a != person)
    return find(text, Profile(name=person), others, unheard=unheard).reference is Reference.addressed


def heard_finals(
    model: SpeechModel, pcm: bytes, attendees: tuple[str, ...], check: bool
) -> list[tuple[str, frozenset[str]]]:
    """The live recogniser's finals of `pcm`, biased to `attendees`, names checked against the audio or not:
    each text with the names found not said (lower-case)."""
    from delegate.asr.whisper import StreamingTranscriber

    stream = StreamingTranscriber(model, names=attendees, partial_every_s=3600.0, check_names=check)
    events = [e for e in stream.feed(pcm) + stream.flush() if e.final]
    return [(e.text, frozenset(n.casefold() for n in e.names_unheard)) for e in events]


def finals(model: SpeechModel, pcm: bytes, attendees: tuple[str, ...], check: bool) -> list[str]:
    """The texts of `heard_finals`."""
    return [text for text, _ in heard_finals(model, pcm, attendees, check)]


@app.command()
def main(
    half: Annotated[str, typer.Option(help="Names to speak: held-out, tune or both.")] = "held-out",
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N cues of the half (a quick run).")] = None,
    name_sets: Annotated[int, typer.Option(min=1, help="Attendee sets the real speech is streamed with.")] = 4,
    verbose: Annotated[bool, typer.Option(help="Print every transcript.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures here.")] = None,
) -> None:
    if shutil.which("espeak-ng") is None:
        console.print("benchmark.names: espeak-ng is not installed (Debian: apt-get install espeak-ng)")
        raise typer.Exit(2)
    if half not in ("held-out", "tune", "both"):
        raise typer.BadParameter("--half must be held-out, tune or both")
    # Imported here, so that without the audio extra this command says which extra to install.
    from delegate.asr.whisper import load_speech_model, read_audio

    model = load_speech_model()
    names = load_names()
    cues: list[Clip] = [
        c for c in plan(names) if c.attendees and (half == "both" or held_out(c.name) == (half == "held-out"))
    ][:limit]
    figures: dict[str, dict[str, float | int]] = {}
    for check in (False, True):
        heard = wrong = heard_unflagged = 0
        for clip in cues:
            pcm = synthesise(clip.template.format(name=clip.name), clip.voice, clip.speed)
            said = heard_finals(model, pcm, clip.attendees, check)
            text = " ".join(t for t, _ in said)
            unheard = frozenset().union(*(u for _, u in said))
            heard += addressed(text, clip.name, clip.attendees, unheard)
            heard_unflagged += addressed(text, clip.name, clip.attendees)
            wrong += any(
                addressed(text, other, clip.attendees, unheard) for other in clip.attendees if other != clip.name
            )
            if verbose:
                console.print(
                    f"check={check} {clip.name}: {clip.template.format(name=clip.name)!r} -> {text!r} unheard {set(unheard)}"
                )
        figures[f"cues, check {'on' if check else 'off'}"] = {
            "cues": len(cues),
            "heard": round(heard / len(cues), 4),
            "heard_without_not_said": round(heard_unflagged / len(cues), 4),
            "wrong_name": wrong,
        }

    pool = [n.name for n in names if half == "both" or held_out(n.name) == (half == "held-out")]
    look_alikes = []
    for clip in cues:
        # A name that sounds the same ("Pieter" for Peter) is the principal's as far as anyone can hear.
        others = [n for n in pool if n not in clip.attendees and sounds_like(n, clip.name) < 0.9]
        called = max(others, key=lambda n: sounds_like(n, clip.name))
        look_alikes.append((clip, called))
    for check in (False, True):
        false = 0
        for clip, called in look_alikes:
            pcm = synthesise(clip.template.format(name=called), clip.voice, clip.speed)
            said = heard_finals(model, pcm, clip.attendees, check)
            text = " ".join(t for t, _ in said)
            hit = addressed(text, clip.name, clip.attendees, frozenset().union(*(u for _, u in said)))
            false += hit
            if verbose or hit:
                console.print(f"check={check} look-alike {called!r} for {clip.name}: {text!r} addresses={hit}")
        figures[f"look-alikes, check {'on' if check else 'off'}"] = {"cues": len(look_alikes), "false_addresses": false}

    rng = random.Random(24)
    sets = [tuple(rng.sample(pool, 3)) for _ in range(name_sets)]
    real = load_clips(REAL_SPEECH)
    for check in (False, True):
        count = false = 0
        for attendees in sets:
            for clip in real:
                for text, unheard in heard_finals(model, read_audio(clip.path), attendees, check):
                    count += 1
                    hit = [a for a in attendees if addressed(text, a, attendees, unheard)]
                    false += bool(hit)
                    if hit or verbose:
                        console.print(f"check={check} {clip.name} {attendees}: {text!r} addresses {hit}")
        figures[f"real speech, check {'on' if check else 'off'}"] = {"finals": count, "false_addresses": false}

    table = Table(title=f"Names heard ({half} names, espeak-ng cues biased to the attendees; real speech with nobody named)")
    for col in ("figure", "check off", "check on"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    off, on = figures["cues, check off"], figures["cues, check on"]
    table.add_row(f"address heard ({off['cues']} cues)", f"{off['heard']:.1%}", f"{on['heard']:.1%}")
    table.add_row(
        "  the same, the decision not told which names were checked and not said",
        f"{off['heard_without_not_said']:.1%}",
        f"{on['heard_without_not_said']:.1%}",
    )
    table.add_row("cues read as addressing another attendee", str(off["wrong_name"]), str(on["wrong_name"]))
    loff, lon = figures["look-alikes, check off"], figures["look-alikes, check on"]
    table.add_row(
        f"look-alike cues read as addressing the principal ({loff['cues']} cues, someone else called)",
        str(loff["false_addresses"]),
        str(lon["false_addresses"]),
    )
    roff, ron = figures["real speech, check off"], figures["real speech, check on"]
    table.add_row(
        f"false addresses on real speech ({roff['finals']} finals x 3 names)",
        str(roff["false_addresses"]),
        str(ron["false_addresses"]),
    )
    console.print(table)
    console.print(figures)
    if json_out:
        json_out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    run_cli(app)
