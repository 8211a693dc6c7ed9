"""Whether a pause ends the speaker's turn, from the audio: smart-turn v3.2.

The model (BSD-2-Clause, Daily; 8 MB ONNX over Whisper-tiny log-Mel features of the turn's last 8 s)
ships inside the pipecat-ai wheel, which the `audio` extra installs; it is loaded from there, never
downloaded. It hears intonation and the unfinished phrase: "so what I think we should" ends low and open,
"can you send it by Friday?" ends the turn. Without it the silence rule alone cuts a turn.
"""

from __future__ import annotations

import threading
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Protocol

import numpy as np

from delegate.asr.base import SAMPLE_RATE

_MODEL_FILE = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
_WINDOW_S = 8  # the model hears the turn's last 8 s, zero-padded in front


_DANGLING = frozenset("the a an and or but of because um uh".split())
"""Words no sentence ends with: a speaker who stops after one has more to say."""


def sounds_finished(text: str) -> bool:
    """Whether recognised words end as a sentence does: Whisper closes what it hears as complete with . ? or !,
    and leaves a phrase it hears go on open ("the grass and bushes,", "I need the...", "a pink shell was f-")."""
    text = text.rstrip()
    if not text or text[-1] not in ".?!" or text.endswith(".."):
        return False
    last = text.rstrip(".?!").split()
    return bool(last) and last[-1].casefold().strip(",;:\"'") not in _DANGLING


class TurnEnd(Protocol):
    """The probability that the speech in `audio` (16 kHz float32, ending at the pause) is a finished turn."""

    def complete(self, audio: np.ndarray) -> float: ...


def smart_turn_path() -> Path:
    """The ONNX file inside the installed pipecat-ai package. Raises ModuleNotFoundError without it."""
    try:
        path = Path(str(distribution("pipecat-ai").locate_file(_MODEL_FILE)))
    except PackageNotFoundError as e:
        raise ModuleNotFoundError("pipecat-ai is not installed", name="pipecat") from e
    if not path.is_file():
        raise FileNotFoundError(f"no smart-turn model at {path} (pipecat-ai without its data files?)")
    return path


class SmartTurn:
    """smart-turn v3.2 on onnxruntime, one session per process (each call ~10-65 ms on a CPU core)."""

    def __init__(self, path: Path | None = None, threads: int = 1) -> None:
        import onnxruntime as ort

        from delegate.asr.pipecat_features import whisper_features

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path or smart_turn_path()), sess_options=options)
        self._features = whisper_features()
        self._lock = threading.Lock()  # one run at a time: streams share the session

    def complete(self, audio: np.ndarray) -> float:
        window = _WINDOW_S * SAMPLE_RATE
        audio = audio[-window:]
        if len(audio) < window:
            audio = np.pad(audio, (window - len(audio), 0))
        features = self._features(audio.astype(np.float32), do_normalize=True)[None]
        with self._lock:
            (probability,) = self._session.run(None, {"input_features": features})
        return float(np.asarray(probability).reshape(-1)[0])


_loaded: SmartTurn | None = None
_load_lock = threading.Lock()


def load_smart_turn() -> SmartTurn:
    """The process-wide model, loaded once."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            _loaded = SmartTurn()
        return _loaded
