"""The floor reader fine-tuned on careful readers' labels ("should this candidate speak now?"), scored fold-honestly.

Each labelled moment (`/work/readers/labels.jsonl`, drawn by `training.reader_moments`) is rebuilt as the
delegate sees it: the meeting up to the turn, the candidate's brief from `training.briefs`, the trees'
features and the floor reader's reading (`floor_reader.reading`, what runs). Folds: fold k holds out the k-th
ELITR dev meeting and a k-th of the QMSum meetings (grouped by meeting), so every ELITR figure is
leave-one-meeting-out and every QMSum figure grouped K-fold; no held-out meeting's labels reach its fold's
training (the reader's fine-tuning nor the stack's three numbers).

Scored per held-out set: (a) the shipped trees (the cheap model, and the run-time decision with the encoder's
reader in its gate), (b) the shipped floor reader, (c) their shipped stack (in its gate, as run time does),
(d) the floor reader fine-tuned from its shipped weights on the readers' labels, (e) the stack of the trees and
(d) fitted on the fold's labels; (f) the stack of the trees and the shipped reader refitted on the labels.
"""

from __future__ import annotations

import io
import json
import math
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from delegate.addressing import person
from delegate.decide import floor_reader
from delegate.decide.turn_taking import TurnTakingModel, addressing, features, floor, references
from delegate.decide.turn_taking import shipped as shipped_trees
from delegate.meeting import MeetingState
from training.briefs import briefs
from training.corpora import TrainingMeeting

FOLDS = 9
"""One per ELITR dev meeting with labels; QMSum meetings are grouped into as many."""
STACK_ROWS = 800
"""Training rows (a seeded sample) each fold's stack of trees and fine-tuned reader is fitted on."""


@dataclass(frozen=True)
class Label:
    moment: str
    meeting_id: str
    corpus: str
    utterance: int
    candidate: str
    speak: bool


def read_labels(path: Path) -> list[Label]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out.append(Label(d["moment"], d["meeting_id"], d["corpus"], int(d["utterance"]), d["candidate"], bool(d["speak"])))
    return out


@dataclass
class Rows:
    """One row per labelled moment (several labels of one moment share it); no text of any corpus."""

    moment: list[str]
    meeting: list[str]
    corpus: list[str]
    ids: list[list[int]]
    x: list[list[float]]
    runtime: list[float]
    """The shipped run-time probability of the trees (cheap model, the encoder's reader in its gate)."""
    runtime_taken: list[bool]
    votes: list[tuple[int, int]]
    """(speak labels, labels) of the moment."""
    labels_sha: str = ""
    """sha256 of the labels file the rows were built from (the labels still grow while readers read)."""


def meeting_moments(meeting: TrainingMeeting, wanted: Iterable[tuple[int, str]], model: TurnTakingModel, seed: int = 0):  # type: ignore[no-untyped-def]
    """The state, brief, features and reading at each wanted (turn index, candidate): `reader_moments.walk`'s loop,
    computing the features only where a label is (walk computes every candidate of every turn)."""
    by_index: dict[int, list[str]] = defaultdict(list)
    for i, c in wanted:
        by_index[i].append(c)
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    profiles = briefs(meeting.attendees, meeting.names, meeting.utterances, meeting.meeting_id, meeting.profiles, seed)
    last = max(by_index, default=-1)
    for i, u in enumerate(meeting.utterances[: last + 1]):
        state.add(u)
        if i not in by_index:
            continue
        refs = references(state)
        for label in by_index[i]:
            who = profiles.get(label) or person(label, state.display_name(label))
            addr = addressing(state, who, refs, garbles=label in meeting.profiles)
            x = features(state, who, addr)
            verdict = floor(state, who, addr, model, read=True, text=False)
            yield i, label, x, floor_reader.reading(state, who), verdict


def build_rows(meetings: list[TrainingMeeting], labels: list[Label], seed: int = 0) -> Rows:
    model = shipped_trees()
    votes: dict[tuple[str, int, str], list[bool]] = defaultdict(list)
    moment_of: dict[tuple[str, int, str], str] = {}
    for lab in labels:
        key = (lab.meeting_id, lab.utterance, lab.candidate)
        votes[key].append(lab.speak)
        moment_of[key] = lab.moment
    rows = Rows([], [], [], [], [], [], [], [])
    for m in meetings:
        wanted = sorted((i, c) for (mid, i, c) in votes if mid == m.meeting_id)
        for i, c, x, ids, verdict in meeting_moments(m, wanted, model, seed):
            v = votes[(m.meeting_id, i, c)]
            rows.moment.append(moment_of[(m.meeting_id, i, c)])
            rows.meeting.append(m.meeting_id)
            rows.corpus.append(m.corpus)
            rows.ids.append(ids)
            rows.x.append(x)
            rows.runtime.append(verdict.probability)
            rows.runtime_taken.append(verdict.taken)
            rows.votes.append((sum(v), len(v)))
    return rows


def save_rows(rows: Rows, path: Path) -> None:
    from training.floor_reader import padded

    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, moment=np.asarray(rows.moment), meeting=np.asarray(rows.meeting), corpus=np.asarray(rows.corpus),
                        ids=padded(rows.ids), x=np.asarray(rows.x, dtype=np.float64), runtime=np.asarray(rows.runtime),
                        runtime_taken=np.asarray(rows.runtime_taken), votes=np.asarray(rows.votes, dtype=np.int32),
                        labels_sha=np.asarray(rows.labels_sha))


def load_rows(path: Path) -> Rows:
    with np.load(path, allow_pickle=False) as d:
        return Rows(d["moment"].tolist(), d["meeting"].tolist(), d["corpus"].tolist(), [[int(t) for t in r if t] for r in d["ids"]],
                    d["x"].tolist(), d["runtime"].tolist(), d["runtime_taken"].tolist(), [tuple(v) for v in d["votes"].tolist()],
                    str(d["labels_sha"]))


def folds(meeting: list[str], corpus: list[str], k: int = FOLDS) -> np.ndarray:
    """Each row's fold: the ELITR meetings one a fold (sorted), QMSum meetings grouped by a hash of their id."""
    elitr = sorted({m for m, c in zip(meeting, corpus, strict=True) if c == "elitr"})
    if len(elitr) > k:
        raise ValueError(f"{len(elitr)} ELITR meetings with labels: more than {k} folds")
    return np.asarray([elitr.index(m) if c == "elitr" else zlib.crc32(m.encode()) % k for m, c in zip(meeting, corpus, strict=True)])


def shipped_arrays() -> dict[str, np.ndarray]:
    """The shipped floor reader's arrays (layers and head): where fine-tuning starts."""
    data = resources.files("delegate.weights").joinpath("floor_reader", floor_reader.WEIGHTS_FILE).read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as d:
        return {k: d[k] for k in d.files}


def text_log_odds(weights: Path | None, ids: list[list[int]]) -> np.ndarray:
    reader = floor_reader.shipped() if weights is None else _reader(weights)
    return np.concatenate([reader.log_odds(ids[k : k + 64]) for k in range(0, len(ids), 64)]) if ids else np.zeros(0)


def _reader(path: Path) -> floor_reader.FloorReader:
    with np.load(path, allow_pickle=False) as d:
        return floor_reader.FloorReader({k: d[k] for k in d.files})


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def expanded(votes: np.ndarray, *scores: np.ndarray) -> tuple[np.ndarray, ...]:
    """One row per label (a moment labelled twice counts twice), each score repeated."""
    speak, n = votes[:, 0], votes[:, 1]
    y = np.concatenate([np.r_[np.ones(s), np.zeros(t - s)] for s, t in zip(speak, n, strict=True)]) if len(n) else np.zeros(0)
    return (y, *(np.repeat(s, n) for s in scores))


def auc(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if 0 < y.sum() < len(y) else float("nan")


def precision_at_recall(y: np.ndarray, s: np.ndarray, recall: float) -> float:
    """Precision at the highest threshold whose recall reaches `recall` (speaks = score at or above it)."""
    order = np.argsort(-s, kind="stable")
    ys, ss = y[order], s[order]
    tp = np.cumsum(ys)
    # Only where the next score differs can a threshold cut (ties go in together).
    cut = np.r_[ss[1:] != ss[:-1], True]
    ok = cut & (tp >= recall * y.sum() - 1e-9)
    if not ok.any() or y.sum() == 0:
        return float("nan")
    k = int(np.flatnonzero(ok)[0])
    return float(tp[k] / (k + 1))


def fit_logistic(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0).fit(z, y)
    return lr.coef_[0], float(lr.intercept_[0])


def in_gate(pc: np.ndarray, gate: tuple[float, float]) -> np.ndarray:
    return (pc >= gate[0]) & (pc <= gate[1])


def gated_stack(zc: np.ndarray, zt: np.ndarray, y: np.ndarray, train: np.ndarray, gate: tuple[float, float]) -> np.ndarray:
    """As run time decides: the cheap probability outside the gate, a stack fitted on the training rows in it inside."""
    pc = 1 / (1 + np.exp(-zc))
    g = in_gate(pc, gate)
    fit = train & g
    w, b = fit_logistic(np.c_[zc[fit], zt[fit]], y[fit])
    out = pc.copy()
    out[g] = 1 / (1 + np.exp(-(w[0] * zc[g] + w[1] * zt[g] + b)))
    return out


def soft(votes: np.ndarray) -> np.ndarray:
    return votes[:, 0] / votes[:, 1]


def fine_tune(rows: Rows, train: np.ndarray, out: Path, steps: int, lr: float, seed: int, resume: bool, log) -> Path:  # type: ignore[no-untyped-def]
    from training.floor_reader import padded
    from training.floor_reader import train as train_reader

    idx = np.flatnonzero(train)
    votes = np.asarray(rows.votes)
    data = {"ids": padded([rows.ids[k] for k in idx]), "y": soft(votes[idx]).astype(np.float32)}
    return train_reader(data, out, out / "checkpoint.pt", steps, batch=min(32, len(idx)), lr=lr, seed=seed, resume=resume, log=log,
                        start=shipped_arrays())


def evaluate(rows: Rows, out: Path, steps: int, lr: float, seed: int = 0, resume: bool = False, log=print) -> dict:  # type: ignore[no-untyped-def]
    """Fine-tune one reader per fold (kept in out/folds/k/), score every row by the fold that did not see it."""
    model = shipped_trees()
    assert model.text is not None
    fold = folds(rows.meeting, rows.corpus)
    votes = np.asarray(rows.votes)
    corpus = np.asarray(rows.corpus)
    y_soft = soft(votes)
    y_major = (y_soft >= 0.5).astype(int)
    zc = np.asarray([model.log_odds(x) for x in rows.x])
    zt = text_log_odds(None, rows.ids)
    shipped_stack = np.where(in_gate(1 / (1 + np.exp(-zc)), model.text.gate),
                             [model.text.probability(a, b) for a, b in zip(zc, zt, strict=True)], 1 / (1 + np.exp(-zc)))
    tuned = np.full(len(zc), np.nan)
    stack_tuned = np.full(len(zc), np.nan)
    stack_tuned_all = np.full(len(zc), np.nan)
    stack_shipped_refit = np.full(len(zc), np.nan)
    for k in range(FOLDS):
        test, train = fold == k, fold != k
        if not test.any():
            continue
        weights = out / "folds" / str(k) / floor_reader.WEIGHTS_FILE
        if not weights.is_file():
            fine_tune(rows, train, weights.parent, steps, lr, seed, resume, log)
        # The stack's three numbers need far fewer rows than the reader: it reads the test rows and a seeded
        # sample of the training rows (each reading ~5 ms on the shared cores).
        fit = np.zeros(len(zc), dtype=bool)
        fit[np.random.default_rng(seed + k).choice(np.flatnonzero(train), min(STACK_ROWS, int(train.sum())), replace=False)] = True
        read = np.flatnonzero(test | fit)
        zk = np.zeros(len(zc))
        zk[read] = text_log_odds(weights, [rows.ids[j] for j in read])
        tuned[test] = zk[test]
        stack_tuned[test] = gated_stack(zc, zk, y_major, fit, model.text.gate)[test]
        w, b = fit_logistic(np.c_[zc[fit], zk[fit]], y_major[fit])
        stack_tuned_all[test] = (w[0] * zc + w[1] * zk + b)[test]
        stack_shipped_refit[test] = gated_stack(zc, zt, y_major, train, model.text.gate)[test]
        log(json.dumps({"fold": k, "test_moments": int(test.sum())}))
    scores = {
        "a. trees (cheap, shipped)": zc,
        "a'. trees at run time (cheap + encoder reader in its gate, shipped)": _logit(np.asarray(rows.runtime)),
        "b. floor reader (shipped, next-speaker)": zt,
        "c. shipped stack of a and b (in its gate)": _logit(shipped_stack),
        "d. floor reader fine-tuned on readers' labels": tuned,
        "e. stack of a and d (in the gate)": _logit(stack_tuned),
        "e'. stack of a and d (all moments)": stack_tuned_all,
        "f. stack of a and b refitted on readers' labels (in the gate)": _logit(stack_shipped_refit),
    }
    taken = np.asarray(rows.runtime_taken, dtype=float)
    report: dict = {"labels_sha256": rows.labels_sha, "moments": len(zc), "labels": int(votes[:, 1].sum()), "folds": FOLDS, "steps": steps, "lr": lr, "seed": seed, "sets": {}}
    for name, sel in (("ELITR dev (leave-one-meeting-out)", corpus == "elitr"), ("QMSum (grouped 9-fold by meeting)", corpus != "elitr"),
                      ("all", np.ones(len(zc), dtype=bool))):
        y, ref, *ss = expanded(votes[sel], taken[sel], *(s[sel] for s in scores.values()))
        recall = float(ref[y == 1].mean()) if y.sum() else float("nan")
        report["sets"][name] = {
            "moments": int(sel.sum()), "labels": len(y), "speak": int(y.sum()),
            "shipped run-time recall / precision": [round(recall, 3), round(float(y[ref == 1].mean()), 3) if ref.sum() else None],
            "auc": {n: round(auc(y, s), 3) for n, s in zip(scores, ss, strict=True)},
            "precision at that recall": {n: round(precision_at_recall(y, s, recall), 3) for n, s in zip(scores, ss, strict=True)},
        }
    report["per ELITR meeting (AUC)"] = {}
    for m in sorted({m for m, c in zip(rows.meeting, rows.corpus, strict=True) if c == "elitr"}):
        sel = np.asarray(rows.meeting) == m
        y, *ss = expanded(votes[sel], *(s[sel] for s in scores.values()))
        report["per ELITR meeting (AUC)"][m] = {"labels": len(y), "speak": int(y.sum()),
                                                **{n.split(".")[0]: round(auc(y, s), 3) for n, s in zip(scores, ss, strict=True)}}
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "scores.npz", moment=np.asarray(rows.moment), fold=fold, **{n.split(".")[0]: s for n, s in scores.items()})
    (out / "report.json").write_text(json.dumps(report, indent=1, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v),
                                     encoding="utf-8")
    return report
