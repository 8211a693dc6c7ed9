"""The turn-taking training run: rows, threshold, shipped weights, and the held-out evaluation of the model card."""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import structlog

from delegate.decide.turn_taking import WEIGHTS_FILE, TurnTakingModel
from training.corpora import TrainingMeeting, load_all
from training.turn_dataset import Rows, case_rows, meeting_rows
from training.turn_model import (
    auc,
    best_f1_threshold,
    export,
    export_reader,
    fit,
    fit_reader,
    gate,
    held_out,
    meeting_folds,
    readable,
    reader_x,
    weights,
)

log = structlog.get_logger()
GROUPS = ("ami", "icsi", "committee", "elitr")
"""Corpora for leave-one-corpus-out; our fixtures go with ELITR (both are our benchmark style)."""


READ: tuple[str, ...] = ("elitr", "fixture")
"""Corpora whose every moment the encoder reads in training (the others: their moments carry no reader features).
Reading costs ~10-30 ms a turn on one core: all 100k QMSum turns would be hours on two shared cores."""


def _rows_of(meeting: TrainingMeeting, seed: int) -> Rows:
    from delegate.language.similarity import warm_up

    warm_up()
    return meeting_rows(meeting, seed, read=meeting.corpus in READ)


def _cases_of(folder: Path, corpus: str, seed: int) -> Rows:
    from benchmark.scoring.data import load

    return Rows.concat([case_rows(m, corpus, seed) for m in load(folder)])


def build_rows(meetings: list[TrainingMeeting], benches: list[tuple[Path, str]], seed: int, jobs: int) -> Rows:
    """Every natural moment of every meeting, and the benchmark cases of `benches` (folder, corpus)."""
    with ProcessPoolExecutor(max(jobs, 1)) as pool:
        natural = list(pool.map(_rows_of, meetings, [seed] * len(meetings), chunksize=1))
        cases = list(pool.map(_cases_of, *zip(*benches, strict=True), [seed] * len(benches))) if benches else []
    return Rows.concat(natural + cases)


def reader_for(rows: Rows, loco: np.ndarray, threshold: float, train: np.ndarray, seed: int):  # type: ignore[no-untyped-def]
    """The reader fitted on the `train` rows: its gate (from their held-out cheap probabilities), and the threshold
    that maximises F1 on its own predictions for meetings it did not see."""
    can = readable(rows) & train
    band = gate(loco[can & ~rows.case], threshold)
    inband = can & (loco >= band[0]) & (loco <= band[1])
    held = np.full(len(rows), np.nan)
    for mid in sorted(set(rows.meeting[inband].tolist())):
        test = inband & (rows.meeting == mid)
        fit_on = inband & (rows.meeting != mid)
        booster = fit_reader(rows.take(fit_on), loco[fit_on], seed)
        held[test] = booster.predict(reader_x(rows.take(test), loco[test]))
    w = weights(rows)
    reader_threshold = best_f1_threshold(rows.y[inband], held[inband], w[inband])
    reader = export_reader(fit_reader(rows.take(inband), loco[inband], seed), reader_threshold, band)
    figures = {"gate": list(band), "rows_in_gate": int(inband.sum()), "threshold": reader_threshold,
               "auc_in_gate_cheap": round(auc(rows.y[inband], loco[inband]), 4),
               "auc_in_gate_reader": round(auc(rows.y[inband], held[inband]), 4)}
    return reader, figures


def group_of(rows: Rows) -> np.ndarray:
    return np.where(rows.corpus == "fixture", "elitr", rows.corpus)


def write_model(model: TurnTakingModel, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = model.model_dump()
    for tree in data["trees"]:
        tree["threshold"] = [round(t, 6) for t in tree["threshold"]]
        tree["value"] = [round(v, 6) for v in tree["value"]]
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def counts(rows: Rows) -> dict[str, int]:
    return {c: len(set(rows.meeting[rows.corpus == c].tolist())) for c in sorted(set(rows.corpus.tolist()))}


def run(
    out: Path,
    qmsum: Path | None,
    elitr: Path | None,
    fixtures: Path | None,
    report: Path | None,
    rows_cache: Path | None,
    seed: int,
    jobs: int,
    qmsum_every: int = 1,
) -> None:
    t0 = time.perf_counter()
    if rows_cache is not None and rows_cache.exists():
        rows = Rows.read(str(rows_cache))
    else:
        meetings = load_all(qmsum, elitr, fixtures)
        qmsum_meetings = [m for m in meetings if m.corpus not in ("elitr", "fixture")]
        keep = set(m.meeting_id for m in qmsum_meetings[::qmsum_every])
        meetings = [m for m in meetings if m.corpus in ("elitr", "fixture") or m.meeting_id in keep]
        benches = [(f, c) for f, c in ((elitr, "elitr"), (fixtures, "fixture")) if f is not None]
        rows = build_rows(meetings, benches, seed, jobs)
        if rows_cache is not None:
            rows_cache.parent.mkdir(parents=True, exist_ok=True)
            rows.save(str(rows_cache))
    log.info("rows", rows=len(rows), positives=int(rows.y.sum()), meetings=counts(rows), seconds=round(time.perf_counter() - t0, 1))

    # The threshold is chosen on predictions for whole corpora the model did not see: it must transfer.
    w = weights(rows)
    group = group_of(rows)
    present = [g for g in GROUPS if (group == g).any()]
    loco = held_out(rows, [group == g for g in present], seed) if len(present) > 1 else held_out(rows, meeting_folds(rows, 4), seed)
    natural = ~rows.case
    threshold = best_f1_threshold(rows.y[natural], loco[natural], w[natural])
    everything = np.ones(len(rows), dtype=bool)
    reader, reader_figures = reader_for(rows, loco, threshold, everything, seed) if readable(rows).any() else (None, {})
    model = export(fit(rows, seed), threshold, counts(rows), reader)
    write_model(model, out / WEIGHTS_FILE)
    loco_auc = {g: round(auc(rows.y[natural & (group == g)], loco[natural & (group == g)]), 4) for g in present}
    log.info("weights", path=str(out / WEIGHTS_FILE), threshold=threshold, trees=len(model.trees), leave_one_corpus_out_auc=loco_auc,
             reader=reader_figures)
    if report is None:
        return

    figures: dict = {"rows": len(rows), "positives": int(rows.y.sum()), "case_rows": int(rows.case.sum()), "meetings": counts(rows),
                     "qmsum_every": qmsum_every, "threshold": threshold, "leave_one_corpus_out_auc": loco_auc, "reader": reader_figures}

    folds = report / "folds"
    lomo = np.full(len(rows), np.nan)
    per_meeting = {}
    for mid in sorted(set(rows.meeting[rows.corpus == "elitr"].tolist())):
        mask = rows.meeting == mid
        booster = fit(rows.take(~mask), seed)
        lomo[mask] = booster.predict(rows.x[mask])
        per_meeting[mid] = round(auc(rows.y[mask & natural], lomo[mask & natural]), 4)
        # The fold's thresholds, gate and reader come from the other meetings only.
        fold_threshold = best_f1_threshold(rows.y[~mask & natural], loco[~mask & natural], w[~mask & natural])
        fold_reader, fold_figures = reader_for(rows, loco, fold_threshold, ~mask, seed) if readable(rows).any() else (None, {})
        write_model(export(booster, fold_threshold, counts(rows.take(~mask)), fold_reader), folds / f"{mid}.json")
        log.info("lomo", meeting=mid, auc=per_meeting[mid], reader=fold_figures)
    elitr_rows = (rows.corpus == "elitr") & natural
    if elitr_rows.any() and elitr is not None:
        figures["elitr_leave_one_meeting_out_auc"] = {
            "pooled": round(auc(rows.y[elitr_rows], lomo[elitr_rows]), 4),
            "mean_of_meetings": round(float(np.nanmean(list(per_meeting.values()))), 4),
            "per_meeting": per_meeting,
        }
        from training.turn_curve import curve

        figures["elitr_cases"] = curve(elitr, folds, report / "response_vs_silence.png")
    report.mkdir(parents=True, exist_ok=True)
    (report / "turn_taking.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    log.info("report", path=str(report / "turn_taking.json"), seconds=round(time.perf_counter() - t0, 1))
