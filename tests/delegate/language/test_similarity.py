import numpy as np

from delegate.language.similarity import embedding, forget, overlap, similarity


def test_paraphrase_scores_above_an_unrelated_sentence():
    a = "I have an appointment at the embassy for my visa on Friday."
    assert similarity(a, "My visa appointment at the embassy is this Friday.") > 0.6
    assert similarity(a, "The nightly ETL job failed because of expired credentials.") < 0.35


def test_symmetric_and_bounded():
    a, b = "Send the slides to Dana tonight.", "Dana gets the slides this evening."
    assert abs(similarity(a, b) - similarity(b, a)) < 1e-6
    assert similarity(a, a) > 0.99
    assert 0.0 <= similarity(a, b) <= 1.0


def test_blank_text_is_zero_not_nan():
    assert not np.isnan(embedding("")).any() and float(np.linalg.norm(embedding("   "))) == 0.0
    assert similarity("", "anything at all") == 0.0


def test_overlap_floor_keeps_one_shared_word_from_matching_a_long_text():
    long = "the budget for the venue and the catering and travel"
    assert overlap("budget", long) == 1 / 3  # over the floor of 3, not over the one word
    assert overlap("budget venue", long) == 2 / 3
    assert overlap("budget", "budget") == 1.0  # both sets smaller than the floor
    assert overlap("the and of", long) == 0.0


def test_forget_drops_a_cached_embedding():
    text = "A sentence only this test uses."
    first = embedding(text)
    forget([text])
    assert np.allclose(embedding(text), first)
