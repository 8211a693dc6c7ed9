"""`python -m benchmark.latency`: decision latency per utterance as a meeting grows (is it flat?).

For each meeting length N, the same block of 100 utterances is timed after N - 100 utterances of
history, so only the length changes, not the talk being decided on. The history is embedded as it
would have been when it was said; the block's own texts are dropped from every cache first, so each
timed utterance pays for its own embedding as it would live.
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

from benchmark.scoring.data import FIXTURES, BenchMeeting, load
from delegate.decide import build_engine
from delegate.decide.base import Engine
from delegate.extras import run_cli
from delegate.language import similarity, text
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance

console = Console()
BLOCK = 100


def history(meetings: list[BenchMeeting], n: int) -> list[Utterance]:
    """`n` utterances of the meetings played back to back (the last meeting is kept for the timed block)."""
    pool = [u for m in meetings[:-1] or meetings for u in m.utterances]
    return [Utterance(id=i, speaker=pool[i % len(pool)].speaker, text=pool[i % len(pool)].text) for i in range(n)]


def block(meeting: BenchMeeting, start_id: int) -> list[Utterance]:
    return [Utterance(id=start_id + k, speaker=u.speaker, text=u.text) for k, u in enumerate(meeting.utterances[:BLOCK])]


def _forget(timed: list[Utterance]) -> None:
    similarity.forget([u.text for u in timed])
    text.tokens.cache_clear()
    text.content_words.cache_clear()


async def time_block(engine: Engine, before: list[Utterance], timed: list[Utterance], profile: Profile, names: dict[str, str]) -> list[float]:
    state = MeetingState("latency", names=names)
    state.extend(before)
    for u in before:
        similarity.embedding(u.text)
    _forget(timed)
    out = []
    for u in timed:
        t0 = time.perf_counter()
        state.add(u)
        await engine.decide(state, profile)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main(
    data: Path = typer.Option(FIXTURES, help="Meetings to build the long meeting from."),
    engine: str = typer.Option("local"),
    sizes: str = typer.Option("100,1000", help="Meeting lengths to report, comma-separated (each at least 100)."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures as JSON here."),
) -> None:
    """Print decision latency percentiles (utterance added + decision) at each meeting length."""
    meetings = load(data)
    ns = sorted(max(BLOCK, int(x)) for x in sizes.split(","))
    last = meetings[-1]
    label = sorted(last.profiles)[0]
    profile, names = last.profile(label), dict(last.names)
    eng = build_engine(engine)
    asyncio.run(time_block(eng, [], block(last, 0)[:20], profile, names))  # warm-up: model load, first calls
    table = Table(title=f"decision latency over the same {BLOCK} utterances, engine {engine}, principal {profile.name}")
    for col in ("meeting length", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(col, justify="right")
    figures = {}
    for n in ns:
        lat = np.asarray(asyncio.run(time_block(eng, history(meetings, n - BLOCK), block(last, n - BLOCK), profile, names)))
        row = {f"p{q}": round(float(np.percentile(lat, q)), 4) for q in (50, 95, 99)} | {"max": round(float(lat.max()), 4)}
        figures[str(n)] = row
        table.add_row(str(n), *(f"{row[k]:.3f}" for k in ("p50", "p95", "p99", "max")))
    console.print(table)
    if json_out:
        json_out.write_text(json.dumps({"engine": engine, "block": BLOCK, "latency_ms": figures}, indent=2))


if __name__ == "__main__":
    run_cli(typer.run, main)
