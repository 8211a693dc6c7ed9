"""The floor reader fine-tuned on careful readers' labels: the moments are rebuilt as the delegate sees them,
fine-tuning starts from the shipped reader, and every fold is scored without its meetings' labels."""

import json

import numpy as np
import pytest

from benchmark.scoring.data import FIXTURES
from delegate.decide import floor_reader
from delegate.decide.turn_taking import shipped
from training import floor_reader as fr
from training.corpora import bench_meetings
from training.floor_text import labels as fl
from training.reader_moments import walk


@pytest.fixture(scope="module")
def meetings():
    return bench_meetings(FIXTURES, "fixture")


def test_a_labelled_moment_is_what_walk_sees(meetings):
    m = meetings[0]
    seen = [(s.index, s.candidate, s.features, floor_reader.reading(s.state, s.profile)) for s in walk(m)]
    pick = seen[::37]
    got = {(i, c): (x, ids) for i, c, x, ids, _ in fl.meeting_moments(m, [(i, c) for i, c, _, _ in pick], shipped())}
    assert len(pick) > 5 and all(got[(i, c)] == (x, ids) for i, c, x, ids in pick)


def test_precision_at_the_recall_a_model_has():
    y = np.array([1, 0, 1, 1, 0, 0])
    s = np.array([0.9, 0.8, 0.7, 0.2, 0.1, 0.0])
    assert fl.precision_at_recall(y, s, 2 / 3) == pytest.approx(2 / 3)  # cut after 0.7: 2 of 3 speaks right
    assert fl.precision_at_recall(y, s, 1.0) == pytest.approx(3 / 4)
    assert fl.precision_at_recall(y, np.ones(6), 0.5) == pytest.approx(0.5)  # ties go in together


def test_two_readers_count_twice_and_may_disagree():
    y, s = fl.expanded(np.array([[1, 2], [0, 1], [2, 2]]), np.array([0.3, 0.1, 0.9]))
    assert y.tolist() == [1, 0, 0, 1, 1] and s.tolist() == [0.3, 0.3, 0.1, 0.9, 0.9]


def test_each_elitr_meeting_is_a_fold_and_no_meeting_spans_two():
    meeting = ["e2", "e1", "ES2002a", "e2", "ES2002a", "B001"]
    corpus = ["elitr", "elitr", "ami", "elitr", "ami", "icsi"]
    f = fl.folds(meeting, corpus)
    assert f[1] == 0 and f[0] == f[3] == 1 and f[2] == f[4]
    with pytest.raises(ValueError):
        fl.folds([f"e{k}" for k in range(10)], ["elitr"] * 10)


def test_fine_tuning_starts_from_the_shipped_reader_and_learns_the_labels(tmp_path):
    torch = pytest.importorskip("torch")
    talk = [("Could you tell us where the budget stands?", 1.0), ("I will book the room for Friday then.", 0.0),
            ("What do you think about the pipeline, is it ready?", 1.0), ("Okay, we move on to the next point.", 0.0)] * 2
    ids = [floor_reader.encode([floor_reader.Turn("A", t)], "C", "the budget is ready", "") for t, _ in talk]
    rows = {"ids": fr.padded(ids), "y": np.asarray([y for _, y in talk], dtype=np.float32)}
    start = fl.shipped_arrays()
    net = fr.network(torch, start).eval()
    with torch.no_grad():
        before = net(torch.from_numpy(rows["ids"].astype(np.int64))).numpy()
    # Built from the shipped weights, the torch network reads as the shipped numpy reader (int8 vs float32).
    np.testing.assert_allclose(before, floor_reader.shipped().log_odds(ids), atol=0.05 * max(1.0, float(np.abs(before).max())))
    path = fr.train(rows, tmp_path, tmp_path / "c.pt", steps=12, batch=8, lr=1e-4, start=start, log=lambda _: None)
    after = fl.text_log_odds(path, ids)
    y = rows["y"] == 1
    assert after[y].mean() - after[~y].mean() > before[y].mean() - before[~y].mean()


def test_no_fold_learns_from_its_held_out_meetings(meetings, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    labels = []
    for m in meetings:
        for k, s in enumerate(walk(m)):
            if k % 23 == 0:
                labels.append(fl.Label(f"M{len(labels)}", m.meeting_id, m.corpus, s.index, s.candidate, bool(s.y or k % 3 == 0)))
    rows = fl.build_rows(meetings, labels)
    rows.corpus = ["elitr" if m in (meetings[0].meeting_id, meetings[1].meeting_id) else "ami" for m in rows.meeting]
    trained_on: dict[str, set[str]] = {}
    real = fl.fine_tune

    def recording(rows_, train, out, *args, **kwargs):
        trained_on[out.name] = {rows_.meeting[k] for k in np.flatnonzero(train)}
        return real(rows_, train, out, *args, **kwargs)

    monkeypatch.setattr(fl, "fine_tune", recording)
    report = fl.evaluate(rows, tmp_path, steps=2, lr=1e-5, log=lambda _: None)
    fold = fl.folds(rows.meeting, rows.corpus)
    assert len(trained_on) == len(set(fold.tolist())) >= 3
    for k, seen in trained_on.items():
        held = {m for m, f in zip(rows.meeting, fold, strict=True) if f == int(k)}
        assert held and not held & seen
    elitr = report["sets"]["ELITR dev (leave-one-meeting-out)"]
    assert elitr["labels"] == sum(v[1] for v, c in zip(rows.votes, rows.corpus, strict=True) if c == "elitr")
    assert all(0.0 <= a <= 1.0 for a in report["sets"]["all"]["auc"].values())
    assert json.loads((tmp_path / "report.json").read_text())["moments"] == len(rows.moment)
