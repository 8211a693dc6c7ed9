"""The floor reader: a small cross-encoder that reads the last turns, speaker-tagged, and says "this person speaks next".

Its input (`reading`) is built from one candidate's view of the meeting: the brief item that shares the
most words with the talk, the candidate's own last words, and the last three substantive turns, each
tagged `me` (the candidate) or by a letter per other speaker, in the order they last spoke. The network
is the first `LAYERS` layers of the shipped sentence encoder (`delegate.language.encoder`, whose word
embeddings it shares unchanged), fine-tuned with torch on who takes the next turn in QMSum meetings
(`training.floor_reader`), and a linear head over the mean of its last layer. It ships as int8 matrices in
`delegate/weights/floor_reader/` and runs here with numpy; no torch.

It is read only where the cheap turn-taking model is unsure (`turn_taking.TextStack.gate`), and then its
log-odds and the cheap model's are combined by the stack's three fitted numbers.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

import numpy as np

from delegate.language.encoder import dequantised, packed_arrays, tokenizer_json, transformer_layer
from delegate.language.text import content_words
from delegate.meeting import MeetingState
from delegate.models import Profile

LAYERS = 2
CLS, SEP = 101, 102
LATEST_PIECES = 32
"""Word pieces kept of the latest turn: its first 8 (where it is addressed) and its last 24 (where it is handed over)."""
EARLIER_PIECES = 7
"""Word pieces kept of each of the two turns before it (their ends)."""
BRIEF_PIECES = 9
OWN_PIECES = 8
MAX_PIECES = 80
"""What the parts above add up to at most (tags are two pieces each): nothing is cut at the end."""
WEIGHTS_FILE = "floor_reader_int8.npz"
TAGS = ("a", "b", "c")
"""Other speakers, in the order they last spoke (newest first)."""


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str
    text: str


@cache
def _tokenizer():  # type: ignore[no-untyped-def]  # tokenizers ships no stubs for Tokenizer.from_str
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(tokenizer_json())
    tok.no_truncation()
    tok.no_padding()
    return tok


@lru_cache(maxsize=4096)
def pieces(text: str) -> tuple[int, ...]:
    """The text's word pieces, without special tokens (each text is split once and kept)."""
    return tuple(_tokenizer().encode(text, add_special_tokens=False).ids) if text.strip() else ()


@lru_cache(maxsize=64)
def _tag(word: str) -> tuple[int, ...]:
    return pieces(f"{word}:")


def _latest(ids: tuple[int, ...]) -> tuple[int, ...]:
    return ids if len(ids) <= LATEST_PIECES else ids[:8] + ids[-(LATEST_PIECES - 8) :]


def best_item(items: Sequence[str], talk: Sequence[str]) -> str:
    """The brief item sharing the most content words with the talk (the first on a tie; '' without items)."""
    said = frozenset().union(*(content_words(t) for t in talk)) if talk else frozenset()
    best, score = "", -1
    for item in items:
        s = len(content_words(item) & said)
        if s > score:
            best, score = item, s
    return best


def encode(turns: Sequence[Turn], me: str, item: str, own: str) -> list[int]:
    """Word pieces of one reading: [CLS] brief: item [SEP] me: own words [SEP] tag: turn [SEP] ... (oldest to latest)."""
    letters: dict[str, str] = {}
    for t in reversed(turns):
        if t.speaker != me and t.speaker not in letters and len(letters) < len(TAGS):
            letters[t.speaker] = TAGS[len(letters)]
    ids = [CLS, *_tag("brief"), *pieces(item)[:BRIEF_PIECES], SEP, *_tag("me"), *pieces(own)[-OWN_PIECES:], SEP]
    for k, t in enumerate(turns):
        text = pieces(t.text)
        kept = _latest(text) if k == len(turns) - 1 else text[-EARLIER_PIECES:]
        ids += [*_tag("me" if t.speaker == me else letters.get(t.speaker, "d")), *kept, SEP]
    return ids[:MAX_PIECES]


def reading(meeting: MeetingState, candidate: Profile) -> list[int]:
    """The candidate's reading of the meeting now (the same function builds every training row)."""
    me = candidate.speaker_label
    turns = [Turn(t.utterance.speaker, t.utterance.text) for t in list(meeting.recent)[-3:]]
    mine = meeting.said_by(me, last=1)
    items = [b.information for b in candidate.background if b.shareable]
    return encode(turns, me, best_item(items, [t.text for t in turns[-2:]]), mine[-1].text if mine else "")


class FloorReader:
    """`LAYERS` fine-tuned encoder layers and a linear head: log-odds that the reading's `me` speaks next."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        from delegate.language.encoder import shipped as encoder

        self._embed = encoder().embed
        self._layers = [dequantised(arrays, i) for i in range(LAYERS)]
        self._head_w = arrays["head.w"].astype(np.float32)
        self._head_b = float(arrays["head.b"][0])

    def log_odds(self, readings: list[list[int]]) -> np.ndarray:
        from delegate.language.encoder import _blas

        with _blas().limit(limits=1, user_api="blas"):
            x, mask = self._embed(readings)
            for p in self._layers:
                x = transformer_layer(x, p, mask)
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled @ self._head_w + self._head_b


@cache
def shipped() -> FloorReader:
    """The reader shipped in the package (its layers ~3.5 MB at int8), loaded once per process."""
    folder = resources.files("delegate.weights").joinpath("floor_reader")
    with np.load(io.BytesIO(folder.joinpath(WEIGHTS_FILE).read_bytes()), allow_pickle=False) as data:
        return FloorReader({k: data[k] for k in data.files})


def start_arrays() -> dict[str, np.ndarray]:
    """The arrays training starts from: the shipped encoder's first `LAYERS` layers and a zero head."""
    arrays = packed_arrays()
    return {k: v for k, v in arrays.items() if k.split(".")[0].isdigit() and int(k.split(".")[0]) < LAYERS}
