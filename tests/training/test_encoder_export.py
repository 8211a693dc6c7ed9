import numpy as np
import pytest

from training.encoder_export import _quantise, _smoothing, read_source


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


def test_smoothing_moves_a_normed_inputs_outlier_channels_into_the_weights_without_changing_the_product():
    rng = np.random.default_rng(1)
    gamma, beta = np.ones(16, np.float32), np.zeros(16, np.float32)
    gamma[3] = 20.0  # one channel far larger than the rest after the norm
    x = (rng.normal(size=(5, 16)) * gamma + beta).astype(np.float32)
    w = rng.normal(size=(16, 8)).astype(np.float32)
    s = _smoothing(w, gamma, beta)
    smoothed = x / s
    assert np.allclose(smoothed @ (w * s[:, None]), x @ w, rtol=1e-4, atol=1e-4)
    ratio = lambda a: np.abs(a[:, 3]).max() / np.abs(np.delete(a, 3, axis=1)).max()  # noqa: E731
    assert ratio(smoothed) < ratio(x) / 4
