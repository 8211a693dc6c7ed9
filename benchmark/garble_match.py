"""`python -m benchmark.garble_match`: does the name matcher hear cues whose name a recogniser garbled?

- **Recall**: share of spoken cues whose name the recogniser garbled (`benchmark/names/garbles.json`,
  made by `python -m benchmark.garbles`) that `delegate.language.names.find` still reads as addressing the
  person. Names are split in two halves by a hash of the name: *tune* and *held-out*.
- **False positives**: share of (sentence, person) pairs where `find` reads a real meeting sentence
  (ELITR dev utterances and QMSum turns, split in halves by meeting) as addressing a person from the
  name list whose name it does not hold; and of cues spoken to someone else (the recogniser's
  transcripts of the other names' cues) read as addressing the person.
- **Second check**: the fixed confusion table of `benchmark.scoring.variants` (`NAME_POOL`), in the same cues.

`--tune` searches the matcher's `GarbleModel` (weights, folds, thresholds) on the tune halves only: the
highest tune recall whose tune false-positive rate on sentences is no higher than that of the matcher
before this search (`BEFORE`: single words, hand-set weights).
Figures are always reported on the held-out halves.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import unicodedata
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from benchmark.garbles import CLOSING, OPENING, Garble, held_out, load_names, load_table
from benchmark.scoring.data import load
from benchmark.scoring.variants import NAME_POOL
from delegate.language.names import _FOLD, _FOLD_WIDE, GARBLE, GarbleModel, Reference, find
from delegate.models import Profile

BEFORE = GarbleModel(phonetic=0.55, initial=0.05, threshold=0.72, folds=_FOLD, span_words=1)
"""The matcher as it was before it was searched on recogniser garbles: its false positives are the budget."""
SHARED = Path("../shared")
"""Where the shared data sets sit, from a checkout's root (as in the README's commands); `--shared` overrides it."""
SENTENCES_PER_MEETING = 40
PEOPLE_PER_SENTENCE = 2

console = Console()
app = typer.Typer(rich_markup_mode=None, add_completion=False, help=__doc__.split("\n")[0])


def _norm(word: str) -> str:
    return unicodedata.normalize("NFKD", word.lower()).encode("ascii", "ignore").decode()


@dataclass(frozen=True)
class Item:
    text: str
    person: str
    others: frozenset[str]


def is_garbled(r: Garble) -> bool:
    return _norm(r.garbled) != _norm(r.name)


def _others(rng: random.Random, pool: list[str], person: str, k: int = 3) -> frozenset[str]:
    return frozenset(_norm(n) for n in rng.sample([p for p in pool if p != person], min(k, len(pool) - 1)))


def garbled_cues(records: Iterable[Garble], heldout: bool, biased: bool = False, written: bool = False) -> list[Item]:
    """Transcripts whose name the recogniser garbled, each with three other attendees' names.

    `written`: only those where it wrote something for the name (not dropped it).
    """
    records = [r for r in records if held_out(r.name) == heldout and r.biased == biased]
    pool = sorted({r.name for r in records})
    return [
        Item(r.transcript, r.name, _others(random.Random(_key(r)), pool, r.name))
        for r in records
        if is_garbled(r) and (r.garbled or not written)
    ]


def all_cues(records: Iterable[Garble], heldout: bool, biased: bool) -> list[Item]:
    """Every transcribed cue, the name written as spelled or not: how often the cue is heard at all."""
    records = [r for r in records if held_out(r.name) == heldout and r.biased == biased]
    pool = sorted({r.name for r in records})
    return [Item(r.transcript, r.name, _others(random.Random(_key(r)), pool, r.name)) for r in records]


def cues_to_others(records: Iterable[Garble], heldout: bool) -> list[Item]:
    """Unbiased transcripts of cues to one person, each read as if another person of the half were listening.

    The addressee is not among the listener's known attendees: the hard case (a guest, a late joiner).
    """
    records = [r for r in records if held_out(r.name) == heldout and not r.biased]
    pool = sorted({r.name for r in records})
    out = []
    for r in records:
        rng = random.Random(_key(r))
        for person in rng.sample([p for p in pool if p != r.name], 2):
            out.append(Item(r.transcript, person, frozenset()))
    return out


def _key(r: Garble) -> int:
    return zlib.crc32(f"{r.name}|{r.voice}|{r.speed}|{r.template}|{r.biased}".encode())


_MARKS = re.compile(r"\{[^}]*\}")


def meeting_sentences(shared: Path = SHARED) -> dict[str, list[str]]:
    """Utterances of real meetings by meeting id: ELITR dev and QMSum (train and val); empty if absent."""
    out: dict[str, list[str]] = {}
    elitr = shared / "benchmark" / "elitr-dev"
    if elitr.is_dir():
        for m in load(elitr):
            out[m.meeting_id] = [u.text for u in m.utterances]
    for path in sorted((shared / "corpora" / "qmsum").glob("*/*.json")):
        turns = json.loads(path.read_text(encoding="utf-8"))["meeting_transcripts"]
        out[f"qmsum/{path.stem}"] = [" ".join(_MARKS.sub(" ", t["content"]).split()) for t in turns]
    return out


def sentence_items(sentences: dict[str, list[str]], names: list[str], heldout: bool) -> list[Item]:
    """A sample of each meeting's utterances, each read by people whose first name it does not hold."""
    out: list[Item] = []
    for meeting_id, texts in sorted(sentences.items()):
        if held_out(meeting_id) != heldout:
            continue
        rng = random.Random(zlib.crc32(meeting_id.encode()))
        usable = [t for t in texts if len(t.split()) >= 3]
        for text in rng.sample(usable, min(SENTENCES_PER_MEETING, len(usable))):
            words = {_norm(w) for w in re.findall(r"\w+", text)}
            candidates = [n for n in names if _norm(n) not in words]
            for person in rng.sample(candidates, PEOPLE_PER_SENTENCE):
                out.append(Item(text, person, _others(rng, candidates, person)))
    return out


def table_cues() -> list[Item]:
    """Every garble of the fixed confusion table in every cue template (all its names: it is a second check)."""
    pool = [first for first, _, _ in NAME_POOL]
    out = []
    for first, _, garbles in NAME_POOL:
        rng = random.Random(zlib.crc32(first.encode()))
        for g in garbles:
            for template in (*OPENING, *CLOSING):
                out.append(Item(template.format(name=g), first, _others(rng, pool, first)))
    return out


def fires(item: Item, model: GarbleModel = GARBLE) -> bool:
    return find(item.text, Profile(name=item.person), item.others, model).reference is Reference.addressed


def scores(item: Item, model: GarbleModel) -> tuple[float, float]:
    """The thresholds at which `item` fires under `model`'s weights: for one word, and for a run of words.

    1.1 when it fires without any garbled reading (the name as written), 0 when it cannot fire.
    """
    person = Profile(name=item.person)
    word = find(item.text, person, item.others, replace(model, threshold=0.0, span_words=1))
    if word.reference is Reference.addressed and word.form != "garbled":
        return (1.1, 1.1)
    run = find(item.text, person, item.others, replace(model, threshold=1.01, span_threshold=0.0))
    return (
        word.score if word.reference is Reference.addressed else 0.0,
        run.score if run.reference is Reference.addressed and run.form == "garbled" else 0.0,
    )


def rate(items: list[Item], model: GarbleModel = GARBLE) -> float:
    return sum(fires(i, model) for i in items) / len(items) if items else float("nan")


def tune(positives: list[Item], negatives: list[Item], budget: float) -> tuple[GarbleModel, float, float]:
    """The model with the highest recall on `positives` whose false-positive rate on `negatives` <= budget."""
    best = (BEFORE, rate(positives, BEFORE), rate(negatives, BEFORE))
    thresholds = np.arange(0.60, 0.96, 0.01)
    for phonetic, initial, folds in itertools.product((0.45, 0.55, 0.65), (0.0, 0.05), (_FOLD, _FOLD_WIDE)):
        model = GarbleModel(phonetic=phonetic, initial=initial, folds=folds)
        pos = np.array([scores(i, model) for i in positives])
        neg = np.array([scores(i, model) for i in negatives])
        for t_word in thresholds:
            for t_run in (*thresholds, 2.0):  # 2.0: no runs of words at all
                fp = float(np.mean((neg[:, 0] >= t_word) | (neg[:, 1] >= t_run)))
                if fp > budget:
                    continue
                rec = float(np.mean((pos[:, 0] >= t_word) | (pos[:, 1] >= t_run)))
                if rec > best[1] or (rec == best[1] and fp < best[2]):
                    span = {"span_threshold": round(float(t_run), 2)} if t_run <= 1 else {"span_words": 1}
                    best = (replace(model, threshold=round(float(t_word), 2), **span), rec, fp)
                break  # higher run thresholds only lose recall
    return best


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


@app.command()
def main(
    garbles: Annotated[Path | None, typer.Option(help="Garble table (default: the shipped one).")] = None,
    shared: Annotated[Path, typer.Option(help="The shared data folder (ELITR dev, QMSum).")] = SHARED,
    do_tune: Annotated[bool, typer.Option("--tune", help="Search the matcher's weights on the tune halves.")] = False,
) -> None:
    table = load_table(garbles)
    names = [n.name for n in load_names()]
    sentences = meeting_sentences(shared)
    if not sentences:
        console.print(f"no meeting sentences under {shared}: false-positive rates need ELITR dev or QMSum")
        raise typer.Exit(2)
    halves = {h: [n for n in names if held_out(n) == h] for h in (False, True)}
    model = GARBLE
    if do_tune:
        positives = garbled_cues(table.records, heldout=False)
        negatives = sentence_items(sentences, halves[False], heldout=False)
        budget = rate(negatives, BEFORE)
        model, rec, fp = tune(positives, negatives, budget)
        console.print(f"tuned on {len(positives)} garbled cues, {len(negatives)} sentence pairs: {model}")
        console.print(f"tune recall {_pct(rate(positives, BEFORE))} -> {_pct(rec)}, tune FP {_pct(budget)} -> {_pct(fp)}")
    out = Table(title="garbled-name matching, held-out halves")
    out.add_column("figure")
    out.add_column("items", justify="right")
    out.add_column("before", justify="right")
    out.add_column("shipped", justify="right")
    if do_tune:
        out.add_column("tuned now", justify="right")
    rows = [
        ("recall: recogniser garbles, unbiased", garbled_cues(table.records, True)),
        ("recall: recogniser garbles, unbiased, name not dropped", garbled_cues(table.records, True, written=True)),
        ("recall: recogniser garbles, biased to attendees", garbled_cues(table.records, True, biased=True)),
        ("heard: every spoken cue, unbiased", all_cues(table.records, True, biased=False)),
        ("heard: every spoken cue, biased to attendees", all_cues(table.records, True, biased=True)),
        ("recall: fixed confusion table (all names)", table_cues()),
        ("false positive: meeting sentences", sentence_items(sentences, halves[True], heldout=True)),
        ("false positive: cues to an unknown other", cues_to_others(table.records, True)),
    ]
    for label, items in rows:
        cells = [label, str(len(items)), _pct(rate(items, BEFORE)), _pct(rate(items))]
        if do_tune:
            cells.append(_pct(rate(items, model)))
        out.add_row(*cells)
    console.print(f"shipped: {GARBLE}")
    console.print(out)


if __name__ == "__main__":
    app()
