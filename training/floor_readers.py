"""The floor model taught by careful readers: next-speaker trees first, then boosted on the readers' labels.

The readers (docs/floor-readers) said, for ~2,000 training moments, whether the candidate should speak. Each
labelled moment's feature row is rebuilt exactly (`training.reader_moments.walk`, the rows the moments were drawn
from) with its floor reader reading. On top of the next-speaker model (the trees of `training turn-taking`, its
leave-one-meeting-out fold for each ELITR dev meeting) a few more trees are boosted on the readers' labels, the
next-speaker log-odds as their starting score, and appended to it: one tree ensemble, the same run-time cost.

Fold-honest: for each ELITR dev meeting, every fit here leaves out the readers' rows of that meeting (its fold's
next-speaker trees already left it out). Compared on the same folds, with and without the readers' labels: the
trees, the text model (the floor reader, trained on QMSum only) and their stack (a logistic regression on both
log-odds); scored against the readers on the held-out meeting's labelled moments, against who really spoke next
on its principals' natural moments, and on its benchmark cases.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import lightgbm as lgb
import numpy as np

from delegate.decide import floor_reader
from delegate.decide.turn_taking import FEATURES, TurnTakingModel
from training.corpora import TrainingMeeting
from training.turn_model import PARAMS, auc, trees_of

BOOST_PARAMS: dict[str, object] = {**PARAMS, "num_leaves": 7, "min_child_samples": 30, "learning_rate": 0.05}
BOOST_ROUNDS = 60
"""Trees boosted on the readers' rows (~2,000 moments: few, shallow, slow)."""


@dataclass(frozen=True)
class Label:
    moment: str
    reader: str
    packet: int
    speak: bool


def read_labels(path: Path) -> list[Label]:
    """The readers' labels (`docs/floor-readers/labels.jsonl`: one line per moment and packet)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(Label(d["moment"], d.get("reader", f"R{d['packet']:02d}"), int(d["packet"]), bool(d["speak"])))
    return out


def read_key(path: Path) -> dict[str, dict]:
    """Each moment's meeting, turn index, candidate and corpus: from the packets' key, or from the labels file, whose
    lines carry them too."""
    return {d["moment"]: d for d in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())}


def kappa(labels: list[Label]) -> dict:
    """Cohen's kappa of speak / stay silent on the moments two packets hold (the earlier packet as first rater)."""
    by: dict[str, list[Label]] = defaultdict(list)
    for lab in labels:
        by[lab.moment].append(lab)
    pairs = [sorted(v, key=lambda lab: lab.packet)[:2] for v in by.values() if len(v) >= 2]
    n = len(pairs)
    if not n:
        return {"moments": 0}
    a = np.asarray([p[0].speak for p in pairs], dtype=float)
    b = np.asarray([p[1].speak for p in pairs], dtype=float)
    po = float((a == b).mean())
    pe = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return {"moments": n, "agreement": round(po, 4), "kappa": round((po - pe) / (1 - pe), 4) if pe < 1 else 1.0,
            "speak_rate": round(float((a.sum() + b.sum()) / (2 * n)), 4)}


def _rows_of(job: tuple[TrainingMeeting, list[dict], int]) -> list[dict]:
    """The feature rows and readings of one meeting's labelled moments (its walk stops after the last of them)."""
    from training.reader_moments import walk

    meeting, wanted, seed = job
    want = {(d["utterance"], d["candidate"]): d["moment"] for d in wanted}
    last = max(u for u, _ in want)
    out = []
    for seen in walk(meeting, seed):
        if seen.index > last:
            break
        moment = want.get((seen.index, seen.candidate))
        if moment is not None:
            out.append({"moment": moment, "x": seen.features, "ids": floor_reader.reading(seen.state, seen.profile), "y_next": seen.y})
    return out


@dataclass
class ReaderRows:
    moment: np.ndarray
    meeting: np.ndarray
    corpus: np.ndarray
    x: np.ndarray
    ids: np.ndarray
    y_next: np.ndarray

    def __len__(self) -> int:
        return len(self.moment)


def reader_rows(meetings: list[TrainingMeeting], key: dict[str, dict], moments: set[str], path: Path, seed: int = 0,
                jobs: int = 2) -> ReaderRows:
    """Every labelled moment's row, rebuilt; kept in `path` (a later run with more labels builds only the new ones)."""
    from training.floor_reader import padded

    have: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path, allow_pickle=False) as d:
            have = {k: d[k] for k in d.files}
    done = set(have["moment"].tolist()) if have else set()
    todo: dict[str, list[dict]] = defaultdict(list)
    for m in sorted(moments - done):
        todo[key[m]["meeting_id"]].append(key[m])
    by_id = {m.meeting_id: m for m in meetings}
    missing = sorted(set(todo) - set(by_id))
    if missing:
        raise ValueError(f"labelled moments of meetings not found: {', '.join(missing[:5])}")
    jobs_list = [(by_id[mid], todo[mid], seed) for mid in sorted(todo)]
    with ProcessPoolExecutor(jobs) as pool:
        built = [r for rs in pool.map(_rows_of, jobs_list) for r in rs]
    new = {
        "moment": np.asarray([r["moment"] for r in built], dtype="<U8"),
        "meeting": np.asarray([key[r["moment"]]["meeting_id"] for r in built], dtype="<U40"),
        "corpus": np.asarray([key[r["moment"]]["corpus"] for r in built], dtype="<U10"),
        "x": np.asarray([r["x"] for r in built], dtype=np.float64).reshape(-1, len(FEATURES)),
        "ids": padded([r["ids"] for r in built]),
        "y_next": np.asarray([r["y_next"] for r in built], dtype=np.int8),
    }
    if have:
        new = {k: np.concatenate([have[k].astype(new[k].dtype) if k not in ("moment", "meeting", "corpus") else have[k], new[k]]) for k in new}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **new)
    keep = np.isin(new["moment"], sorted(moments))
    return ReaderRows(**{k: v[keep] for k, v in new.items()})


def text_log_odds(ids: np.ndarray) -> np.ndarray:
    reader = floor_reader.shipped()
    readings = [[int(t) for t in r if t] for r in ids]
    if not readings:
        return np.zeros(0)
    return np.concatenate([reader.log_odds(readings[k: k + 64]) for k in range(0, len(readings), 64)])


def log_odds(model: TurnTakingModel, x: np.ndarray) -> np.ndarray:
    return np.asarray([model.log_odds(list(map(float, row))) for row in x])


def expand(rows_idx: np.ndarray, votes: list[list[bool]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One training row per reader's label (a moment labelled twice is two rows of half weight)."""
    idx, y, w = [], [], []
    for i, v in zip(rows_idx, votes, strict=True):
        for s in v:
            idx.append(i)
            y.append(int(s))
            w.append(1.0 / len(v))
    return np.asarray(idx, dtype=int), np.asarray(y, dtype=float), np.asarray(w)


def boosted(base: TurnTakingModel, booster: lgb.Booster, threshold: float) -> TurnTakingModel:
    """The next-speaker trees with the readers' trees appended; the encoder's reader is left out (it learnt the
    next-speaker trees' log-odds as a feature, not these)."""
    return base.model_copy(update={"trees": [*base.trees, *trees_of(booster)], "threshold": round(threshold, 4), "reader": None,
                                    "text": None})


def logistic(columns: np.ndarray, y: np.ndarray, w: np.ndarray):  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0).fit(columns, y, sample_weight=w)


def best_f1(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    best, best_t = -1.0, 0.5
    for t in np.arange(0.05, 0.95, 0.01):
        pred = p >= t
        tp, fp, fn = (float(w[m].sum()) for m in (pred & (y == 1), pred & (y == 0), ~pred & (y == 1)))
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best:
            best, best_t = f1, float(t)
    return round(best_t, 2)


def nan_none(v: object) -> object:
    return None if isinstance(v, float) and math.isnan(v) else v


def scores(y: np.ndarray, columns: dict[str, np.ndarray]) -> dict[str, float]:
    return {k: round(auc(y, v), 4) for k, v in columns.items()}


def _oof_threshold(base_z: np.ndarray, x: np.ndarray, idx: np.ndarray, y: np.ndarray, w: np.ndarray, meeting: np.ndarray,
                   seed: int) -> float:
    """The boosted model's threshold: best F1 against the readers on its own out-of-fold predictions (4 folds of meetings)."""
    ids = sorted(set(meeting[idx].tolist()))
    p = np.zeros(len(idx))
    for k in range(4):
        test = np.isin(meeting[idx], ids[k::4])
        b = boost_rows(x, base_z, idx[~test], y[~test], w[~test], seed)
        p[test] = 1 / (1 + np.exp(-(base_z[idx[test]] + b.predict(x[idx[test]], raw_score=True))))
    return best_f1(y, p, w)


def boost_rows(x: np.ndarray, base_z: np.ndarray, idx: np.ndarray, y: np.ndarray, w: np.ndarray, seed: int) -> lgb.Booster:
    data = lgb.Dataset(x[idx], label=y, weight=w, init_score=base_z[idx], feature_name=list(FEATURES), free_raw_data=False)
    return lgb.train({**BOOST_PARAMS, "seed": seed}, data, num_boost_round=BOOST_ROUNDS)


def _qmsum_only(rows_npz: Path, seed: int) -> TurnTakingModel:
    """Next-speaker trees fitted on the QMSum rows of `training turn-taking` alone (no ELITR, no fixtures, no cases)."""
    from training.turn_dataset import Rows
    from training.turn_model import best_f1_threshold, export, fit, weights

    with np.load(rows_npz, allow_pickle=False) as d:
        rows = Rows(**{k: d[k] for k in d.files})
    q = rows.take(np.isin(rows.corpus, ["ami", "icsi", "committee"]) & ~rows.case)
    booster = fit(q, seed)
    p = booster.predict(q.x)
    return export(booster, best_f1_threshold(q.y, p, weights(q)), {c: int(len(set(q.meeting[q.corpus == c]))) for c in ("ami", "icsi", "committee")})


def run(labels_path: Path, key_path: Path | None, qmsum: Path, elitr: Path, folds: Path, rows_npz: Path, out: Path, seed: int = 0,
        jobs: int = 2) -> dict:
    from training.corpora import load_all
    from training.floor_stack import cached_rows, reader_log_odds
    from training.turn_report import write_model

    labels = read_labels(labels_path)
    key = read_key(key_path or labels_path)
    votes_of: dict[str, list[bool]] = defaultdict(list)
    for lab in labels:
        votes_of[lab.moment].append(lab.speak)
    meetings = [m for m in load_all(qmsum, elitr, None) if m.meeting_id in {key[v]["meeting_id"] for v in votes_of}]
    rr = reader_rows(meetings, key, set(votes_of), out / "reader_rows.npz", seed, jobs)
    votes = [votes_of[m] for m in rr.moment]
    y_read = np.asarray([np.mean(v) >= 0.5 for v in votes], dtype=int)
    zt_r = text_log_odds(rr.ids)
    er = cached_rows(elitr, out / "elitr_rows.npz", seed)
    zt_e = reader_log_odds(er, out)
    e_meeting, e_x, e_y, e_case = np.asarray(er.meeting), np.asarray(er.x), np.asarray(er.y), np.asarray(er.case)
    fold_ids = sorted(p.stem for p in folds.glob("*.json"))
    fold_models = {m: TurnTakingModel.read(folds / f"{m}.json") for m in fold_ids}
    # Each ELITR row's next-speaker log-odds from its own meeting's fold: held out, as the stack must learn them.
    ze_own = np.asarray([fold_models[m].log_odds(list(map(float, x))) for m, x in zip(e_meeting, e_x, strict=True)])
    keys = ("trees", "trees + readers", "text", "stack", "stack + readers", "trees + readers, stacked with text + readers")
    held_r = {k: np.full(len(rr), np.nan) for k in keys}
    held_e = {k: np.full(len(e_y), np.nan) for k in keys}
    report: dict = {"labels": len(labels), "moments": len(rr), "readers_speak_rate": round(float(y_read.mean()), 4),
                    "agreement": kappa(labels), "folds": {}}
    (out / "folds").mkdir(parents=True, exist_ok=True)
    for m in fold_ids:
        base = fold_models[m]
        zb_r = log_odds(base, rr.x)
        zb_e = ze_own[e_meeting == m]
        train = np.flatnonzero(rr.meeting != m)
        idx, y, w = expand(train, [votes[i] for i in train])
        booster = boost_rows(rr.x, zb_r, idx, y, w, seed)
        threshold = _oof_threshold(zb_r, rr.x, idx, y, w, rr.meeting, seed)
        write_model(boosted(base, booster, threshold), out / "folds" / f"{m}.json")
        zr_r = zb_r + booster.predict(rr.x, raw_score=True)
        te = e_meeting == m
        zr_e = zb_e + booster.predict(e_x[te], raw_score=True) if te.any() else np.zeros(0)
        # The stacks: on the readers' rows of the other meetings (with readers), or on the other ELITR meetings'
        # natural moments, who spoke next (without).
        s_read = logistic(np.c_[zb_r[idx], zt_r[idx]], y, w)
        s_both = logistic(np.c_[zr_r[idx], zt_r[idx]], y, w)
        other = (e_meeting != m) & ~e_case
        s_next = logistic(np.c_[ze_own[other], zt_e[other]], e_y[other], np.ones(int(other.sum())))
        tr = rr.meeting == m
        for held, sel, zb, zr, zt in ((held_r, tr, zb_r[tr], zr_r[tr], zt_r[tr]), (held_e, te, zb_e, zr_e, zt_e[te])):
            if not sel.any():
                continue
            held["trees"][sel] = zb
            held["trees + readers"][sel] = zr
            held["text"][sel] = zt
            held["stack"][sel] = s_next.decision_function(np.c_[zb, zt])
            held["stack + readers"][sel] = s_read.decision_function(np.c_[zb, zt])
            held["trees + readers, stacked with text + readers"][sel] = s_both.decision_function(np.c_[zr, zt])
        report["folds"][m] = {"threshold": threshold, "reader_rows_left_out": int(tr.sum()), "trees": len(base.trees) + BOOST_ROUNDS}
    elitr_r = np.isin(rr.meeting, fold_ids)
    report["auc_held_out"] = {
        "against the readers, ELITR dev moments": scores(y_read[elitr_r], {k: v[elitr_r] for k, v in held_r.items()}),
        "who spoke next, ELITR dev natural moments": scores(e_y[~e_case], {k: v[~e_case] for k, v in held_e.items()}),
        "ELITR dev cases (matched vs engaged / swapped)": scores(e_y[e_case], {k: v[e_case] for k, v in held_e.items()}),
    }
    # QMSum alone: next-speaker trees on QMSum rows only, then boosted on QMSum readers' rows only; scored on ELITR dev.
    q = _qmsum_only(rows_npz, seed)
    zq_r, zq_e = log_odds(q, rr.x), log_odds(q, e_x)
    qrows = np.flatnonzero(~np.isin(rr.corpus, ["elitr"]))
    idx, y, w = expand(qrows, [votes[i] for i in qrows])
    qb = boost_rows(rr.x, zq_r, idx, y, w, seed)
    zqb_r, zqb_e = zq_r + qb.predict(rr.x, raw_score=True), zq_e + qb.predict(e_x, raw_score=True)
    report["qmsum_only"] = {
        "trained_on": q.trained_on,
        "against the readers, ELITR dev moments": scores(y_read[elitr_r], {"trees": zq_r[elitr_r], "trees + readers": zqb_r[elitr_r]}),
        "who spoke next, ELITR dev natural moments": scores(e_y[~e_case], {"trees": zq_e[~e_case], "trees + readers": zqb_e[~e_case]}),
        "ELITR dev cases": scores(e_y[e_case], {"trees": zq_e[e_case], "trees + readers": zqb_e[e_case]}),
    }
    report["engine_on_readers_elitr_moments"] = {
        "next-speaker folds": engine_on_moments(labels_path, key_path, elitr, folds, seed),
        "boosted on readers' labels": engine_on_moments(labels_path, key_path, elitr, out / "folds", seed),
    }
    (out / "report.json").write_text(json.dumps(report, indent=1, default=nan_none), encoding="utf-8")
    return report


def engine_on_moments(labels_path: Path, key_path: Path | None, elitr: Path, folds: Path, seed: int = 0) -> dict:
    """The engine's floor decision (names, then the fold's floor model at each speaking level; compose aside) on the
    readers' ELITR dev moments, each meeting decided by the fold that did not see it, beside the readers' majority."""
    from delegate.decide.cues import detect, is_question
    from delegate.decide.speaking import LEVELS, admits
    from delegate.models import Scenario, Speaking
    from training.corpora import load_all
    from training.reader_moments import walk

    key = read_key(key_path or labels_path)
    votes: dict[str, list[bool]] = defaultdict(list)
    for lab in read_labels(labels_path):
        votes[lab.moment].append(lab.speak)
    wanted: dict[str, dict[tuple[int, str], str]] = defaultdict(dict)
    for m in votes:
        if key[m]["corpus"] == "elitr":
            wanted[key[m]["meeting_id"]][(key[m]["utterance"], key[m]["candidate"])] = m
    said: dict[str, dict[str, bool]] = {level.value: {} for level in Speaking}
    for meeting in load_all(None, elitr, None):
        want = wanted.get(meeting.meeting_id)
        if not want:
            continue
        model = TurnTakingModel.read(folds / f"{meeting.meeting_id}.json")
        last = max(i for i, _ in want)
        for seen in walk(meeting, seed):
            if seen.index > last:
                break
            moment = want.get((seen.index, seen.candidate))
            if moment is None:
                continue
            cue = detect(seen.state, seen.profile, model, level=LEVELS[Speaking.forward])
            assert seen.state.last is not None
            partner = seen.state.recent_speakers(2)[1:2] == [seen.candidate]
            for level in Speaking:
                if cue.margin is None:
                    speaks = cue.scenario is not Scenario.none
                else:
                    speaks = cue.scenario is not Scenario.none and admits(LEVELS[level], cue.margin, is_question(seen.state.last.text), partner)
                said[level.value][moment] = speaks
    out: dict = {}
    for level, engine in said.items():
        readers = {m: sum(votes[m]) / len(votes[m]) >= 0.5 for m in engine}
        speak = [m for m in engine if readers[m]]
        silent = [m for m in engine if not readers[m]]
        out[level] = {
            "moments": len(engine),
            "readers_speak": len(speak),
            "response": round(sum(engine[m] for m in speak) / len(speak), 4) if speak else None,
            "silence": round(sum(not engine[m] for m in silent) / len(silent), 4) if silent else None,
            "engine_speaks_readers_would_make": round(sum(readers[m] for m in engine if engine[m]) / max(sum(engine.values()), 1), 4),
        }
    return out
