"""`python -m benchmark.latency`: decision latency per utterance as a meeting grows (is it flat?).

For each meeting length N, the same block of 100 utterances is timed after N - 100 utterances of
history, so only the length changes, not the talk being decided on. The history is embedded as it
would have been when it was said; the block's own texts are dropped from every cache first, so each
timed utterance pays for its own embedding as it would live.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from benchmark.scoring.data import FIXTURES, BenchMeeting, load
from delegate.decide import build_engine, floor_reader
from delegate.decide.base import Engine
from delegate.extras import run_cli
from delegate.language import encoder, similarity, text
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
    encoder.shipped().forget([u.text for u in timed])
    floor_reader.pieces.cache_clear()
    text.tokens.cache_clear()
    text.content_words.cache_clear()


async def time_block(
    engine: Engine, before: list[Utterance], timed: list[Utterance], profile: Profile, names: dict[str, str]
) -> tuple[list[float], list[float], int]:
    """Wall-clock and CPU milliseconds of each timed decision, and how many the reader (the sentence encoder) read."""
    state = MeetingState("latency", names=names)
    state.extend(before)
    for u in before:
        similarity.embedding(u.text)
    _forget(timed)
    wall, cpu, read = [], [], 0
    for u in timed:
        t0, c0 = time.perf_counter(), time.process_time()
        state.add(u)
        decision = await engine.decide(state, profile)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        read += "brief" in decision.reason
    return wall, cpu, read


def rss_mb() -> float:
    """The process's resident memory now (Linux /proc; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


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
    rss_start = rss_mb()
    eng = build_engine(engine)
    asyncio.run(time_block(eng, [], block(last, 0)[:20], profile, names))  # warm-up: model load, first calls
    rss_loaded = rss_mb()
    table = Table(title=f"decision latency over the same {BLOCK} utterances, engine {engine}, principal {profile.name}")
    for col in ("meeting length", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms", "CPU ms / decision", "read by the encoder"):
        table.add_column(col, justify="right")
    figures = {}
    for n in ns:
        wall, cpu, read = asyncio.run(time_block(eng, history(meetings, n - BLOCK), block(last, n - BLOCK), profile, names))
        lat = np.asarray(wall)
        row = {"mean": round(float(lat.mean()), 4)} | {f"p{q}": round(float(np.percentile(lat, q)), 4) for q in (50, 95, 99)}
        row |= {"max": round(float(lat.max()), 4), "cpu_mean": round(float(np.mean(cpu)), 4), "read": read}
        figures[str(n)] = row
        table.add_row(str(n), *(f"{row[k]:.3f}" for k in ("mean", "p50", "p95", "p99", "max", "cpu_mean")), f"{read}/{len(wall)}")
    console.print(table)
    memory = {"rss_start_mb": round(rss_start, 1), "rss_loaded_mb": round(rss_loaded, 1), "rss_end_mb": round(rss_mb(), 1)}
    console.print(f"process memory: {memory['rss_start_mb']} MB before the engine, {memory['rss_loaded_mb']} MB with it loaded, "
                  f"{memory['rss_end_mb']} MB at the end (growth {memory['rss_end_mb'] - memory['rss_start_mb']:.1f} MB)")
    if json_out:
        json_out.write_text(json.dumps({"engine": engine, "block": BLOCK, "latency_ms": figures, "memory": memory}, indent=2))


if __name__ == "__main__":
    run_cli(typer.run, main)
