"""The floor reader's training path (torch): the shipped numpy run time computes what was trained, and a run resumes."""

import sys

import numpy as np
import pytest

from delegate.decide.floor_reader import WEIGHTS_FILE, FloorReader, Turn, encode
from training import floor_reader as fr


def _rows() -> dict[str, np.ndarray]:
    talk = [
        ([Turn("A", "What do you think about the budget?")], 1),
        ([Turn("A", "I will send the minutes after lunch.")], 0),
        ([Turn("B", "Could you check the numbers for us?")], 1),
        ([Turn("B", "The room is booked until five.")], 0),
    ] * 2
    ids = [encode(turns, "C", "the budget is ready", "I did the numbers") for turns, _ in talk]
    return {"ids": fr.padded(ids), "y": np.asarray([y for _, y in talk], dtype=np.int8), "corpus": np.asarray(["ami"] * len(talk))}


def test_without_torch_the_command_names_the_extra(monkeypatch):
    from delegate.extras import missing_extra

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ModuleNotFoundError) as e:
        fr._torch()
    assert "pip install 'meeting-delegate[train-text]'" in str(missing_extra(e.value))


def test_the_numpy_run_time_reads_as_the_trained_network_does(tmp_path):
    torch = pytest.importorskip("torch")
    from delegate.decide.floor_reader import start_arrays

    torch.manual_seed(0)
    net = fr.network(torch, start_arrays())
    with torch.no_grad():
        net.head.weight.normal_(0.0, 0.5)
    net.eval()
    rows = _rows()
    with torch.no_grad():
        expected = net(torch.from_numpy(rows["ids"].astype(np.int64))).numpy()
    path = fr.export(net, tmp_path)
    with np.load(path) as data:
        got = FloorReader({k: data[k] for k in data.files}).log_odds([[t for t in r if t] for r in rows["ids"].tolist()])
    assert np.abs(got - expected).max() < 0.05 * max(1.0, float(np.abs(expected).max()))  # int8 matrices, float32 torch


def test_an_interrupted_run_resumes_to_the_same_weights(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(fr, "CHECKPOINT_EVERY", 2)
    rows = _rows()
    straight = fr.train(rows, tmp_path / "straight", tmp_path / "a.pt", steps=4, batch=4)

    class Killed(Exception):
        pass

    def killed_at_first_checkpoint(line: str) -> None:
        raise Killed(line)

    with pytest.raises(Killed):
        fr.train(rows, tmp_path / "resumed", tmp_path / "b.pt", steps=4, batch=4, log=killed_at_first_checkpoint)
    lines: list[str] = []
    resumed = fr.train(rows, tmp_path / "resumed", tmp_path / "b.pt", steps=4, batch=4, resume=True, log=lines.append)
    assert lines[0] == "resumed at step 2 of 4"
    with np.load(straight) as a, np.load(resumed) as b:
        assert a.files == b.files and resumed.name == WEIGHTS_FILE
        for k in a.files:
            np.testing.assert_allclose(a[k], b[k], atol=1e-5)
        assert not np.allclose(a["head.w"], 0)  # it did learn something
