"""Where the floor reader joins the cheap model: the gate, three stacking numbers and a threshold, fitted held out.

The reader (`training.floor_reader`) learnt from QMSum only, so on ELITR dev it is scored on meetings it
never saw. The cheap model of each ELITR meeting is that meeting's leave-one-meeting-out fold
(`python -m delegate.train turn-taking --report DIR` writes DIR/folds). For each meeting, the stack
(logistic regression on [cheap log-odds, reader log-odds]) and its threshold are fitted on the other
meetings' moments in the gate, each with its own held-out cheap log-odds; the fold file written for
`benchmark.replay --weights-folds` is that meeting's cheap fold with this stack. The rows are the
benchmark's cases the model is asked about (matched against engaged negatives and swapped principals,
each weighing `CASE_WEIGHT`) and the principals' natural moments (do they take the next turn).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from delegate.decide import floor_reader
from delegate.decide.cues import detect
from delegate.decide.turn_taking import TextStack, TurnTakingModel, addressing, features
from delegate.meeting import MeetingState, is_backchannel
from training.turn_dataset import _ALWAYS
from training.turn_model import CASE_WEIGHT, auc, gate
from training.turn_report import write_model

GATE_SHARE = 0.2
"""Share of the principals' natural moments the floor reader may read (its CPU: see docs/turn-taking.md)."""


@dataclass
class ElitrRows:
    meeting: list[str] = field(default_factory=list)
    x: list[list[float]] = field(default_factory=list)
    ids: list[list[int]] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    case: list[bool] = field(default_factory=list)

    def add(self, meeting: str, state: MeetingState, profile, y: int, case: bool) -> None:  # type: ignore[no-untyped-def]
        self.meeting.append(meeting)
        self.x.append(features(state, profile, addressing(state, profile)))
        self.ids.append(floor_reader.reading(state, profile))
        self.y.append(y)
        self.case.append(case)


def elitr_rows(folder: Path, seed: int = 0) -> ElitrRows:
    """Every moment of ELITR dev the model is asked about: the benchmark's cases and the principals' natural moments."""
    from benchmark.scoring.data import load
    from benchmark.scoring.runner import state_for
    from benchmark.scoring.variants import derive
    from training.turn_dataset import next_speakers

    rows = ElitrRows()
    for bench in load(folder):
        for c in derive(bench, seed):
            if c.variant not in ("matched", "mismatched"):
                continue
            state = state_for(bench, c)
            profile = bench.profile(c.principal, c.names)
            if detect(state, profile, _ALWAYS).floor != 0.0:
                rows.add(bench.meeting_id, state, profile, int(c.variant == "matched"), True)
        from training.corpora import TrainingMeeting

        tm = TrainingMeeting(meeting_id=bench.meeting_id, corpus="elitr", utterances=bench.utterances, attendees=list(bench.attendees))
        nxt = next_speakers(tm)
        for label in bench.profiles:
            profile = bench.profile(label)
            state = MeetingState(bench.meeting_id, attendees=list(bench.attendees), names=dict(bench.names))
            for i, u in enumerate(bench.utterances):
                state.add(u)
                if is_backchannel(u.text) or nxt[i] is None or u.speaker == label:
                    continue
                if detect(state, profile, _ALWAYS).floor != 0.0:
                    rows.add(bench.meeting_id, state, profile, int(nxt[i] == label), False)
    return rows


def _logistic(z: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0).fit(z, y, sample_weight=w)
    return float(lr.coef_[0][0]), float(lr.coef_[0][1]), float(lr.intercept_[0])


def _best_threshold(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    best, best_t = -1.0, 0.5
    for t in np.arange(0.05, 0.95, 0.01):
        pred = p >= t
        tp, fp, fn = (float(w[m].sum()) for m in (pred & (y == 1), pred & (y == 0), ~pred & (y == 1)))
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best:
            best, best_t = f1, float(t)
    return round(best_t, 2)


def fit_stack(zc: np.ndarray, zt: np.ndarray, y: np.ndarray, w: np.ndarray, band: tuple[float, float]) -> TextStack:
    a, b, c = _logistic(np.c_[zc, zt], y, w)
    p = 1 / (1 + np.exp(-(a * zc + b * zt + c)))
    return TextStack(cheap=round(a, 4), text=round(b, 4), bias=round(c, 4), threshold=_best_threshold(y, p, w), gate=band)


def cached_rows(elitr: Path, path: Path, seed: int = 0) -> ElitrRows:
    """`elitr_rows`, kept in `path` (they do not depend on any fitted weights: a new reader reuses them)."""
    if path.is_file():
        with np.load(path, allow_pickle=False) as d:
            ids = [[int(t) for t in r if t] for r in d["ids"]]
            return ElitrRows(d["meeting"].tolist(), d["x"].tolist(), ids, d["y"].tolist(), d["case"].tolist())
    rows = elitr_rows(elitr, seed)
    from training.floor_reader import padded

    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, meeting=np.asarray(rows.meeting), x=np.asarray(rows.x, dtype=np.float64), ids=padded(rows.ids),
                        y=np.asarray(rows.y), case=np.asarray(rows.case))
    return rows


def reader_log_odds(rows: ElitrRows, out: Path) -> np.ndarray:
    """The shipped reader's log-odds of every row, kept beside the rows for these weights (a reading costs ~5 ms)."""
    import hashlib
    from importlib import resources

    weights = resources.files("delegate.weights").joinpath("floor_reader", floor_reader.WEIGHTS_FILE).read_bytes()
    path = out / f"reader-{hashlib.sha256(weights).hexdigest()[:12]}.npy"
    if path.is_file():
        return np.load(path)
    reader = floor_reader.shipped()
    zt = np.concatenate([reader.log_odds(rows.ids[k : k + 64]) for k in range(0, len(rows.y), 64)])
    np.save(path, zt)
    return zt


def run(elitr: Path, folds: Path, out: Path, ship: Path | None, share: float = GATE_SHARE, seed: int = 0) -> dict:
    rows = cached_rows(elitr, out / "rows.npz", seed)
    meeting = np.asarray(rows.meeting)
    y = np.asarray(rows.y)
    case = np.asarray(rows.case)
    w = np.where(case, CASE_WEIGHT, 1.0)
    zt = reader_log_odds(rows, out)
    models = {m: TurnTakingModel.read(folds / f"{m}.json") for m in sorted(set(rows.meeting))}
    zc = np.asarray([models[m].log_odds(x) for m, x in zip(rows.meeting, rows.x, strict=True)])
    pc = 1 / (1 + np.exp(-zc))
    (out / "folds").mkdir(parents=True, exist_ok=True)
    report: dict = {"rows": len(y), "cases": int(case.sum()), "share": share, "folds": {}}
    stacked = np.full(len(y), np.nan)
    in_gate = np.zeros(len(y), dtype=bool)
    for m, model in models.items():
        train, test = meeting != m, meeting == m
        band = gate(pc[train & ~case], model.threshold, share)
        g = (pc >= band[0]) & (pc <= band[1])
        stack = fit_stack(zc[train & g], zt[train & g], y[train & g], w[train & g], band)
        write_model(model.model_copy(update={"text": stack}), out / "folds" / f"{m}.json")
        sel = test & g
        stacked[sel] = [stack.probability(a, b) for a, b in zip(zc[sel], zt[sel], strict=True)]
        in_gate |= sel
        report["folds"][m] = stack.model_dump()
    both = case & in_gate
    report["auc"] = {
        "reader alone (QMSum only), natural": auc(y[~case], zt[~case]),
        "reader alone (QMSum only), cases": auc(y[case], zt[case]),
        "cheap (fold), natural": auc(y[~case], zc[~case]),
        "cheap (fold), cases": auc(y[case], zc[case]),
        "in the gate, cheap -> stacked, natural": [auc(y[in_gate & ~case], zc[in_gate & ~case]), auc(y[in_gate & ~case], stacked[in_gate & ~case])],
        "in the gate, cheap -> stacked, cases": [auc(y[both], zc[both]), auc(y[both], stacked[both])],
    }
    report["in_gate"] = {"natural": float(in_gate[~case].mean()), "cases": float(in_gate[case].mean())}
    if ship is not None:
        # Fitted on every meeting's held-out cheap log-odds: the shipped cheap model has seen these meetings,
        # and its own log-odds on them are too sure for the reader to be weighed against.
        model = TurnTakingModel.read(ship)
        band = gate(pc[~case], model.threshold, share)
        g = (pc >= band[0]) & (pc <= band[1])
        stack = fit_stack(zc[g], zt[g], y[g], w[g], band)
        write_model(model.model_copy(update={"text": stack}), ship)
        report["shipped"] = stack.model_dump()
    (out / "stack.json").write_text(json.dumps(report, indent=1, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v),
                                    encoding="utf-8")
    return report
