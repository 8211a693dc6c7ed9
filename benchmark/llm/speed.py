"""`python -m benchmark.llm.speed`: what running calls side by side and caching them buys a benchmark of a model.

A scripted OpenAI-compatible server on 127.0.0.1 answers every call after `--delay` seconds (a model's time).
The same replay (`--engine llm --judge llm`, snapshot cases of the shipped fixtures) runs with `--concurrency 1`
and with `--concurrency N`, each without a cache, then again with a cache twice (the second run asks nothing).
It prints cases per second, the ratio, the calls each run made, and whether every figure is the same to the last
digit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from delegate.extras import run_cli

console = Console()
_TIMING = ("llm_run", "latency_ms", "cases_per_second", "llm")


def _script(delay_s: float):  # type: ignore[no-untyped-def]
    from testkit.fake_openai import Reply

    def answer(prompt: str) -> Reply:
        if '{"verdicts"' in prompt:
            content = json.dumps({"verdicts": [{"index": 0, "covered": True}]})
        elif '"points"' in prompt:
            content = json.dumps({"points": [{"point": "the reply", "attribution": "context", "expected_index": None}]})
        else:
            content = json.dumps({"thoughts": "scripted", "scenario": "implicit_cue", "speak": "I will check the release status."})
        return Reply(content=content, delay_s=delay_s)

    return answer


def _run(base_url: str, out: Path, limit: int, *extra: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "benchmark.replay", "--engine", "llm", "--judge", "llm", "--mode", "snapshot",
           "--limit", str(limit), "--base-url", base_url, "--model", "scripted-model", "--timeout", "60", "--out", str(out), *extra]
    started = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=os.environ | {"OPENAI_API_KEY": "unused"})
    return time.perf_counter() - started, json.loads((out / "report.json").read_text(encoding="utf-8"))


def main(
    delay: float = typer.Option(0.2, min=0.0, help="Seconds the scripted model takes per call."),
    concurrency: int = typer.Option(8, min=2, help="Calls side by side in the second run."),
    limit: int = typer.Option(40, min=1, help="Snapshot cases replayed."),
    json_out: Path = typer.Option(None, "--json", help="Also write the figures here."),
) -> None:
    """Replay the fixtures through a model that takes `--delay` a call: one call at a time, N at a time, cached."""
    from testkit.fake_openai import ScriptedOpenAI

    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAI(_script(delay)) as server:
        work = Path(tmp)
        t1, one = _run(server.base_url, work / "one", limit, "--concurrency", "1", "--no-cache")
        calls_one = len(server.prompts)
        server.reset()
        tn, many = _run(server.base_url, work / "many", limit, "--concurrency", str(concurrency), "--no-cache")
        calls_many = len(server.prompts)
        server.reset()
        _run(server.base_url, work / "first", limit, "--concurrency", str(concurrency), "--cache", str(work / "cache"))
        server.reset()
        tc, cached = _run(server.base_url, work / "again", limit, "--concurrency", str(concurrency), "--cache", str(work / "cache"))
        calls_cached = len(server.prompts)
        cases = len((work / "one" / "cases.jsonl").read_text(encoding="utf-8").splitlines())
    same = {k: v for k, v in one.items() if k not in _TIMING} == {k: v for k, v in many.items() if k not in _TIMING}
    # The replay's own clock (its cases per second): the process's start-up and the judge's set-up are not the model's.
    r1, rn = one["cases_per_second"], many["cases_per_second"]
    figures = {
        "delay_s": delay,
        "cases": cases,
        "concurrency_1": {"process_seconds": round(t1, 2), "cases_per_s": r1, "calls": calls_one},
        f"concurrency_{concurrency}": {"process_seconds": round(tn, 2), "cases_per_s": rn, "calls": calls_many},
        "speed_up": round(rn / r1, 2) if r1 else None,
        "same_figures": same,
        "cached_rerun": {"seconds": round(tc, 2), "calls": calls_cached, "cache_hits": cached["llm_run"]["cache_hits"]},
    }
    table = Table(title=f"LLM replay against a {delay:g} s model ({cases} cases, engine llm, judge llm)")
    table.add_column("run")
    table.add_column("cases/s (replay)", justify="right")
    table.add_column("process seconds", justify="right")
    table.add_column("calls", justify="right")
    table.add_row("concurrency 1", f"{r1:.1f}", f"{t1:.1f}", str(calls_one))
    table.add_row(f"concurrency {concurrency}", f"{rn:.1f}", f"{tn:.1f}", str(calls_many))
    table.add_row(f"cached re-run (concurrency {concurrency})", f"{cached['cases_per_second']:.1f}", f"{tc:.1f}", str(calls_cached))
    console.print(table)
    console.print(f"speed-up {figures['speed_up']}x; figures the same to the last digit: {'yes' if same else 'NO'}")
    if json_out is not None:
        json_out.write_text(json.dumps(figures, indent=2), encoding="utf-8")


def cli() -> None:
    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    app.command()(main)
    app()


if __name__ == "__main__":
    run_cli(cli)
