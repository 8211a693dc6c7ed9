"""A pretrained sentence encoder (all-MiniLM-L6-v2): texts to unit vectors whose cosine is meaning.

The model ships in the package (`delegate/weights/encoder/`, built by `training.encoder_export` from the
Apache-2.0 model; see docs/turn-taking.md): its word-piece table packed to int8 in an .npz, looked up here
with numpy, and its six BERT layers, mean pooling and normalisation as an ONNX graph with int8 weight
matrices, run by ONNX Runtime on one thread (its int8 kernels use AVX-512 VNNI or AVX2 where the processor
has them: a few ms a short text, against ~25 ms for the same layers as float32 numpy matmuls). The
tokenizer is the model's own `tokenizer.json` read with `tokenizers`: nothing is downloaded. Callers
embed each text once (`Encoder.encode` keeps a bounded cache) and only where the cheap signals are unsure.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from delegate.language.deferred import check_deferred

if TYPE_CHECKING:
    import onnxruntime

LAYERS = 6
HEADS = 12
HIDDEN = 384
MAX_TOKENS = 64
"""Word pieces read per text: a turn's first 64 (the cost grows with length; callers pass the part that matters)."""
MODEL_FILE = "minilm_l6_int8.npz"
TOKENIZER_FILE = "tokenizer.json"
GRAPH_FILE = "minilm_l6_int8.onnx"
"""The six layers, pooling and normalisation as an ONNX graph with int8 weight matrices (`training.encoder_export`)."""
CACHE_SIZE = 8192
_EPS = 1e-12
_SCALE = (HIDDEN // HEADS) ** -0.5


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + _EPS) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    # The tanh form of BERT's erf GELU: within 1e-3 of it, and numpy has no vectorised erf.
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def dequantised(arrays: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
    """Layer `i` of packed int8 arrays as float32 (dequantised once: BLAS then runs at full speed)."""
    return {
        **{f"{n}.w": arrays[f"{i}.{n}.q"].astype(np.float32) * arrays[f"{i}.{n}.s"] for n in ("qkv", "attn_out", "up", "down")},
        **{f"{n}.b": arrays[f"{i}.{n}.b"] for n in ("qkv", "attn_out", "up", "down", "ln1", "ln2")},
        **{f"{n}.w": arrays[f"{i}.{n}.w"] for n in ("ln1", "ln2")},
    }


def transformer_layer(x: np.ndarray, p: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
    """One BERT layer (post-norm) over (n, length, HIDDEN) in float32 numpy; `mask` marks the real word pieces."""
    n, length = x.shape[:2]
    bias = ((1.0 - mask) * -1e4)[:, None, None, :]
    head = HIDDEN // HEADS
    qkv = x @ p["qkv.w"] + p["qkv.b"]
    q, k, v = (qkv[..., j * HIDDEN : (j + 1) * HIDDEN].reshape(n, length, HEADS, head).transpose(0, 2, 1, 3) for j in range(3))
    att = q @ k.transpose(0, 1, 3, 2) * _SCALE + bias
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, HIDDEN)
    x = _layer_norm(x + ctx @ p["attn_out.w"] + p["attn_out.b"], p["ln1.w"], p["ln1.b"])
    return _layer_norm(x + _gelu(x @ p["up.w"] + p["up.b"]) @ p["down.w"] + p["down.b"], p["ln2.w"], p["ln2.b"])


def _pooled(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-9)


class Encoder:
    """all-MiniLM-L6-v2: mean-pooled, unit-normalised 384-dimensional sentence vectors, with a bounded cache."""

    dim = HIDDEN

    def __init__(self, arrays: dict[str, np.ndarray], tokenizer_json: str, graph: bytes) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(tokenizer_json)
        self._tok.enable_truncation(MAX_TOKENS)
        self._tok.no_padding()
        self._arrays = arrays
        self._words_q = arrays["words.q"]
        self._words_s = arrays["words.s"]
        self._pos = arrays["positions"]
        self._type = arrays["token_type"]
        self._ln = (arrays["ln.w"], arrays["ln.b"])
        self._session = _session(graph)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._running: dict[str, threading.Event] = {}
        """Texts some thread is running now, and what tells their waiters it is done."""
        self._lock = threading.Lock()
        self.forwards = 0
        """Batches run through the network so far (tests count them: a text read twice is run once)."""

    def embed(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Word pieces (padded to the longest) to the first layer's input, and the mask of real pieces."""
        n, length = len(ids), max(len(t) for t in ids)
        tok = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for k, t in enumerate(ids):
            tok[k, : len(t)] = t
            mask[k, : len(t)] = 1.0
        x = self._words_q[tok].astype(np.float32) * self._words_s[tok][..., None] + self._pos[:length] + self._type
        return _layer_norm(x, *self._ln).astype(np.float32), mask

    def _forward(self, ids: list[list[int]]) -> np.ndarray:
        # One text a call: the graph quantises its activations with one scale per call, so a text read in
        # a batch would come out a little different from the same text read alone (and from its cached self).
        vectors = []
        for t in ids:
            x, mask = self.embed([t])
            vectors.append(self._session.run(None, {"x": x, "mask": mask})[0][0])
        return np.asarray(vectors, dtype=np.float32)

    def reference(self, texts: list[str]) -> np.ndarray:
        """The same model's vectors from float32 numpy layers (~25 ms a text, not cached): what the int8 graph is held to."""
        layers = [dequantised(self._arrays, i) for i in range(LAYERS)]
        x, mask = self.embed([e.ids for e in self._tok.encode_batch(texts)])
        with _blas().limit(limits=1, user_api="blas"):
            for p in layers:
                x = transformer_layer(x, p, mask)
        return _pooled(x, mask).astype(np.float32)

    def encode(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """Unit vectors (len(texts), 384); each distinct text is run once and kept (the latest `CACHE_SIZE`).

        A text another thread is running now is waited for, not run again: many meetings joining at once
        with one brief (or taken over together after a failover) pay for it once, not once each.
        """
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        waits: dict[str, list[int]] = {}
        with self._lock:
            for k, t in enumerate(texts):
                hit = self._cache.get(t)
                if hit is not None:
                    self._cache.move_to_end(t)
                    out[k] = hit
                elif t in self._running:
                    waits.setdefault(t, []).append(k)
                else:
                    todo.setdefault(t, []).append(k)
            check_deferred([*todo, *waits], self.encode)
            running = threading.Event()
            for t in todo:
                self._running[t] = running
        try:
            self._run(todo, out, batch)
        finally:
            with self._lock:
                for t in todo:
                    if self._running.get(t) is running:
                        del self._running[t]
            running.set()
        for t, ks in waits.items():
            out[ks] = self._after(t)
        return out

    def _run(self, todo: dict[str, list[int]], out: np.ndarray, batch: int) -> None:
        pending = sorted(todo, key=len)  # similar lengths batch with little padding
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            vecs = self._forward([e.ids for e in self._tok.encode_batch(chunk)])
            with self._lock:
                self.forwards += 1
                for t, v in zip(chunk, vecs, strict=True):
                    v.setflags(write=False)
                    self._cache[t] = v
                    for k in todo[t]:
                        out[k] = v
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)

    def _after(self, text: str) -> np.ndarray:
        """The vector of a text another thread was running (run here if that thread failed or it was evicted)."""
        with self._lock:
            running = self._running.get(text)
        if running is not None:
            running.wait()
        with self._lock:
            hit = self._cache.get(text)
        return hit if hit is not None else self.encode([text])[0]

    def cached(self, text: str) -> bool:
        return text in self._cache

    def forget(self, texts: list[str]) -> None:
        """Drop these texts from the cache (a benchmark times their first reading)."""
        with self._lock:
            for t in texts:
                self._cache.pop(t, None)


def _session(graph: bytes) -> onnxruntime.InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    # One thread a reading: the matrices are small, callers run readings in parallel worker threads, and
    # on a busy machine a pool of threads per call spins against the others.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


@cache
def _blas():  # type: ignore[no-untyped-def]  # threadpoolctl has no stubs
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def packed_arrays() -> dict[str, np.ndarray]:
    """The shipped int8 arrays as stored (the floor reader's training starts from them)."""
    folder = resources.files("delegate.weights").joinpath("encoder")
    with np.load(io.BytesIO(folder.joinpath(MODEL_FILE).read_bytes()), allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


@cache
def tokenizer_json() -> str:
    return resources.files("delegate.weights").joinpath("encoder").joinpath(TOKENIZER_FILE).read_text(encoding="utf-8")


@cache
def shipped() -> Encoder:
    """The encoder shipped in the package, loaded once per process (~0.5 s)."""
    folder = resources.files("delegate.weights").joinpath("encoder")
    return Encoder(packed_arrays(), tokenizer_json(), folder.joinpath(GRAPH_FILE).read_bytes())
