import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from delegate.language.encoder import MAX_TOKENS, shipped


def test_paraphrase_is_closer_than_a_sentence_on_another_subject():
    v = shipped().encode(["When does the new GPU server arrive?", "The GPU machine gets delivered next Tuesday.",
                          "I will send the minutes to everyone tonight."])
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_the_answer_to_a_question_outranks_an_item_that_only_shares_its_topic():
    question, answer, topical = shipped().encode([
        "Has anyone heard back from the reviewers about our paper?",
        "The reviewers accepted the paper with minor revisions.",
        "Papers on speech translation are often hard to review.",
    ])
    assert question @ answer > question @ topical


def test_vectors_are_unit_and_batching_does_not_change_them():
    texts = ["Okay.", "Could you share the budget numbers for the third quarter with the whole team, please?", "yes"]
    enc = shipped()
    together = enc.encode(texts)
    enc._cache.clear()  # one by one, each without padding
    alone = np.stack([enc.encode([t])[0] for t in texts])
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-4)


def test_a_long_text_is_read_up_to_its_limit_and_repeated_texts_are_run_once():
    enc = shipped()
    long = " ".join(["budget"] * (MAX_TOKENS * 3))
    first = enc.encode([long, long])
    assert enc.cached(long)
    assert np.array_equal(first[0], first[1]) and np.array_equal(enc.encode([long])[0], first[0])


def test_a_text_many_threads_ask_for_at_once_is_run_once():
    # Many meetings joining with one brief (or taken over together) read the same texts at the same moment.
    enc = shipped()
    texts = [f"The vendor ships the {n} racks to the second data centre before the audit." for n in ("red", "blue")]
    enc.forget(texts)
    before = enc.forwards
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: enc.encode(texts), range(16)))
    assert enc.forwards - before == 1
    assert all(np.array_equal(r, results[0]) for r in results)
    assert np.allclose(np.linalg.norm(results[0], axis=1), 1.0, atol=1e-5)


_ROOT = Path(__file__).resolve().parents[3]
_ELITR = next((p for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared") if (p / "benchmark" / "elitr-dev").is_dir()),
              _ROOT.parent / "shared") / "benchmark" / "elitr-dev"


@pytest.mark.skipif(not _ELITR.is_dir(), reason="shared ELITR dev meetings not available")
def test_the_int8_graph_agrees_with_the_float32_layers_on_real_turns():
    # A few hundred turns of real meetings, short backchannels included: the int8 graph's vectors against
    # the same weights run as float32 numpy layers in this run (int8 kernels differ between processors).
    texts: list[str] = []
    for f in sorted(_ELITR.glob("*.json"))[:6]:
        texts += [u["text"] for u in json.loads(f.read_text())["utterances"][:60]]
    texts = list(dict.fromkeys(texts))
    assert len(texts) >= 200
    enc = shipped()
    enc.forget(texts)
    cosine = (enc.encode(texts) * enc.reference(texts)).sum(1)
    assert cosine.mean() >= 0.99 and cosine.min() >= 0.95
