"""Fitting the answer selector: the listwise fit learns which signal marks the answering item, and "none fits"."""

from __future__ import annotations

import numpy as np

from delegate.decide.reply.selector import FEATURES
from training.answer_selector import Group, choose_threshold, fit, held_out, top1


def _groups(seed: int, n: int = 60) -> list[Group]:
    """Cases of 6 items where the answering item is the one with the highest first feature (plus noise), and a
    few cases where no item answers and every first feature is low."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        rows = rng.normal(0.0, 1.0, (6, len(FEATURES)))
        labels = np.zeros(6)
        if k % 5:
            answer = int(rng.integers(6))
            rows[answer, 0] += 3.0
            labels[answer] = 1.0
        else:
            rows[:, 0] -= 2.0
        out.append(Group(f"m{k % 4}", f"c{k}", rows, labels, rows[:, 1]))
    return out


def test_the_fit_learns_the_answering_signal_and_is_deterministic() -> None:
    groups = _groups(0)
    model = fit(groups, seed=0)
    assert int(np.argmax(np.abs(model.weights))) == 0 and model.weights[0] > 0
    again = fit(groups, seed=0)
    assert np.array_equal(model.weights, again.weights)
    test = _groups(1)
    assert top1(test, [model.probabilities(g.rows) for g in test]) > 0.9
    assert top1(test, [g.baseline for g in test]) < 0.5  # the uninformative ranking does not


def test_held_out_threshold_separates_cases_where_nothing_fits() -> None:
    groups = _groups(2, n=80)
    folds, probs = held_out(groups, seed=0)
    assert set(folds) == {"m0", "m1", "m2", "m3"}
    threshold = choose_threshold(groups, probs)
    answering = [float(p.max()) for g, p in zip(groups, probs, strict=True) if g.labels.any()]
    nothing = [float(p.max()) for g, p in zip(groups, probs, strict=True) if not g.labels.any()]
    assert np.mean(np.array(answering) >= threshold) >= 0.9
    assert np.mean(np.array(nothing) < threshold) >= 0.5
