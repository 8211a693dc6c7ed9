"""Training on careful readers' labels: agreement, exact rows of labelled moments, boosting appended to the trees."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lightgbm")

from benchmark.scoring.data import FIXTURES  # noqa: E402
from delegate.decide.turn_taking import TurnTakingModel, shipped  # noqa: E402
from training.corpora import bench_meetings  # noqa: E402
from training.floor_readers import (  # noqa: E402
    Label,
    boost_rows,
    boosted,
    expand,
    kappa,
    log_odds,
    read_key,
    read_labels,
    reader_rows,
)
from training.reader_moments import walk  # noqa: E402


def test_kappa_is_cohens_on_the_doubly_labelled_moments_only():
    # Four moments read twice: agree on three (two speak, one silent), differ on one; one moment read once.
    pairs = [(True, True), (True, True), (False, False), (True, False)]
    labels = [Label(f"M{k}", f"R{j}", j, s) for k, pair in enumerate(pairs) for j, s in enumerate(pair, 1)]
    labels.append(Label("M9", "R1", 1, False))
    got = kappa(labels)
    a, b = np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float)
    pe = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    assert got["moments"] == 4 and got["agreement"] == 0.75
    assert got["kappa"] == round((0.75 - pe) / (1 - pe), 4)
    assert kappa([Label("M1", "R1", 1, True)]) == {"moments": 0}


def _labelled(tmp_path: Path) -> tuple[Path, list[dict]]:
    meeting = bench_meetings(FIXTURES, "fixture")[0]
    seen = [(s.index, s.candidate, s.features) for s in walk(meeting)][::2][:90]
    lines = []
    for k, (index, candidate, _) in enumerate(seen):
        lines.append({"moment": f"M{k:04d}", "meeting_id": meeting.meeting_id, "corpus": "fixture", "utterance": index,
                      "candidate": candidate, "packet": 1, "reader": "R01", "speak": k % 3 == 0})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path, [{"x": x} for _, _, x in seen]


def test_a_labelled_moments_row_is_rebuilt_exactly_and_kept_for_the_next_run(tmp_path):
    path, expected = _labelled(tmp_path)
    key = read_key(path)
    meetings = bench_meetings(FIXTURES, "fixture")
    first = reader_rows(meetings, key, set(key), tmp_path / "rows.npz", jobs=1)
    order = np.argsort(first.moment)
    assert np.allclose(first.x[order], np.asarray([e["x"] for e in expected]))
    assert (first.ids[:, 0] > 0).all()  # a floor reader reading for every moment
    # A second run with the same labels reads the kept rows: nothing of a meeting is rebuilt.
    again = reader_rows([], key, set(key), tmp_path / "rows.npz", jobs=1)
    assert sorted(again.moment) == sorted(first.moment)


def test_boosted_trees_are_appended_to_the_next_speaker_trees_and_move_them_towards_the_readers(tmp_path):
    path, _ = _labelled(tmp_path)
    key = read_key(path)
    rows = reader_rows(bench_meetings(FIXTURES, "fixture"), key, set(key), tmp_path / "rows.npz", jobs=1)
    votes = {lab.moment: [lab.speak] for lab in read_labels(path)}
    base = shipped().model_copy(update={"text": None})
    z = log_odds(base, rows.x)
    idx, y, w = expand(np.arange(len(rows)), [votes[m] for m in rows.moment])
    booster = boost_rows(rows.x, z, idx, y, w, seed=0)
    model = boosted(base, booster, 0.4)
    assert isinstance(model, TurnTakingModel) and model.reader is None and model.threshold == 0.4
    assert len(model.trees) == len(base.trees) + booster.num_trees()
    # Walked in plain Python, the appended ensemble is the base log-odds plus the readers' trees.
    assert np.allclose(log_odds(model, rows.x), z + booster.predict(rows.x, raw_score=True), atol=1e-6)
    loss = lambda zz: float(np.mean(np.logaddexp(0, zz[idx]) - y * zz[idx]))  # noqa: E731
    assert loss(log_odds(model, rows.x)) < loss(z)
