"""Words Whisper invents at the end of a short clip, and how to find them.

A decode of one utterance sometimes goes on past the speech: it starts the utterance over ("The long
journey home took a year. The long- journey") or loops on its last words ("9 7 9 7"). Two checks catch
it, one on the audio and one on the words:

- `spoken_segments`: decoded with timestamps, every stretch of text says where it starts; a stretch that
  starts where the speech has already ended was not said.
- `drop_restart`: a tail that says again, word for word or nearly, what the text began with was not said
  twice (a near-repeat: hyphens, spacing and a letter or two may differ).

No faster-whisper here: the token ids it needs are passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

_SENTENCE_END = (".", "?", "!")
_SECONDS_PER_TIMESTAMP = 0.02
_NEAR = 0.8
"""Letters in common (SequenceMatcher ratio) for a tail to count as the beginning said again."""


def _word(w: str) -> str:
    return w.strip(".,?!;:\"'-").lower()


def _letters(words: Sequence[str]) -> str:
    return "".join(_word(w).replace("-", "") for w in words)


def _repeats(tail: Sequence[str], head: Sequence[str]) -> bool:
    """Whether `tail` is `head`'s first words said again, allowing a split or merged word."""
    said = _letters(tail)
    if not said or not head or _word(tail[0]) != _word(head[0]):
        return False  # a restart starts with the same word
    for n in range(max(1, len(tail) - 1), len(tail) + 2):
        if SequenceMatcher(None, said, _letters(head[:n]), autojunk=False).ratio() >= _NEAR:
            return True
    return False


def drop_restart(text: str) -> str:
    """`text` without a trailing restart of itself: "It ends Friday. It ends" -> "It ends Friday."

    The tail must repeat the text's beginning, nearly word for word: two words or more after a sentence
    end, three or more anywhere else (a speaker who restarts mid-sentence is heard, once, as said).
    """
    words = text.split()
    for i in range(1, len(words)):
        tail = words[i:]
        after_end = words[i - 1].endswith(_SENTENCE_END)
        if len(tail) >= (2 if after_end else 3) and len(tail) <= i and _repeats(tail, words[:i]):
            return drop_restart(" ".join(words[:i]))  # "It ends. It ends. It" restarted twice
    return text


def spoken_segments(
    tokens: Sequence[int], *, timestamp_begin: int, eot: int, speech_end_s: float
) -> list[list[int]]:
    """The text tokens of each timestamped stretch that starts before `speech_end_s`, in order.

    Whisper writes `<|t0|> words <|t1|><|t1|> words <|t2|>`; a stretch that starts at or after the end of
    the speech describes the silence after it. Tokens before any timestamp count from 0 s.
    """
    segments: list[list[int]] = []
    current: list[int] = []
    start = 0.0
    for t in tokens:
        if t == eot:
            break
        if t >= timestamp_begin:
            at = (t - timestamp_begin) * _SECONDS_PER_TIMESTAMP
            if current:
                if start < speech_end_s:
                    segments.append(current)
                current = []
            else:
                start = at  # an opening timestamp (a closing one is always followed by text or another)
            continue
        current.append(t)
    if current and start < speech_end_s:
        segments.append(current)
    return segments


def join_segments(texts: Sequence[str]) -> str:
    """The stretches' texts as one, without a stretch that only starts an earlier one over."""
    kept: list[str] = []
    for text in texts:
        words = text.split()
        if not words:
            continue
        if any(len(words) >= 2 and _repeats(words, k.split()) for k in kept):
            continue
        kept.append(text.strip())
    return drop_restart(" ".join(kept))


def drop_loop(text: str) -> str:
    """`text` with a loop at its end said once: "9 7 9 7 9 7 9" -> "9 7".

    Only for a decode that ran into its length bound without ending: it was going round, and a loop says
    its words again and again (the last time cut short) until it is stopped.
    """
    words = text.split()
    keys = [_word(w) for w in words]
    n = len(keys)
    for start in range(n):
        rest = n - start
        for period in range(1, rest // 2 + 1):
            if all(keys[k] == keys[k - period] for k in range(start + period, n)):
                return " ".join(words[: start + period])
    return text
