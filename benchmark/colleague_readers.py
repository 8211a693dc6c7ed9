"""`python -m benchmark.colleague_readers`: replies for blind readers to judge "would a colleague say this in
the meeting?".

Draws spoken replies from one or more benchmark runs (a `cases.jsonl` and the meetings it ran on, given as
pairs in the same order), seeded, leaving out the moments of earlier packets (`--exclude`, so a second round
of readers judges replies nobody has seen), and writes each as its moment: the last turns before it (names
unmasked) and the reply, nothing else (no case kind, no expected points, no engine). Packets quote the
meetings, so they are written outside the repository; only readers' verdicts are worth keeping.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Annotated, Any

import typer

from benchmark.scoring.data import BenchDataError, Case, load
from delegate.decide.reply.spoken import unmask

app = typer.Typer(rich_markup_mode=None, add_completion=False)

QUESTION = "Would a colleague say this in the meeting, at this moment? (yes / no)"


def moments(cases_file: Path, data: Path, turns: int) -> list[dict[str, Any]]:
    """Every matched case of `cases_file` that spoke, as its moment: the last `turns` turns and the reply."""
    meetings = {m.meeting_id: m for m in load(data)}
    by_id: dict[str, tuple[Any, Case]] = {c.id: (m, c) for m in meetings.values() for c in m.cases if c.variant == "matched"}
    out = []
    for line in cases_file.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("variant", "matched") != "matched" or not row.get("spoke") or row["id"] not in by_id:
            continue
        meeting, case = by_id[row["id"]]
        said = meeting.utterances[max(0, case.last_utterance + 1 - turns) : case.last_utterance + 1]
        principal = meeting.names.get(case.principal, case.principal)
        out.append({
            "id": row["id"],
            "speaking_for": principal,
            "context": [{"speaker": meeting.names.get(u.speaker, u.speaker), "text": unmask(u.text, meeting.names)} for u in said],
            "reply": row["response"],
        })
    return out


@app.command()
def main(
    cases: Annotated[list[Path], typer.Option("--cases", exists=True, dir_okay=False, help="A run's cases.jsonl (repeat, paired with --data).")],
    data: Annotated[list[Path], typer.Option("--data", exists=True, help="The meetings that run used: a delegate-bench/1 file or folder.")],
    out: Annotated[Path, typer.Option("--out", dir_okay=False, help="The packet (JSON lines), outside the repository.")],
    n: Annotated[int, typer.Option(help="Replies drawn, spread over the runs as evenly as they allow.")] = 40,
    turns: Annotated[int, typer.Option(help="Turns of context before each reply.")] = 3,
    seed: int = 7,
    exclude: Annotated[
        list[Path] | None,
        typer.Option("--exclude", exists=True, dir_okay=False, help="An earlier packet (JSON lines): its moments are not drawn again (repeat)."),
    ] = None,
) -> None:
    if len(cases) != len(data):
        typer.echo("benchmark.colleague_readers: give one --data per --cases, in the same order", err=True)
        raise typer.Exit(2)
    try:
        pools = [moments(c, d, turns) for c, d in zip(cases, data, strict=True)]
    except BenchDataError as e:
        typer.echo(f"benchmark.colleague_readers: {e}", err=True)
        raise typer.Exit(2) from None
    try:
        seen = {json.loads(line)["id"] for path in exclude or [] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    except (json.JSONDecodeError, KeyError, TypeError):
        typer.echo("benchmark.colleague_readers: --exclude takes a packet this command wrote (JSON lines with an id)", err=True)
        raise typer.Exit(2) from None
    pools = [[m for m in pool if m["id"] not in seen] for pool in pools]
    rng = random.Random(seed)
    for pool in pools:
        rng.shuffle(pool)
    drawn: list[dict[str, Any]] = []
    # Round robin over the runs, so a small run is drawn whole and a large one fills the rest.
    while len(drawn) < n and any(pools):
        for pool in pools:
            if pool and len(drawn) < n:
                drawn.append(pool.pop())
    rng.shuffle(drawn)
    with out.open("w", encoding="utf-8") as f:
        for k, m in enumerate(drawn):
            f.write(json.dumps({"n": k + 1, "question": QUESTION, **m}, ensure_ascii=False) + "\n")
    typer.echo(f"wrote {len(drawn)} moments to {out}")


if __name__ == "__main__":
    app()
