"""Fit the turn-taking model (LightGBM), export it as plain tree arrays, and score it on meetings it did not see."""

from __future__ import annotations

from collections.abc import Iterable

import lightgbm as lgb
import numpy as np
from sklearn.metrics import roc_auc_score

from delegate.decide.turn_taking import FEATURES, READER_FEATURES, Reader, TreeArrays, TurnTakingModel
from training.turn_dataset import Rows

PARAMS: dict[str, object] = {
    "objective": "binary",
    "learning_rate": 0.1,
    "max_bin": 63,
    "num_leaves": 15,
    "min_child_samples": 200,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbose": -1,
}
ROUNDS = 100


READER_PARAMS: dict[str, object] = {**PARAMS, "num_leaves": 7, "min_child_samples": 40, "learning_rate": 0.05}
READER_ROUNDS = 150
CASE_WEIGHT = 3.0
"""A benchmark case (the moments the benchmark asks about: matched, engaged negative, swapped principal) counts
as this many natural moments of its corpus."""
GATE_SHARE = 0.15
"""Share of briefed moments the reader may read: the band of cheap probabilities around the threshold holding this many."""


def weights(rows: Rows) -> np.ndarray:
    """Each corpus weighs the same in all (our fixtures with ELITR), so 100-person committees do not drown the rest."""
    group = np.where(rows.corpus == "fixture", "elitr", rows.corpus)
    w = np.where(rows.case, CASE_WEIGHT, 1.0).astype(np.float64)
    for g in np.unique(group):
        mask = group == g
        w[mask] *= len(rows) / (len(np.unique(group)) * w[mask].sum())
    return w


def fit(rows: Rows, seed: int = 0, rounds: int = ROUNDS) -> lgb.Booster:
    params = {**PARAMS, "seed": seed}
    data = lgb.Dataset(rows.x, label=rows.y, weight=weights(rows), feature_name=list(FEATURES), free_raw_data=False)
    return lgb.train(params, data, num_boost_round=rounds)


def readable(rows: Rows) -> np.ndarray:
    """Rows the reader can learn from: encoder features computed, and a brief to read against."""
    return ~np.isnan(rows.e).any(axis=1) & (rows.x[:, FEATURES.index("has_profile")] > 0)


def gate(p: np.ndarray, threshold: float, share: float | None = None) -> tuple[float, float]:
    """The band of probabilities, symmetric around `threshold` in log-odds, that holds `share` of `p`."""
    z = np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
    zt = float(np.log(threshold / (1 - threshold)))
    share = GATE_SHARE if share is None else share
    width = float(np.quantile(np.abs(z - zt), share)) if len(z) else 0.0
    lo, hi = zt - width, zt + width
    return round(1 / (1 + np.exp(-lo)), 4), round(1 / (1 + np.exp(-hi)), 4)


def reader_x(rows: Rows, cheap_p: np.ndarray) -> np.ndarray:
    """`FEATURES` + `READER_FEATURES`: the cheap model's log-odds (held out) and the encoder's features."""
    q = np.clip(cheap_p, 1e-6, 1 - 1e-6)
    return np.hstack([rows.x, np.log(q / (1 - q))[:, None], rows.e]).astype(np.float32)


def fit_reader(rows: Rows, cheap_p: np.ndarray, seed: int = 0) -> lgb.Booster:
    data = lgb.Dataset(reader_x(rows, cheap_p), label=rows.y, weight=weights(rows), feature_name=list(FEATURES + READER_FEATURES),
                       free_raw_data=False)
    return lgb.train({**READER_PARAMS, "seed": seed}, data, num_boost_round=READER_ROUNDS)


def _flatten(node: dict, tree: dict[str, list]) -> int:
    i = len(tree["feature"])
    for k in tree:
        tree[k].append(0 if k != "threshold" and k != "value" else 0.0)
    if "leaf_value" in node:
        tree["feature"][i] = -1
        tree["value"][i] = float(node["leaf_value"])
        return i
    if node["decision_type"] != "<=":
        raise ValueError(f"unexpected split {node['decision_type']}")
    tree["feature"][i] = int(node["split_feature"])
    tree["threshold"][i] = float(node["threshold"])
    tree["left"][i] = _flatten(node["left_child"], tree)
    tree["right"][i] = _flatten(node["right_child"], tree)
    return i


def trees_of(booster: lgb.Booster) -> list[TreeArrays]:
    trees = []
    for info in booster.dump_model()["tree_info"]:
        arrays: dict[str, list] = {"feature": [], "threshold": [], "left": [], "right": [], "value": []}
        _flatten(info["tree_structure"], arrays)
        trees.append(TreeArrays(**arrays))
    return trees


def export(booster: lgb.Booster, threshold: float, trained_on: dict[str, int], reader: Reader | None = None) -> TurnTakingModel:
    return TurnTakingModel(features=list(FEATURES), trees=trees_of(booster), threshold=round(threshold, 4), trained_on=trained_on,
                           reader=reader)


def export_reader(booster: lgb.Booster, threshold: float, band: tuple[float, float]) -> Reader:
    return Reader(features=list(FEATURES + READER_FEATURES), trees=trees_of(booster), threshold=round(threshold, 4), gate=band)


def predict(model: TurnTakingModel, x: np.ndarray) -> np.ndarray:
    return np.asarray([model.probability(list(map(float, row))) for row in x])


def auc(y: np.ndarray, p: np.ndarray) -> float:
    return float(roc_auc_score(y, p)) if 0 < y.sum() < len(y) else float("nan")


def best_f1_threshold(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    """The probability that maximises weighted F1 of "they take the next turn"."""
    best, best_t = -1.0, 0.5
    for t in np.arange(0.1, 0.9, 0.01):
        pred = p >= t
        tp = float(w[pred & (y == 1)].sum())
        fp = float(w[pred & (y == 0)].sum())
        fn = float(w[~pred & (y == 1)].sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best:
            best, best_t = f1, float(t)
    return round(best_t, 2)


def held_out(rows: Rows, groups: Iterable[np.ndarray], seed: int) -> np.ndarray:
    """Predictions for every row from a model fitted without that row's group (meeting or corpus)."""
    p = np.full(len(rows), np.nan)
    for mask in groups:
        booster = fit(rows.take(~mask), seed)
        p[mask] = booster.predict(rows.x[mask])
    return p


def meeting_folds(rows: Rows, k: int) -> list[np.ndarray]:
    """`k` folds of whole meetings (every k-th meeting in sorted order)."""
    ids = sorted(set(rows.meeting.tolist()))
    return [np.isin(rows.meeting, ids[i::k]) for i in range(k)]
