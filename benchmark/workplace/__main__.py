"""`python -m benchmark.workplace --scenario DIR --out DIR`: report.json and cases.jsonl for one workplace scenario."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer

from benchmark.scoring.data import BenchDataError
from benchmark.workplace.run import run
from benchmark.workplace.scenario import load_scenario
from delegate.decide.reply.selector import AnswerSelector
from delegate.sources.items import SourceError

cli = typer.Typer(rich_markup_mode=None, add_completion=False)


@cli.command()
def main(
    scenario: Path = typer.Option(..., "--scenario", help="A workplace-scenario/1 folder (scenario.json, sources/, meeting.json)."),
    out: Path = typer.Option(..., "--out", file_okay=False, help="Folder for report.json and cases.jsonl."),
    lookup: bool = typer.Option(True, "--lookup/--no-lookup", help="Let the delegate search the sources live for what the brief does not cover."),
    selector: Path = typer.Option(None, "--selector", dir_okay=False, help="Answer selector weights to use instead of the shipped ones "
                                  "(held out: `python -m training answer-selector --report DIR` writes DIR/elitr_only.json)."),
) -> None:
    try:
        loaded = load_scenario(scenario)
        picked = AnswerSelector.read(selector) if selector is not None else None
        report, lines = asyncio.run(run(loaded, lookup, picked))
    except (BenchDataError, SourceError, OSError, ValueError) as e:
        typer.echo(f"benchmark.workplace: {e}", err=True)
        raise typer.Exit(2) from None
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    with (out / "cases.jsonl").open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    typer.echo(json.dumps(report, indent=1))


if __name__ == "__main__":
    cli()
