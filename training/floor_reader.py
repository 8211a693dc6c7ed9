"""Fine-tune the floor reader (`delegate.decide.floor_reader`) with torch: who takes the next turn, read from the words.

Rows are self-supervised: after every substantive turn of every QMSum meeting, for each candidate
(`turn_dataset.candidates`), the candidate's reading of the meeting and whether the next substantive turn
is theirs; each candidate has a brief made by `training.briefs`. Each corpus (AMI, ICSI, committees) gives
the same number of rows, negatives subsampled to two per positive, all with a fixed seed. The network
starts from the shipped encoder's first layers (its word embeddings frozen: the shipped run time shares
them), trains with AdamW, and is written back as int8 matrices. Checkpoints every `CHECKPOINT_EVERY`
steps let a long run resume (`--resume`) exactly where it stopped.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from pathlib import Path

import numpy as np

from delegate.addressing import person
from delegate.decide.floor_reader import LAYERS, MAX_PIECES, WEIGHTS_FILE, reading, start_arrays
from delegate.language.encoder import HEADS, HIDDEN, packed_arrays
from delegate.meeting import MeetingState, is_backchannel
from training.briefs import briefs
from training.corpora import TrainingMeeting
from training.turn_dataset import candidates, next_speakers

NEGATIVES_PER_POSITIVE = 2
CHECKPOINT_EVERY = 100


def meeting_readings(meeting: TrainingMeeting, seed: int = 0) -> tuple[list[list[int]], list[int]]:
    """Every candidate's reading after every substantive turn, and whether they took the next turn."""
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    rng = random.Random(seed * 1_000_003 + zlib.crc32(meeting.meeting_id.encode()))
    profiles = briefs(meeting.attendees, meeting.names, meeting.utterances, meeting.meeting_id, meeting.profiles, seed)
    nxt = next_speakers(meeting)
    ids: list[list[int]] = []
    ys: list[int] = []
    for i, u in enumerate(meeting.utterances):
        state.add(u)
        if is_backchannel(u.text) or nxt[i] is None:
            continue
        for label in candidates(state, set(), rng):
            ids.append(reading(state, profiles.get(label) or person(label, state.display_name(label))))
            ys.append(int(nxt[i] == label))
    return ids, ys


def padded(ids: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(ids), MAX_PIECES), dtype=np.int32)
    for k, t in enumerate(ids):
        out[k, : len(t)] = t
    return out


def build_rows(meetings: list[TrainingMeeting], per_corpus: int, seed: int = 0) -> dict[str, np.ndarray]:
    """`per_corpus` rows of each corpus (all its positives up to a third of that, two negatives each), shuffled."""
    rng = np.random.default_rng(seed)
    parts = []
    for corpus in sorted({m.corpus for m in meetings}):
        ids: list[list[int]] = []
        ys: list[int] = []
        for m in (m for m in meetings if m.corpus == corpus):
            a, b = meeting_readings(m, seed)
            ids += a
            ys += b
        y = np.asarray(ys, dtype=np.int8)
        pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        n_pos = min(len(pos), per_corpus // (1 + NEGATIVES_PER_POSITIVE))
        keep = np.concatenate([rng.choice(pos, n_pos, replace=False),
                               rng.choice(neg, min(len(neg), n_pos * NEGATIVES_PER_POSITIVE), replace=False)])
        parts.append((padded([ids[k] for k in keep]), y[keep], np.asarray([corpus] * len(keep))))
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    corpus = np.concatenate([p[2] for p in parts])
    order = rng.permutation(len(y))
    return {"ids": x[order], "y": y[order], "corpus": corpus[order]}


def _torch():  # type: ignore[no-untyped-def]
    """torch, or the ModuleNotFoundError that `delegate.extras` turns into one line naming the train-text extra."""
    import torch

    return torch


def network(torch, arrays: dict[str, np.ndarray]):  # type: ignore[no-untyped-def]
    """The reader as a torch module, the same arithmetic as the numpy run time (post-norm BERT layers, tanh GELU)."""
    nn = torch.nn
    F = torch.nn.functional
    enc = packed_arrays()

    class Layer(nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            self.qkv, self.attn_out = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
            self.up, self.down = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)
            self.ln1, self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12), nn.LayerNorm(HIDDEN, eps=1e-12)
            with torch.no_grad():
                for name in ("qkv", "attn_out", "up", "down"):
                    w = arrays[f"{i}.{name}.q"].astype(np.float32) * arrays[f"{i}.{name}.s"]
                    getattr(self, name).weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
                    getattr(self, name).bias.copy_(torch.from_numpy(arrays[f"{i}.{name}.b"]))
                for name in ("ln1", "ln2"):
                    getattr(self, name).weight.copy_(torch.from_numpy(arrays[f"{i}.{name}.w"]))
                    getattr(self, name).bias.copy_(torch.from_numpy(arrays[f"{i}.{name}.b"]))

        def forward(self, x, bias):  # type: ignore[no-untyped-def]
            n, length, _ = x.shape
            q, k, v = (t.reshape(n, length, HEADS, HIDDEN // HEADS).transpose(1, 2) for t in self.qkv(x).split(HIDDEN, -1))
            att = torch.softmax(q @ k.transpose(-1, -2) * (HIDDEN // HEADS) ** -0.5 + bias, -1)
            ctx = (att @ v).transpose(1, 2).reshape(n, length, HIDDEN)
            x = self.ln1(x + self.attn_out(ctx))
            return self.ln2(x + self.down(F.gelu(self.up(x), approximate="tanh")))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            words = enc["words.q"].astype(np.float32) * enc["words.s"][:, None]
            self.register_buffer("words", torch.from_numpy(words))
            self.register_buffer("pos", torch.from_numpy(enc["positions"] + enc["token_type"]))
            self.register_buffer("ln_w", torch.from_numpy(enc["ln.w"]))
            self.register_buffer("ln_b", torch.from_numpy(enc["ln.b"]))
            self.layers = nn.ModuleList([Layer(i) for i in range(LAYERS)])
            self.head = nn.Linear(HIDDEN, 1)
            with torch.no_grad():  # a zero head, or the trained one when starting from a shipped reader
                self.head.weight.copy_(torch.from_numpy(arrays.get("head.w", np.zeros(HIDDEN, np.float32))[None, :]))
                self.head.bias.copy_(torch.from_numpy(arrays.get("head.b", np.zeros(1, np.float32))))

        def forward(self, ids):  # type: ignore[no-untyped-def]
            length = int((ids > 0).sum(1).max())
            ids = ids[:, :length]
            mask = (ids > 0).float()
            x = F.layer_norm(self.words[ids] + self.pos[:length], (HIDDEN,), self.ln_w, self.ln_b, eps=1e-12)
            bias = ((1.0 - mask) * -1e4)[:, None, None, :]
            for layer in self.layers:
                x = layer(x, bias)
            pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return self.head(pooled).squeeze(-1)

    return Net()


def _quantise(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = np.maximum(np.abs(w).max(axis=0), 1e-8) / 127.0
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def export(net, out: Path) -> Path:  # type: ignore[no-untyped-def]
    """The trained layers as int8 matrices (per output column) and float biases, norms and head."""
    arrays: dict[str, np.ndarray] = {}
    for i, layer in enumerate(net.layers):
        for name in ("qkv", "attn_out", "up", "down"):
            lin = getattr(layer, name)
            arrays[f"{i}.{name}.q"], arrays[f"{i}.{name}.s"] = _quantise(lin.weight.detach().numpy().T.astype(np.float32))
            arrays[f"{i}.{name}.b"] = lin.bias.detach().numpy().astype(np.float32)
        for name in ("ln1", "ln2"):
            arrays[f"{i}.{name}.w"] = getattr(layer, name).weight.detach().numpy().astype(np.float32)
            arrays[f"{i}.{name}.b"] = getattr(layer, name).bias.detach().numpy().astype(np.float32)
    arrays["head.w"] = net.head.weight.detach().numpy()[0].astype(np.float32)
    arrays["head.b"] = net.head.bias.detach().numpy().astype(np.float32)
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / WEIGHTS_FILE, **arrays)
    return out / WEIGHTS_FILE


def train(rows: dict[str, np.ndarray], out: Path, checkpoint: Path, steps: int, batch: int = 32, lr: float = 5e-5,
          seed: int = 0, resume: bool = False, log=print, start: dict[str, np.ndarray] | None = None) -> Path:  # type: ignore[no-untyped-def]
    """Fine-tune for `steps` batches (epochs reshuffled with `seed`), checkpointing; resume from `checkpoint`.
    `start`: the arrays to begin from (a shipped reader's, head included); the encoder's first layers otherwise.
    `rows["y"]` may be a share (two readers who disagree: 0.5)."""
    torch = _torch()
    torch.manual_seed(seed)
    torch.set_num_threads(2)
    net = network(torch, start if start is not None else start_arrays())
    params = [{"params": [p for n, p in net.named_parameters() if not n.startswith("head")], "lr": lr},
              {"params": net.head.parameters(), "lr": 20 * lr}]
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    warm = max(steps // 20, 1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm))))
    start = 0
    if resume and checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        start = state["step"]
        log(f"resumed at step {start} of {steps}")
    x = torch.from_numpy(rows["ids"].astype(np.int64))
    y = torch.from_numpy(rows["y"].astype(np.float32))
    n = len(y)
    per_epoch = n // batch
    order: np.ndarray | None = None
    epoch = -1
    t0, loss_sum, since = time.perf_counter(), 0.0, 0
    net.train()
    for step in range(start, steps):
        if step // per_epoch != epoch:
            epoch = step // per_epoch
            order = np.random.default_rng(seed + epoch).permutation(n)
        assert order is not None
        idx = torch.from_numpy(order[(step % per_epoch) * batch : (step % per_epoch + 1) * batch])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        loss_sum += float(loss.detach())
        since += 1
        if (step + 1) % CHECKPOINT_EVERY == 0 or step + 1 == steps:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "step": step + 1}, checkpoint)
            done = step + 1 - start
            log(json.dumps({"step": step + 1, "of": steps, "loss": round(loss_sum / since, 4),
                            "s_per_step": round((time.perf_counter() - t0) / done, 3)}))
            loss_sum, since = 0.0, 0
    net.eval()
    return export(net, out)
