import numpy as np
import pytest

from training.encoder_export import _quantise, read_source


def test_int8_packing_keeps_each_column_within_its_scale():
    w = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    q, s = _quantise(w)
    assert q.dtype == np.int8 and s.shape == (8,)
    assert np.abs(q * s - w).max() <= s.max() / 2 + 1e-7


def test_other_weights_than_the_packed_model_are_refused(tmp_path):
    safetensors = pytest.importorskip("safetensors.numpy")
    (tmp_path / "model.safetensors").write_bytes(safetensors.save({"x": np.zeros(3, dtype=np.float32)}))
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="other weights"):
        read_source(tmp_path)
