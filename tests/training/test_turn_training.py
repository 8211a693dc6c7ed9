import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lightgbm")

from benchmark.scoring.data import FIXTURES  # noqa: E402
from delegate.decide.turn_taking import FEATURES  # noqa: E402
from training.corpora import bench_meetings, qmsum_meeting  # noqa: E402
from training.turn_dataset import build, next_speakers  # noqa: E402
from training.turn_model import auc, export, fit  # noqa: E402

SHARED = Path(os.environ.get("DELEGATE_SHARED", Path(__file__).resolve().parents[2] / ".." / "shared"))
QMSUM = SHARED / "corpora" / "qmsum" / "train"


def test_labels_are_the_next_substantive_speaker():
    m = bench_meetings(FIXTURES, "fixture")[0]
    nxt = next_speakers(m)
    i = next(k for k, u in enumerate(m.utterances[:-3]) if nxt[k] is not None)
    following = next(u for u in m.utterances[i + 1 :] if u.speaker == nxt[i])
    assert following.speaker == nxt[i]


@pytest.mark.skipif(not QMSUM.is_dir(), reason="shared QMSum meetings not available")
def test_model_learns_who_takes_the_floor_on_unseen_meetings():
    ami = sorted(QMSUM.glob("ES20*.json"))[:8]
    train = build([qmsum_meeting(p) for p in ami[:6]])
    test = build([qmsum_meeting(p) for p in ami[6:]])
    assert train.x.shape[1] == len(FEATURES) and 0.1 < train.y.mean() < 0.5
    booster = fit(train, seed=0, rounds=60)
    p = booster.predict(test.x)
    assert auc(test.y, p) > 0.7
    # The exported arrays, walked in plain Python, give LightGBM's own probabilities.
    model = export(booster, 0.5, {"ami": 6})
    mine = np.asarray([model.probability(list(map(float, row))) for row in test.x[:200]])
    assert np.allclose(mine, p[:200], atol=1e-6)


def test_model_learns_on_our_fixtures_alone():
    meetings = bench_meetings(FIXTURES, "fixture")
    train, test = build(meetings[:3]), build(meetings[3:])
    booster = fit(train, seed=0, rounds=40)
    assert auc(test.y, booster.predict(test.x)) > 0.65


def test_benchmark_cases_become_rows_labelled_by_whether_the_principal_spoke():
    from benchmark.scoring.data import load
    from delegate.decide.turn_taking import READER_FEATURES
    from training.turn_dataset import case_rows

    bench = load(FIXTURES)[0]
    rows = case_rows(bench, "fixture")
    assert rows.case.all() and 0 < rows.y.sum() < len(rows)  # matched cases and negatives both
    assert rows.e.shape == (len(rows), len(READER_FEATURES) - 1) and np.isfinite(rows.e).all()
    # Cases settled by a name never reach the model, so they are no rows.
    named = sum(c.variant == "matched" and c.scenario.value == "explicit_cue" for c in bench.cases)
    assert rows.y.sum() <= sum(c.variant == "matched" for c in bench.cases) - named + 1


def test_the_reader_learns_from_briefs_on_meetings_it_did_not_see():
    from training.turn_model import fit_reader, readable, reader_x

    meetings = bench_meetings(FIXTURES, "fixture")
    train, test = build(meetings[:3], read=True), build(meetings[3:], read=True)
    assert readable(train).all() and not np.isnan(train.e).any()
    prior = np.full(len(train), float(train.y.mean()))
    booster = fit_reader(train, prior, seed=0)
    assert auc(test.y, booster.predict(reader_x(test, np.full(len(test), float(train.y.mean()))))) > 0.65
