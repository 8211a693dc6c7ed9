"""`python -m benchmark.scoring.readers`: a careful-reader check of the floor decision.

`sample` draws moments from a benchmark's cases (28 where the principal really spoke next: 8 named, 10 asked,
10 chime-ins; 12 where they did not: 6 swapped principals, 6 engaged negatives, by default) and deals them
to readers, at most one moment per meeting per reader. Each reader's packet holds, per moment, only what
the engine sees: the last turns and the principal's brief, never the answer. `score` reads the readers'
verdicts and, given a replay's `cases.jsonl`, puts the engine's decisions on the same moments beside them.

Packets quote the meetings, so they are written outside the repository; only verdicts (case ids and
yes/no) are worth keeping.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict

from benchmark.scoring.data import BenchMeeting, Case, load
from benchmark.scoring.variants import derive
from benchmark.typer_call import call

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)

TURNS = 30
"""Turns a reader sees before the moment: what the engine reads of the meeting."""
QUOTA = {"explicit_cue": 8, "implicit_cue": 10, "chime_in": 10, "swapped": 6, "engaged": 6}


class Moment(BaseModel):
    model_config = ConfigDict(frozen=True)

    case_id: str
    meeting_id: str
    kind: str
    """explicit_cue | implicit_cue | chime_in (the principal spoke next) or swapped | engaged (they did not)."""


def kind_of(case: Case) -> str:
    if case.variant == "matched":
        return str(case.scenario)
    return "engaged" if str(case.scenario) == "none" else "swapped"


def moments(meetings: list[BenchMeeting], seed: int) -> list[Moment]:
    """The sampled moments, spread over the meetings as evenly as the quotas allow."""
    rng = random.Random(seed)
    pools: dict[str, list[Moment]] = defaultdict(list)
    for m in meetings:
        for case in [*m.cases, *derive(m, seed)]:
            if case.variant == "noisy_name":
                continue
            pools[kind_of(case)].append(Moment(case_id=case.id, meeting_id=m.meeting_id, kind=kind_of(case)))
    chosen: list[Moment] = []
    for kind, n in QUOTA.items():
        by_meeting: dict[str, list[Moment]] = defaultdict(list)
        for moment in pools[kind]:
            by_meeting[moment.meeting_id].append(moment)
        for group in by_meeting.values():
            rng.shuffle(group)
        order = sorted(by_meeting)
        rng.shuffle(order)
        picked: list[Moment] = []
        while len(picked) < n and any(by_meeting[k] for k in order):
            for k in order:
                if by_meeting[k] and len(picked) < n:
                    picked.append(by_meeting[k].pop())
        chosen += picked
    return chosen


def deal(chosen: list[Moment], readers: int, seed: int) -> list[list[Moment]]:
    """Each reader a share of the moments, never two of one meeting (a reader who saw a meeting once reads
    the next moment of it with hindsight)."""
    rng = random.Random(seed + 1)
    order = list(chosen)
    rng.shuffle(order)
    order.sort(key=lambda m: m.meeting_id)
    hands: list[list[Moment]] = [[] for _ in range(readers)]
    for moment in order:
        fits = [h for h in hands if all(m.meeting_id != moment.meeting_id for m in h)]
        if not fits:
            raise typer.BadParameter(f"{readers} readers cannot each see one moment per meeting; ask for more")
        min(fits, key=len).append(moment)
    return hands


def packet(meeting: BenchMeeting, case: Case, number: int) -> str:
    """One moment as a reader sees it: the principal's brief and the last turns, in plain text."""
    profile = meeting.profile(case.principal)
    turns = meeting.snapshot(case)[-TURNS:]
    lines = [f"## Moment {number}", "", f"You attend for **{profile.name}** (speaker label {case.principal}).", ""]
    if profile.intents:
        lines += ["What they want from this meeting:", *[f"- {i}" for i in profile.intents], ""]
    lines.append("What they know (private items must never be said):")
    for item in profile.background:
        private = "" if item.shareable else " [PRIVATE]"
        lines.append(f"- ({item.context}) {item.information}{private}")
    lines += ["", "The meeting so far (last turns):", ""]
    lines += [f"{u.id}. {meeting.display_name(u.speaker)}: {u.text}" for u in turns]
    lines += ["", f"Should {profile.name} speak now, right after turn {case.last_utterance}? (yes / no)", ""]
    return "\n".join(lines)


@app.command()
def sample(
    data: Annotated[Path, typer.Option(help="Meeting file or folder (delegate-bench/1).")],
    out: Annotated[Path, typer.Option(help="Folder for the packets (outside the repository).")],
    readers: int = 5,
    seed: int = 0,
) -> None:
    """Draw the moments and write one packet per reader, and the key (kept from the readers)."""
    meetings = {m.meeting_id: m for m in load(data)}
    cases = {c.id: (m, c) for m in meetings.values() for c in [*m.cases, *derive(m, seed)]}
    hands = deal(moments(list(meetings.values()), seed), readers, seed)
    out.mkdir(parents=True, exist_ok=True)
    for r, hand in enumerate(hands, 1):
        parts = [packet(*cases[moment.case_id], i) for i, moment in enumerate(hand, 1)]
        (out / f"reader_{r}.md").write_text("\n\n".join(parts), encoding="utf-8")
        ids = {str(i): moment.case_id for i, moment in enumerate(hand, 1)}
        (out / f"reader_{r}.ids.json").write_text(json.dumps(ids, indent=1), encoding="utf-8")
    key = [m.model_dump() for hand in hands for m in hand]
    (out / "key.json").write_text(json.dumps(key, indent=1), encoding="utf-8")
    typer.echo(f"{sum(map(len, hands))} moments for {readers} readers in {out}")


def _rates(spoke: dict[str, bool], key: list[Moment]) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    positive = [m for m in key if m.kind in ("explicit_cue", "implicit_cue", "chime_in")]
    negative = [m for m in key if m not in positive]
    out["moments"] = len(key)
    out["response"] = round(100 * sum(spoke[m.case_id] for m in positive) / max(len(positive), 1), 1)
    out["silence"] = round(100 * sum(not spoke[m.case_id] for m in negative) / max(len(negative), 1), 1)
    for kind in QUOTA:
        group = [m for m in key if m.kind == kind]
        if group:
            said = sum(spoke[m.case_id] for m in group)
            out[kind] = f"{said if kind not in ('swapped', 'engaged') else len(group) - said} of {len(group)}"
    return out


@app.command()
def score(
    key: Annotated[Path, typer.Option(help="key.json written by `sample`.")],
    verdicts: Annotated[Path, typer.Option(help="JSON object: case id -> true (speak) / false (stay silent).")],
    cases: Annotated[Path | None, typer.Option(help="A replay's cases.jsonl: the engine on the same moments.")] = None,
) -> None:
    """The readers' figures, and the engine's on the same moments, with the moments where they differ."""
    moments_ = [Moment.model_validate(m) for m in json.loads(key.read_text())]
    readers = {k: bool(v) for k, v in json.loads(verdicts.read_text()).items()}
    missing = [m.case_id for m in moments_ if m.case_id not in readers]
    if missing:
        raise typer.BadParameter(f"no verdict for {len(missing)} moments, e.g. {missing[0]}")
    report: dict[str, object] = {"readers": _rates(readers, moments_)}
    if cases is not None:
        engine = {}
        for line in cases.read_text().splitlines():
            row = json.loads(line)
            engine[row["id"]] = bool(row["spoke"])
        report["engine"] = _rates(engine, moments_)
        report["differ"] = [
            {"case_id": m.case_id, "kind": m.kind, "readers": readers[m.case_id], "engine": engine[m.case_id]}
            for m in moments_ if readers[m.case_id] != engine[m.case_id]
        ]
    typer.echo(json.dumps(report, indent=1))


def main(argv: list[str] | None = None) -> None:
    call(app, argv)


if __name__ == "__main__":
    main()
