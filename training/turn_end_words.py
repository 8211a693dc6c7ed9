"""Fit `delegate.asr.turn_words` on QMSum's AMI and ICSI meetings and report it on meetings it did not see.

Rows: for every turn (a speaker's consecutive utterances, merged), its whole words end it (label 1); its
words up to each sentence end or comma inside it, and up to two words drawn at random inside it, do not
(label 0). A disfluent cut ("{disfmarker}") inside a turn is a place where it goes on. Figures:
leave-one-corpus-out (fit on ICSI, judged on AMI, and the other way) and QMSum's validation meetings
(fit on its train meetings): ROC AUC, and at the shipped threshold the share of turn ends held open (each
waits longer) against the share of places inside a turn held open (each a cut avoided).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np

from delegate.asr.turn_words import bucket_of, features, tokens
from training.corpora import corpus_of

SIZE = 1 << 15
_MARK = re.compile(r"\{[a-z_ ]+\}")
_CUT = re.compile(r"\{disfmarker\}")
_SPACE_BEFORE = re.compile(r"\s+([,.?!;:])")
HELD_TURN_ENDS = 0.05
"""The threshold holds open this share of turn ends on the training meetings: each waits up to the turn wait
(1.5 s), longer than most gaps between speakers, so that the next speaker's words may join its final."""


def _clean(text: str) -> str:
    text = _CUT.sub(" , ", text)  # a cut phrase goes on: as a comma would
    return _SPACE_BEFORE.sub(r"\1", " ".join(_MARK.sub(" ", text).split()))


def turns(path: Path) -> list[str]:
    """The meeting's turns: consecutive utterances of one speaker joined."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out: list[tuple[str, str]] = []
    for u in raw["meeting_transcripts"]:
        text = _clean(u["content"])
        if not text or not tokens(text):
            continue
        if out and out[-1][0] == u["speaker"]:
            out[-1] = (u["speaker"], f"{out[-1][1]} {text}")
        else:
            out.append((u["speaker"], text))
    return [t for _, t in out]


def rows(turn: str, rng: random.Random) -> list[tuple[list[str], int]]:
    """(words heard so far, ends the turn) for one turn."""
    words = turn.split()
    out = [(tokens(turn), 1)]
    inside = {i for i, w in enumerate(words[:-1]) if w[-1] in ".?!,;:"}
    if len(words) > 2:
        inside |= set(rng.sample(range(len(words) - 1), min(2, len(words) - 1)))
    for i in sorted(inside):
        out.append((tokens(" ".join(words[: i + 1])), 0))
    return out


def matrix(meetings: list[Path], seed: int) -> tuple[object, np.ndarray]:
    from scipy.sparse import csr_matrix

    rng = random.Random(seed)
    indptr, indices, labels = [0], [], []
    for path in meetings:
        for turn in turns(path):
            for words, label in rows(turn, rng):
                cols = sorted({bucket_of(f, SIZE) for f in features(words)})
                indices.extend(cols)
                indptr.append(len(indices))
                labels.append(label)
    data = np.ones(len(indices), dtype=np.float32)
    return csr_matrix((data, indices, indptr), shape=(len(labels), SIZE)), np.array(labels)


def fit(x: object, y: np.ndarray, seed: int) -> np.ndarray:
    """Hashed weights, the bias folded into the "bias" feature's bucket."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, max_iter=2000, random_state=seed, fit_intercept=False)
    model.fit(x, y)
    return model.coef_[0].astype(np.float32)


def _probabilities(weights: np.ndarray, x: object) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ weights)))


def judged(weights: np.ndarray, threshold: float, x: object, y: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    p = _probabilities(weights, x)
    held = p < threshold
    return {
        "rows": len(y),
        "auc": round(float(roc_auc_score(y, p)), 4),
        "turn_ends_held": round(float(held[y == 1].mean()), 4),
        "inside_held": round(float(held[y == 0].mean()), 4),
    }


def run(qmsum: Path, out: Path, seed: int) -> dict[str, object]:
    """Fit on the train meetings (AMI and ICSI), write the weights, and return the held-out figures."""
    chosen = {
        split: [p for p in sorted((qmsum / split).glob("*.json")) if corpus_of(p.stem) in ("ami", "icsi")]
        for split in ("train", "val")
    }
    x, y = matrix(chosen["train"], seed)
    weights = fit(x, y, seed)
    p = _probabilities(weights, x)
    threshold = float(np.quantile(p[y == 1], HELD_TURN_ENDS))
    report: dict[str, object] = {
        "command": f"python -m training turn-end --seed {seed}",
        "train_meetings": len(chosen["train"]),
        "threshold": round(threshold, 4),
    }
    vx, vy = matrix(chosen["val"], seed + 1)
    report["qmsum_val"] = {"meetings": len(chosen["val"]), **judged(weights, threshold, vx, vy)}
    for held_out in ("ami", "icsi"):
        fit_on = [p for p in chosen["train"] if corpus_of(p.stem) != held_out]
        judge_on = [p for p in chosen["train"] + chosen["val"] if corpus_of(p.stem) == held_out]
        fx, fy = matrix(fit_on, seed)
        w = fit(fx, fy, seed)
        t = float(np.quantile(_probabilities(w, fx)[fy == 1], HELD_TURN_ENDS))
        jx, jy = matrix(judge_on, seed + 1)
        report[f"fit_without_{held_out}"] = {"meetings": len(judge_on), **judged(w, t, jx, jy)}
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, weights=weights.astype(np.float16), threshold=np.float32(threshold))
    out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    return report
