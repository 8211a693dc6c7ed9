"""`python -m benchmark.latency`: decision latency per utterance as a meeting grows (is it flat?).

Feeds a long meeting (the data's meetings played back to back, relabelled as one) utterance by
utterance and times the engine's decision after each; prints p50/p95/p99 over the first N utterances
and over the last 100 before the N-th, for several N.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from benchmark.data import FIXTURES, BenchMeeting, load
from delegate.engines import build_engine
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance

console = Console()


def long_meeting(meetings: list[BenchMeeting], n: int) -> tuple[list[Utterance], Profile, dict[str, str]]:
    """`n` utterances made of the meetings back to back; the principal is the first meeting's first profile."""
    first = meetings[0]
    label = sorted(first.profiles)[0]
    out: list[Utterance] = []
    while len(out) < n:
        for m in meetings:
            for u in m.utterances:
                if len(out) == n:
                    break
                out.append(Utterance(id=len(out), speaker=u.speaker, text=u.text))
    return out, first.profile(label), dict(first.names)


async def _measure(utterances: list[Utterance], profile: Profile, names: dict[str, str], engine_name: str) -> list[float]:
    engine = build_engine(engine_name)
    state = MeetingState("latency", names=names)
    out = []
    for u in utterances:
        state.add(u)
        t0 = time.perf_counter()
        await engine.decide(state, profile)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(
    data: Path = typer.Option(FIXTURES, help="Meetings to build the long meeting from."),
    engine: str = typer.Option("local"),
    sizes: str = typer.Option("100,1000", help="Meeting lengths to report, comma-separated."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures as JSON here."),
) -> None:
    """Print decision latency percentiles at each meeting length."""
    ns = sorted(int(x) for x in sizes.split(","))
    utterances, profile, names = long_meeting(load(data), ns[-1])
    # One warm-up pass loads the embedding model, so the timings are of decisions, not of start-up.
    asyncio.run(_measure(utterances[:20], profile, names, engine))
    lat = asyncio.run(_measure(utterances, profile, names, engine))
    table = Table(title=f"decision latency, engine {engine}, principal {profile.name}")
    for col in ("utterances", "window", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(col, justify="right")
    figures = {}
    for n in ns:
        window = np.asarray(lat[max(0, n - 100) : n])
        row = {f"p{q}": float(np.percentile(window, q)) for q in (50, 95, 99)} | {"max": float(window.max())}
        figures[str(n)] = row
        table.add_row(str(n), f"{max(0, n - 100)}..{n - 1}", *(f"{row[k]:.3f}" for k in ("p50", "p95", "p99", "max")))
    console.print(table)
    if json_out:
        json_out.write_text(json.dumps({"engine": engine, "latency_ms": figures}, indent=2))


if __name__ == "__main__":
    typer.run(main)
