"""`python -m benchmark.scoring.speaking`: choose the speaking levels' margins on leave-one-meeting-out stream replays.

Every ELITR dev meeting is replayed whole for each principal at `forward` (the floor model's own thresholds) by
the fold that did not train on it; for every decision the floor model's margin, whether the turn asks something
(a question, right after the principal spoke) and whether the delegate spoke are kept. A stricter level speaks
on a subset of those moments (the same words: compose does not depend on the margin), so each level's stream
precision and recall follow for every margin without replaying again. `balanced` takes the margins with the
highest recall at stream precision >= `--balanced-precision` (the highest F0.5, precision weighing four times recall,
if none reaches it), `addressed` the same at `--addressed-precision` among questions right after the principal spoke
(the most precise, if none reaches it). Chosen on all meetings
(what ships) and, nested, for each meeting on the other eight (what a held-out meeting sees).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import typer
from rich.console import Console

from benchmark.scoring.data import BenchDataError, BenchMeeting, load
from benchmark.scoring.runner import floor_turns, meeting_duration_s
from delegate.decide.base import hear
from delegate.decide.cues import detect, is_question
from delegate.decide.local import LocalEngine
from delegate.decide.speaking import LEVELS, NEVER, Level, admits
from delegate.decide.turn_taking import TurnTakingModel
from delegate.extras import run_cli
from delegate.meeting import MeetingState
from delegate.models import Scenario, Speaking

console = Console()
ASKED_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0)
CHIME_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, NEVER)


@dataclass(frozen=True)
class Moment:
    meeting_id: str
    principal: str
    utterance: int
    spoke: bool
    """The delegate spoke here at `forward`."""
    named: bool
    """A name or a rule decided (no margin): every level speaks as `forward` does."""
    margin: float
    question: bool
    partner: bool
    taken: bool
    """The principal really took the next substantive turn."""


async def _walk(meeting: BenchMeeting, principal: str, model: TurnTakingModel) -> list[Moment]:
    local = LocalEngine(model_for=lambda _: model, read=True, text=True)
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    profile = meeting.profile(principal).model_copy(update={"speaking": Speaking.forward})
    truth = set(floor_turns(meeting, principal))
    out = []
    for u in meeting.utterances:
        decision = await hear(local, state, profile, u)
        cue = detect(state, profile, model, level=LEVELS[Speaking.forward])
        partner = state.recent_speakers(2)[1:2] == [profile.speaker_label]
        out.append(Moment(
            meeting.meeting_id, principal, u.id, decision.spoke, cue.margin is None and cue.scenario is not Scenario.none,
            cue.margin if cue.margin is not None else 0.0, is_question(u.text), partner, u.id in truth,
        ))
    return out


def speaks(moments: Iterable[Moment], level: Level) -> list[Moment]:
    return [m for m in moments if m.spoke and (m.named or admits(level, m.margin, m.question, m.partner))]


def figures(moments: list[Moment], level: Level, hours: float) -> dict:
    said = speaks(moments, level)
    hits = sum(m.taken for m in said)
    truth = sum(m.taken for m in moments)
    return {
        "precision": round(hits / len(said), 4) if said else 0.0,
        "recall": round(hits / truth, 4) if truth else 0.0,
        "speaks": len(said),
        "speaks_per_hour": round(len(said) / hours, 1) if hours else 0.0,
    }


def f_half(precision: float, recall: float) -> float:
    """F-beta with beta 1/2: precision weighs four times recall."""
    return 1.25 * precision * recall / (0.25 * precision + recall) if precision + recall else 0.0


def choose(moments: list[Moment], direct_only: bool, precision: float, hours: float) -> Level:
    """The margins with the highest recall at `precision` or above; where none reaches it, the highest F0.5
    (`balanced`), or the highest precision (`addressed`: precision above all)."""
    chimes = (NEVER,) if direct_only else CHIME_GRID
    scored = []
    for asked, chime in itertools.product(ASKED_GRID, chimes):
        level = Level(asked, chime, direct_only)
        f = figures(moments, level, hours)
        met = f["precision"] >= precision
        fallback = f["precision"] if direct_only else f_half(f["precision"], f["recall"])
        scored.append((met, f["recall"] if met else fallback, -asked, level))
    return max(scored, key=lambda s: s[:3])[3]


def main(
    data: Path = typer.Option(..., help="ELITR dev meetings (delegate-bench/1)."),
    weights_folds: Path = typer.Option(..., "--weights-folds", help="Fold weights, one per meeting, named after it."),
    out: Path = typer.Option(Path("reports/speaking"), help="Folder for levels.json and moments.jsonl."),
    balanced_precision: float = typer.Option(0.70, help="Stream precision `balanced` is chosen for."),
    addressed_precision: float = typer.Option(0.90, help="Stream precision `addressed` is chosen for."),
    reuse: bool = typer.Option(True, help="Reuse out/moments.jsonl when it is there (the replay is the slow part)."),
) -> None:
    """Choose each speaking level's margins on held-out stream replays, and report them nested."""
    try:
        meetings = load(data)
        missing = [m.meeting_id for m in meetings if not (weights_folds / f"{m.meeting_id}.json").is_file()]
        if missing:
            raise BenchDataError(f"--weights-folds {weights_folds}: no fold weights for {', '.join(missing)}")
    except (BenchDataError, ValueError) as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "moments.jsonl"
    if reuse and cache.is_file():
        moments = [Moment(**json.loads(line)) for line in cache.read_text(encoding="utf-8").splitlines()]
    else:
        moments = []
        for m in meetings:
            model = TurnTakingModel.read(weights_folds / f"{m.meeting_id}.json")
            for p in sorted(m.profiles):
                moments += asyncio.run(_walk(m, p, model))
                console.print(f"{m.meeting_id} {p}: {len(m.utterances)} decisions")
        cache.write_text("".join(json.dumps(asdict(x)) + "\n" for x in moments), encoding="utf-8")
    hours_of = {m.meeting_id: meeting_duration_s(m) * len(m.profiles) / 3600 for m in meetings}
    hours = sum(hours_of.values())
    report: dict = {"levels": {}, "nested": {}}
    targets = {Speaking.balanced: (False, balanced_precision), Speaking.addressed: (True, addressed_precision)}
    for speaking in Speaking:
        direct, precision = targets.get(speaking, (False, 0.0))
        level = LEVELS[speaking] if speaking is Speaking.forward else choose(moments, direct, precision, hours)
        nested = []
        for m in meetings:
            rest = [x for x in moments if x.meeting_id != m.meeting_id]
            fold = level if speaking is Speaking.forward else choose(rest, direct, precision, hours - hours_of[m.meeting_id])
            nested += speaks([x for x in moments if x.meeting_id == m.meeting_id], fold)
        said = {(x.meeting_id, x.principal, x.utterance) for x in nested}
        report["levels"][speaking.value] = {"margins": asdict(level), "in_sample": figures(moments, level, hours)}
        hits = sum(x.taken for x in nested)
        truth = sum(x.taken for x in moments)
        report["nested"][speaking.value] = {
            "precision": round(hits / len(said), 4) if said else 0.0,
            "recall": round(hits / truth, 4) if truth else 0.0,
            "speaks_per_hour": round(len(said) / hours, 1),
        }
    (out / "levels.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    console.print_json(json.dumps(report))


def cli() -> None:
    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    app.command()(main)
    app()


if __name__ == "__main__":
    run_cli(cli)
