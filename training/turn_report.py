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
from training.turn_dataset import Rows, build, meeting_rows
from training.turn_model import auc, best_f1_threshold, export, fit, held_out, meeting_folds, weights

log = structlog.get_logger()
GROUPS = ("ami", "icsi", "committee", "elitr")
"""Corpora for leave-one-corpus-out; our fixtures go with ELITR (both are our benchmark style)."""


def _rows_of(meeting: TrainingMeeting, seed: int) -> Rows:
    from delegate.language.similarity import warm_up

    warm_up()
    return meeting_rows(meeting, seed)


def build_rows(meetings: list[TrainingMeeting], seed: int, jobs: int) -> Rows:
    if jobs <= 1:
        return build(meetings, seed)
    with ProcessPoolExecutor(jobs) as pool:
        return Rows.concat(list(pool.map(_rows_of, meetings, [seed] * len(meetings), chunksize=1)))


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
) -> None:
    t0 = time.perf_counter()
    if rows_cache is not None and rows_cache.exists():
        rows = Rows.read(str(rows_cache))
    else:
        meetings = load_all(qmsum, elitr, fixtures)
        rows = build_rows(meetings, seed, jobs)
        if rows_cache is not None:
            rows_cache.parent.mkdir(parents=True, exist_ok=True)
            rows.save(str(rows_cache))
    log.info("rows", rows=len(rows), positives=int(rows.y.sum()), meetings=counts(rows), seconds=round(time.perf_counter() - t0, 1))

    # The threshold is chosen on predictions for whole corpora the model did not see: it must transfer.
    w = weights(rows)
    group = group_of(rows)
    present = [g for g in GROUPS if (group == g).any()]
    loco = held_out(rows, [group == g for g in present], seed) if len(present) > 1 else held_out(rows, meeting_folds(rows, 4), seed)
    threshold = best_f1_threshold(rows.y, loco, w)
    model = export(fit(rows, seed), threshold, counts(rows))
    write_model(model, out / WEIGHTS_FILE)
    loco_auc = {g: round(auc(rows.y[group == g], loco[group == g]), 4) for g in present}
    log.info("weights", path=str(out / WEIGHTS_FILE), threshold=threshold, trees=len(model.trees), leave_one_corpus_out_auc=loco_auc)
    if report is None:
        return

    figures: dict = {"rows": len(rows), "positives": int(rows.y.sum()), "meetings": counts(rows), "threshold": threshold,
                     "leave_one_corpus_out_auc": loco_auc}

    folds = report / "folds"
    lomo = np.full(len(rows), np.nan)
    per_meeting = {}
    for mid in sorted(set(rows.meeting[rows.corpus == "elitr"].tolist())):
        mask = rows.meeting == mid
        booster = fit(rows.take(~mask), seed)
        lomo[mask] = booster.predict(rows.x[mask])
        per_meeting[mid] = round(auc(rows.y[mask], lomo[mask]), 4)
        # The fold's threshold comes from held-out predictions of the other meetings only.
        fold_threshold = best_f1_threshold(rows.y[~mask], loco[~mask], w[~mask])
        write_model(export(booster, fold_threshold, counts(rows.take(~mask))), folds / f"{mid}.json")
        log.info("lomo", meeting=mid, auc=per_meeting[mid])
    elitr_rows = rows.corpus == "elitr"
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
