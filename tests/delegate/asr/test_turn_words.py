"""The words' end-of-turn model: trained from meeting transcripts, judged on meetings it never saw, wired into the cut."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from benchmark.asr import REAL_SPEECH, load_clips
from delegate.asr.turn_words import TurnWords, bucket_of, features, load_turn_words, tokens
from delegate.asr.whisper import SAMPLE_RATE, StreamingTranscriber, load_speech_model, read_audio
from training.turn_end_words import matrix, run

SHARED = Path(os.environ.get("DELEGATE_SHARED", Path(__file__).resolve().parents[3] / ".." / "shared"))
QMSUM = SHARED / "corpora" / "qmsum"


def test_tokens_keep_questions_and_commas_and_drop_the_closing_full_stop():
    assert tokens("So, what do we DO? Okay.") == ["so", ",", "what", "do", "we", "do", "?", "okay"]


def test_the_shipped_model_loads_and_holds_what_goes_on_more_than_what_hands_over():
    model = load_turn_words()
    assert model is not None and 0 < model.threshold < 1
    going_on = ["So what I think we should", "First the budget, and", "Because the"]
    handing_over = ["Does that make sense?", "Could you give us an update on the testing?"]
    assert max(model.ends(t) for t in going_on) < min(model.ends(t) for t in handing_over)
    assert all(model.goes_on(t) for t in going_on)
    assert not any(model.goes_on(t) for t in handing_over)


@pytest.mark.skipif(not QMSUM.is_dir(), reason="QMSum is not beside the checkout")
def test_on_meetings_it_never_saw_turn_ends_score_above_places_inside_turns():
    """QMSum's validation meetings (the weights were fitted on its train meetings only)."""
    from sklearn.metrics import roc_auc_score

    model = load_turn_words()
    assert model is not None
    val = sorted((QMSUM / "val").glob("IS*.json"))[:3]
    x, y = matrix(val, seed=1)
    size = len(model.weights)
    assert x.shape[1] == size
    p = 1 / (1 + np.exp(-(x @ model.weights.astype(np.float64))))
    assert roc_auc_score(y, p) > 0.7
    assert (p[y == 0] < model.threshold).mean() > (p[y == 1] < model.threshold).mean() + 0.3


def _meeting(path: Path, turns: list[tuple[str, str]]) -> None:
    path.write_text(json.dumps({"meeting_transcripts": [{"speaker": s, "content": c} for s, c in turns]}))


def test_training_writes_weights_the_model_reads_and_a_card_with_held_out_figures(tmp_path):
    talk = [
        ("A", "So the first thing is , um , the budget and {disfmarker} and the plan ."),
        ("B", "Does that make sense ?"),
        ("A", "Yeah , I think so ."),
        ("B", "Okay , and the second thing , which is the timeline , is still open ."),
        ("A", "Right ."),
    ] * 20
    for split, names in (("train", ["ES2002a", "ES2003a", "Bed002", "Bed003"]), ("val", ["IS1000a", "Bmr001"])):
        (tmp_path / split).mkdir()
        for name in names:
            _meeting(tmp_path / split / f"{name}.json", talk)
    out = tmp_path / "w" / "turn_words.npz"
    report = run(tmp_path, out, seed=0)
    card = json.loads(out.with_suffix(".json").read_text())
    assert card == report and card["qmsum_val"]["meetings"] == 2
    assert {"fit_without_ami", "fit_without_icsi"} <= card.keys()
    model = TurnWords.load(out)
    assert model.goes_on("So the first thing is, um, the budget and")
    assert not model.goes_on("Does that make sense?")


def _held(words: TurnWords) -> float:
    """Audio streamed past the end of a real spoken sentence before its final, with smart-turn and `words`."""
    from delegate.asr.turn_end import load_smart_turn

    model = load_speech_model()
    clip = next(c for c in load_clips(REAL_SPEECH) if c.name.startswith("jfk"))
    audio = np.frombuffer(read_audio(clip.path), "<i2").astype(np.float32) / 32768
    end = clip.segments[-1].end
    audio = np.concatenate([audio[: int((end + 0.1) * SAMPLE_RATE)], np.zeros(3 * SAMPLE_RATE, np.float32)])
    stream = StreamingTranscriber(
        model, partial_every_s=3600.0, turn_end=load_smart_turn(), turn_words=words, turn_wait_s=1.5
    )
    pcm = (audio * 32767).astype("<i2").tobytes()
    step = SAMPLE_RATE // 10 * 2
    for offset in range(0, len(pcm), step):
        if any(e.final for e in stream.feed(pcm[offset : offset + step])):
            return (offset + step) / 2 / SAMPLE_RATE - end
    return float("inf")


def test_words_that_go_on_hold_the_turn_open_longer_than_words_that_end_it():
    """The same model weights everywhere but the bias: one that says every phrase goes on, one that says it ends."""
    size = 64
    goes_on, ends = np.zeros(size, np.float32), np.zeros(size, np.float32)
    goes_on[bucket_of("bias", size)], ends[bucket_of("bias", size)] = -9.0, 9.0
    assert "bias" in set(features([]))
    held, cut = _held(TurnWords(goes_on, 0.5)), _held(TurnWords(ends, 0.5))
    assert cut < 1.0 <= held < 2.0, (cut, held)
