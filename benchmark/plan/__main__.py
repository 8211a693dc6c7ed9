"""`python -m benchmark.plan`: the reply plan on the labelled turns addressed to a principal (turns.jsonl here).

For each turn: the plan's kind against the label, and the embedded engine's reply to it (holding lines
counted where a person never gives one: thanks, presence checks, requests, invitations). ELITR dev and
workplace-dev turns are read from ../shared when present (the labels hold their ids only); the example
workplace's turns are in the labels file.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from benchmark.scoring.data import BenchMeeting, load_meeting
from benchmark.scoring.runner import state_for
from benchmark.workplace.run import brief_for, briefed_meeting
from benchmark.workplace.scenario import load_scenario
from delegate.decide.local import LocalEngine
from delegate.decide.reply.compose import HOLDING_LINE
from delegate.decide.reply.plan import TurnKind, plan_for
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance
from delegate.sources.brief import Meeting, build_brief
from delegate.sources.example import EXAMPLE_EVENT, EXAMPLE_PRINCIPAL, example_folder
from delegate.sources.folder import load_sources

LABELS = Path(__file__).parent / "turns.jsonl"
SHARED = Path("../shared/benchmark")
NEVER_HELD = (TurnKind.thanks, TurnKind.presence, TurnKind.request, TurnKind.invitation)
"""Kinds of turn a person never answers with "I don't have that at hand"."""

cli = typer.Typer(rich_markup_mode=None, add_completion=False)


@dataclass(frozen=True)
class Turn:
    id: str
    source: str
    kind: TurnKind
    reply: str
    meeting: MeetingState
    principal: Profile


def _example_turns(rows: list[dict[str, Any]]) -> Iterator[Turn]:
    sources = load_sources(example_folder())
    event = sources.event(EXAMPLE_EVENT)
    assert event is not None
    profile = build_brief(sources, Meeting.of_event(event), EXAMPLE_PRINCIPAL).profile
    attendees = [profile.name, "Tomas Reyes", "Lena Park", "Dev Iyer"]
    for row in rows:
        state = MeetingState(row["id"], attendees=attendees)
        state.extend([Utterance(id=n, speaker=t["speaker"], text=t["text"]) for n, t in enumerate(row["turns"])])
        yield Turn(row["id"], "example", TurnKind(row["kind"]), row["reply"], state, profile)


def _bench_turns(rows: list[dict[str, Any]], meetings: dict[str, BenchMeeting], source: str) -> Iterator[Turn]:
    for row in rows:
        meeting = meetings.get(row["id"].split("/")[0])
        case = next((c for c in meeting.cases if c.id == row["id"]), None) if meeting else None
        if meeting is None or case is None:
            continue
        yield Turn(row["id"], source, TurnKind(row["kind"]), row["reply"], state_for(meeting, case), meeting.profile(case.principal))


def turns(shared: Path) -> tuple[list[Turn], int]:
    """The labelled turns whose text is here, and how many were left out (their data absent)."""
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_source[row["source"]].append(row)
    out = list(_example_turns(by_source["example"]))
    elitr = shared / "elitr-dev"
    if elitr.is_dir():
        meetings = {m.meeting_id: m for m in (load_meeting(p) for p in sorted(elitr.glob("*.json")))}
        out += _bench_turns(by_source["elitr-dev"], meetings, "elitr-dev")
    workplace = shared / "workplace-dev"
    if (workplace / "scenario.json").is_file():
        scenario = load_scenario(workplace)
        brief, _, _ = brief_for(scenario)
        meeting = briefed_meeting(scenario, brief.profile)
        out += _bench_turns(by_source["workplace-dev"], {meeting.meeting_id: meeting}, "workplace-dev")
    return out, len(rows) - len(out)


async def _replies(found: list[Turn]) -> list[str]:
    engine = LocalEngine()
    return [(await engine.decide(t.meeting, t.principal)).speak for t in found]


@cli.command()
def main(
    shared: Path = typer.Option(SHARED, "--shared", help="The folder holding elitr-dev/ and workplace-dev/ (skipped when absent)."),
    out: Path = typer.Option(None, "--out", help="Write each turn's plan and reply here as JSON lines."),
) -> None:
    found, missing = turns(shared)
    replies = asyncio.run(_replies(found))
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    held: Counter[str] = Counter()
    lines = []
    for turn, reply in zip(found, replies, strict=True):
        kind = plan_for(turn.meeting, turn.principal).kind
        total[turn.kind] += 1
        right[turn.kind] += kind is turn.kind
        held[turn.kind] += reply == HOLDING_LINE
        lines.append({"id": turn.id, "source": turn.source, "label": turn.kind.value, "plan": kind.value, "reply_label": turn.reply, "reply": reply})
    typer.echo(f"{len(found)} labelled turns ({', '.join(f'{s} {n}' for s, n in Counter(t.source for t in found).items())}); {missing} without their data here")
    for kind in TurnKind:
        if total[kind]:
            typer.echo(f"  {kind.value:<11} plan right {right[kind]}/{total[kind]} ({100 * right[kind] / total[kind]:.1f}%), holding line {held[kind]}")
    n = sum(total.values())
    typer.echo(f"plan right: {sum(right.values())}/{n} ({100 * sum(right.values()) / max(n, 1):.1f}%)")
    typer.echo(f"holding line on thanks/presence/request/invitation turns: {sum(held[k] for k in NEVER_HELD)}")
    if out is not None:
        out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


if __name__ == "__main__":
    cli()
