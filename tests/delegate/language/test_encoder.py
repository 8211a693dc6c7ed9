from concurrent.futures import ThreadPoolExecutor

import numpy as np

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
