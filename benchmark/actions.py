"""`python -m benchmark.actions`: run the action extractor over whole meetings and score it against gold action items.

Matching rule (one predicted action counts for at most one gold item, and the other way round):

1. A predicted action and a gold item *can* match when their assignee sets overlap (the prediction's
   `assignees` and the gold `responsible_person`, both speaker labels; an empty side never matches).
2. Their score is `similarity(predicted.description, gold.description)` from `delegate.language.similarity`
   (the offline judge's similarity: wordllama embeddings + content-word overlap, in [0, 1]).
3. Pairs scoring at least `THRESHOLD` (0.4) are matched greedily, highest score first; a pair is
   taken only if neither side is matched yet (ties: earlier gold, then earlier prediction).

0.4 is where the two dev golds agree: descriptions of the same action written by different annotators
(one terse, one detailed) score 0.36-0.94, different actions of the same people mostly below 0.4.

Figures, over all meetings together (micro-averaged):
- precision = matched / proposed, recall = matched / gold, F1 their harmonic mean;
- assignee accuracy: matched pairs whose assignee sets are equal;
- grounding: proposals whose `supporting_excerpt` is a verbatim substring of one of the utterances
  named in its `utterance_ids` (must be 1.0);
- proposals per hour: proposals / meeting hours; a meeting's length comes from its utterance
  timestamps when it has them, else from its word count at 150 spoken words a minute;
- ms per utterance: wall time of `ActionExtractor.observe` per utterance (extraction only);
- type accuracy: matched pairs with the gold `action_type`, over matched pairs whose gold has one;
- due accuracy: matched pairs whose predicted `due` agrees with the gold `due`, over matched pairs whose
  gold has one; two dues agree when one phrase contains the other once prepositions are dropped ("by the end
  of the week" / "end of the week") or both name the same day counted from the meeting's date (or, without
  one, from a fixed Wednesday); a due the gold does not have is counted apart (`due_invented`).

`--refine` adds the LLM pass of the `llm` and `hybrid` engines (`delegate.actions.refiner`, endpoint from
`OPENAI_BASE_URL` / `OPENAI_API_KEY` / `DELEGATE_LLM_*`): each proposal or update is refined before the
next utterance (no races, unlike live), actions the LLM rejects are left out of the scores, and the
refiner's calls, fallbacks, refinements and rejections are reported.

Gold files: one JSON per meeting, `{"meeting_id", "actions": [{"excerpt", "description",
"responsible_person", "utterance_id"?, "action_type"?, "due"?}]}`. Meetings are paired with the data
by `meeting_id`; meetings without gold, and gold without a meeting, are reported and left out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rich.console import Console
from rich.table import Table

from benchmark.llm.run import DEFAULT_CACHE, DEFAULT_CONCURRENCY, LLMRun
from benchmark.scoring.data import FIXTURES, BenchDataError, BenchMeeting, load
from delegate.actions import ActionExtractor, due_date
from delegate.config import Settings, load_settings
from delegate.extras import run_cli
from delegate.language.similarity import similarity
from delegate.language.text import word_count
from delegate.meeting import MeetingState
from delegate.models import ActionType, ProposedAction, Utterance

THRESHOLD = 0.4
WORDS_PER_MINUTE = 150
GOLD = FIXTURES / "actions"

Similarity = Callable[[str, str], float]


class GoldAction(BaseModel):
    """One gold action item (ELITR-Bench-Agent format, optionally with our extra fields)."""

    model_config = ConfigDict(frozen=True)

    excerpt: str
    description: str
    responsible_person: list[str] = Field(default_factory=list)
    utterance_id: int | None = None
    action_type: ActionType | None = None
    due: str | None = None


class GoldFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    meeting_id: str
    source: str = ""
    actions: list[GoldAction]


class Match(BaseModel):
    model_config = ConfigDict(frozen=True)

    gold: int
    predicted: int
    score: float
    same_assignees: bool


class Counts(BaseModel):
    """What a set of meetings adds up to; the figures are computed from these."""

    gold: int = 0
    proposed: int = 0
    matched: int = 0
    same_assignees: int = 0
    typed: int = 0
    """Matched pairs whose gold item has an `action_type`."""
    same_type: int = 0
    dated: int = 0
    """Matched pairs whose gold item has a `due`."""
    same_due: int = 0
    due_invented: int = 0
    """Matched pairs with a predicted `due` where the gold has none."""
    grounded: int = 0
    hours: float = 0.0
    utterances: int = 0
    seconds: float = 0.0

    def __add__(self, other: Counts) -> Counts:
        return Counts(**{k: getattr(self, k) + getattr(other, k) for k in Counts.model_fields})


class Scores(BaseModel):
    """The figures `--json` writes."""

    precision: float
    recall: float
    f1: float
    assignee_accuracy: float
    grounding: float
    proposals_per_hour: float
    type_accuracy: float | None
    """None when no matched gold item has a type."""
    due_accuracy: float | None
    """None when no matched gold item has a due date."""

    @classmethod
    def of(cls, c: Counts) -> Scores:
        p = c.matched / c.proposed if c.proposed else 0.0
        r = c.matched / c.gold if c.gold else 0.0
        return cls(
            precision=p,
            recall=r,
            f1=2 * p * r / (p + r) if p + r else 0.0,
            assignee_accuracy=c.same_assignees / c.matched if c.matched else 0.0,
            grounding=c.grounded / c.proposed if c.proposed else 1.0,
            proposals_per_hour=c.proposed / c.hours if c.hours else 0.0,
            type_accuracy=c.same_type / c.typed if c.typed else None,
            due_accuracy=c.same_due / c.dated if c.dated else None,
        )


class MeetingResult(BaseModel):
    meeting_id: str
    counts: Counts
    predicted: list[ProposedAction]
    gold: list[GoldAction]
    matches: list[Match]


def match(
    gold: Sequence[GoldAction],
    predicted: Sequence[ProposedAction],
    sim: Similarity = similarity,
    threshold: float = THRESHOLD,
) -> list[Match]:
    """One-to-one matches by the rule of the module docstring."""
    pairs: list[tuple[float, int, int]] = []
    for i, g in enumerate(gold):
        for j, p in enumerate(predicted):
            if not set(g.responsible_person) & set(p.assignees):
                continue
            score = sim(p.description, g.description)
            if score >= threshold:
                pairs.append((score, i, j))
    pairs.sort(key=lambda t: (-t[0], t[1], t[2]))
    used_g: set[int] = set()
    used_p: set[int] = set()
    out: list[Match] = []
    for score, i, j in pairs:
        if i in used_g or j in used_p:
            continue
        used_g.add(i)
        used_p.add(j)
        same = set(gold[i].responsible_person) == set(predicted[j].assignees)
        out.append(Match(gold=i, predicted=j, score=round(score, 4), same_assignees=same))
    return sorted(out, key=lambda m: m.gold)


_LEADING = re.compile(r"^(?:(?:by|before|until|till|on|at|in|for|within|around|the|this|of)\s+)+", re.I)
_REFERENCE_DAY = dt.date(2020, 6, 3)
"""A Wednesday: what relative dues are counted from when the meeting's date is unknown."""


def same_due(predicted: str | None, gold: str, day: dt.date | None = None) -> bool:
    """Whether a predicted due agrees with a gold one (rule in the module docstring)."""
    if not predicted:
        return False
    p, g = (_LEADING.sub("", x.strip().lower()) for x in (predicted, gold))
    if p and (p in g or g in p):
        return True
    base = day or _REFERENCE_DAY
    resolved = due_date(predicted, base)
    return resolved is not None and resolved == due_date(gold, base)


def grounded(action: ProposedAction, utterances: Sequence[Utterance]) -> bool:
    """The excerpt is a verbatim substring of one utterance the action names."""
    by_id = {u.id: u for u in utterances}
    return bool(action.supporting_excerpt) and any(
        i in by_id and action.supporting_excerpt in by_id[i].text for i in action.utterance_ids
    )


def meeting_hours(utterances: Sequence[Utterance]) -> float:
    starts = [u.start for u in utterances if u.start is not None]
    ends = [u.end if u.end is not None else u.start for u in utterances if u.start is not None]
    if starts and ends and max(e for e in ends if e is not None) > min(starts):
        return (max(e for e in ends if e is not None) - min(starts)) / 3600
    return sum(word_count(u.text) for u in utterances) / WORDS_PER_MINUTE / 60


def extract(meeting: BenchMeeting, principal: str | None = None) -> tuple[list[ProposedAction], float]:
    """Every action the extractor proposes over the whole meeting, and the seconds spent extracting."""
    state = MeetingState(meeting_id=meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names),
                         date=meeting.date)
    extractor = ActionExtractor(principal=principal)
    spent = 0.0
    for u in meeting.utterances:
        state.add(u)
        t0 = time.perf_counter()
        extractor.observe(state)
        spent += time.perf_counter() - t0
    return extractor.actions, spent


async def _refined(
    meetings: Sequence[BenchMeeting], gold: dict[str, list[GoldAction]], settings: Settings, run: LLMRun | None = None
) -> tuple[list[MeetingResult], Counter[str]]:
    """Each meeting through the refiner in its order; with `run`, its concurrency of meetings side by side, its cache."""
    from delegate.actions.refiner import LLMActionRefiner

    run = run or LLMRun(settings, concurrency=1, cache=None)
    client = run.client
    stats: Counter[str] = Counter()
    gate = asyncio.Semaphore(run.concurrency)

    async def one(m: BenchMeeting) -> MeetingResult:
        async with gate:
            state = MeetingState(meeting_id=m.meeting_id, attendees=list(m.attendees), names=dict(m.names), date=m.date)
            refiner = LLMActionRefiner(ActionExtractor(), client, settings)
            spent = 0.0
            for u in m.utterances:
                state.add(u)
                t0 = time.perf_counter()
                found = refiner.observe(state)
                spent += time.perf_counter() - t0
                if found:
                    await refiner.refine(state, found)
            stats.update(calls=refiner.calls, fallbacks=refiner.fallbacks, refined=refiner.refined,
                         rejected=refiner.rejected, excerpts_kept=refiner.excerpts_kept)
            stats.update({f"fallback_{kind}": n for kind, n in refiner.fallback_reasons.items()})
            kept = [a for a in refiner.actions if a.status != "rejected"]
            return score_meeting(m, gold[m.meeting_id], kept, spent)

    try:
        results = list(await asyncio.gather(*(one(m) for m in meetings if m.meeting_id in gold)))
    finally:
        await client.close()
    return results, stats


def run_refined(
    meetings: Sequence[BenchMeeting], gold: dict[str, list[GoldAction]], settings: Settings, run: LLMRun | None = None
) -> tuple[list[MeetingResult], Counter[str]]:
    """`run` with the LLM refinement; also returns the refiner's counters over all meetings."""
    return asyncio.run(_refined(meetings, gold, settings, run))


def score_meeting(
    meeting: BenchMeeting,
    gold: Sequence[GoldAction],
    predicted: Sequence[ProposedAction],
    seconds: float = 0.0,
    sim: Similarity = similarity,
) -> MeetingResult:
    matches = match(gold, predicted, sim)
    counts = Counts(
        gold=len(gold),
        proposed=len(predicted),
        matched=len(matches),
        same_assignees=sum(m.same_assignees for m in matches),
        typed=sum(gold[m.gold].action_type is not None for m in matches),
        same_type=sum(gold[m.gold].action_type == predicted[m.predicted].action_type for m in matches),
        dated=sum(gold[m.gold].due is not None for m in matches),
        same_due=sum(same_due(predicted[m.predicted].due, g.due, meeting.date)
                     for m in matches if (g := gold[m.gold]).due is not None),
        due_invented=sum(gold[m.gold].due is None and predicted[m.predicted].due is not None for m in matches),
        grounded=sum(grounded(p, meeting.utterances) for p in predicted),
        hours=meeting_hours(meeting.utterances),
        utterances=len(meeting.utterances),
        seconds=seconds,
    )
    return MeetingResult(meeting_id=meeting.meeting_id, counts=counts, predicted=list(predicted), gold=list(gold),
                         matches=matches)


class GoldError(ValueError):
    """A gold file that cannot be used; the message names the file and the field."""


_PREFIX = re.compile(r"^\s*\((PERSON\d+)\)\s*")


def load_gold(path: Path) -> dict[str, list[GoldAction]]:
    """Gold action items of one file or a folder of `*.json`, by meeting id."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files or not files[0].exists():
        raise GoldError(f"{path}: no gold action files here")
    out: dict[str, list[GoldAction]] = {}
    for f in files:
        try:
            gold = GoldFile.model_validate_json(f.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as e:
            raise GoldError(f"{f}: not a gold action file: {e}") from e
        out[gold.meeting_id] = [
            a.model_copy(update={"excerpt": _PREFIX.sub("", a.excerpt)}) for a in gold.actions
        ]
    return out


def run(meetings: Sequence[BenchMeeting], gold: dict[str, list[GoldAction]]) -> list[MeetingResult]:
    results = []
    for m in meetings:
        if m.meeting_id not in gold:
            continue
        predicted, seconds = extract(m)
        results.append(score_meeting(m, gold[m.meeting_id], predicted, seconds))
    return results


def total(results: Sequence[MeetingResult]) -> Counts:
    out = Counts()
    for r in results:
        out = out + r.counts
    return out


def _markdown(results: Sequence[MeetingResult], scores: Scores, counts: Counts) -> str:
    lines = [
        "# Action items",
        "",
        f"precision {scores.precision:.3f} · recall {scores.recall:.3f} · F1 {scores.f1:.3f} · "
        f"assignee accuracy {scores.assignee_accuracy:.3f} · grounding {scores.grounding:.3f} · "
        f"{scores.proposals_per_hour:.1f} proposals/hour · "
        f"{f'type accuracy {scores.type_accuracy:.3f} · ' if scores.type_accuracy is not None else ''}"
        f"{f'due accuracy {scores.due_accuracy:.3f} · ' if scores.due_accuracy is not None else ''}"
        f"{1000 * counts.seconds / max(1, counts.utterances):.3f} ms/utterance",
        "",
    ]
    for r in results:
        lines += [f"## {r.meeting_id}", ""]
        by_pred = {m.predicted: m for m in r.matches}
        by_gold = {m.gold: m for m in r.matches}
        for j, p in enumerate(r.predicted):
            mark = f"✓ gold {by_pred[j].gold} ({by_pred[j].score:.2f})" if j in by_pred else "✗"
            lines.append(f"- {mark} `{p.action_type}` {', '.join(p.assignees)}: {p.description}"
                         f"{f' (due {p.due})' if p.due else ''} — “{p.supporting_excerpt}”")
        missed = [g for i, g in enumerate(r.gold) if i not in by_gold]
        if missed:
            lines += ["", "Missed:"]
            lines += [f"- {', '.join(g.responsible_person)}: {g.description}" for g in missed]
        lines.append("")
    return "\n".join(lines)


def _share(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


app = typer.Typer(rich_markup_mode=None, add_completion=False, help=__doc__.split("\n")[0])


@app.command()
def main(
    data: Annotated[Path, typer.Option(help="Meeting file or folder (delegate-bench/1).")] = FIXTURES,
    gold: Annotated[Path, typer.Option(help="Gold action items: a file or a folder, one file per meeting.")] = GOLD,
    out: Annotated[Path | None, typer.Option(help="Folder for results.json and report.md.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the headline figures to this file.")] = None,
    refine: Annotated[bool, typer.Option("--refine", help="Refine with the LLM, as the llm and hybrid engines do.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="With --refine: meetings refined side by side.")] = DEFAULT_CONCURRENCY,
    cache: Annotated[Path, typer.Option(help="With --refine: every answer kept here; a re-run asks only what is missing.")] = DEFAULT_CACHE,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="With --refine: ask again for every call.")] = False,
    price_in: Annotated[float | None, typer.Option("--price-in", min=0.0, help="USD per million prompt tokens.")] = None,
    price_out: Annotated[float | None, typer.Option("--price-out", min=0.0, help="USD per million completion tokens.")] = None,
) -> None:
    """Run the action extractor over whole meetings and score it against gold action items."""
    console = Console()
    if console.width < 110:  # the table needs the room; pipes and CI report 80 columns
        console = Console(width=110)
    try:
        meetings = load(data)
        gold_items = load_gold(gold)
    except (BenchDataError, GoldError) as e:
        console.print(f"[red]{e}[/red]")
        raise typer.Exit(2) from None
    ids = {m.meeting_id for m in meetings}
    for mid in sorted(ids - set(gold_items)):
        console.print(f"[yellow]{mid}: no gold action items, left out[/yellow]")
    for mid in sorted(set(gold_items) - ids):
        console.print(f"[yellow]{mid}: gold without a meeting in {data}, left out[/yellow]")
    refined: Counter[str] | None = None
    if refine:
        try:
            settings = load_settings()
            llm = LLMRun(settings, concurrency, cache, no_cache, price_in, price_out)
            results, refined = run_refined(meetings, gold_items, settings, llm)
        except ValueError as e:
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
    else:
        results = run(meetings, gold_items)
    if not results:
        console.print("[red]no meeting has gold action items[/red]")
        raise typer.Exit(2)
    counts = total(results)
    scores = Scores.of(counts)

    table = Table(title=f"Action items: {data} against {gold}")
    table.add_column("meeting", no_wrap=True)
    for col in ("gold", "prop.", "match", "P", "R", "F1", "assig.", "type", "due", "ground.", "/hour"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in [*results, None]:
        c = r.counts if r is not None else counts
        s = Scores.of(c)
        table.add_row(
            r.meeting_id if r is not None else "all", str(c.gold), str(c.proposed), str(c.matched),
            f"{s.precision:.2f}", f"{s.recall:.2f}", f"{s.f1:.2f}", f"{s.assignee_accuracy:.2f}",
            _share(s.type_accuracy), _share(s.due_accuracy),
            f"{s.grounding:.2f}", f"{s.proposals_per_hour:.1f}",
            end_section=r is results[-1],
        )
    console.print(table)
    console.print(f"extraction: {1000 * counts.seconds / max(1, counts.utterances):.3f} ms per utterance "
                  f"over {counts.utterances} utterances")
    console.print(f"type right on {counts.same_type} of {counts.typed} matched pairs with a gold type; due right on "
                  f"{counts.same_due} of {counts.dated} with a gold due; {counts.due_invented} dues the gold does not have")
    if refined is not None:
        reasons = ", ".join(f"{k.removeprefix('fallback_')} {n}" for k, n in refined.items() if k.startswith("fallback_"))
        console.print(f"LLM refinement: {refined['calls']} calls, {refined['fallbacks']} fallbacks"
                      f"{f' ({reasons})' if reasons else ''}, {refined['refined']} refined, "
                      f"{refined['rejected']} rejected (left out), {refined['excerpts_kept']} excerpts not verbatim")
        spent = llm.figures()
        llm.remember()
        cost = "no price known (--price-in/--price-out)" if spent["cost_usd"] is None else f"${spent['cost_usd']:.4f}"
        console.print(f"LLM run: {spent['calls']} calls sent, {spent['cache_hits']} answered from the cache, "
                      f"{spent['prompt_tokens']:,} / {spent['completion_tokens']:,} tokens, {cost}; answers as {spent['response_format']}")

    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(scores.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        payload = {
            "scores": scores.model_dump(),
            "ms_per_utterance": 1000 * counts.seconds / max(1, counts.utterances),
            "threshold": THRESHOLD,
            "refine": dict(refined) if refined is not None else None,
            "meetings": [r.model_dump() for r in results],
        }
        (out / "results.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (out / "report.md").write_text(_markdown(results, scores, counts), encoding="utf-8")
        console.print(f"wrote {out / 'results.json'} and {out / 'report.md'}")


if __name__ == "__main__":
    run_cli(app)
