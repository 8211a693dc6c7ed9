from delegate.language.text import CACHED_TEXT_CHARS, clean, content_words, stem, tokens, word_count


def test_tokens_keep_masks_and_drop_markup():
    assert tokens("So [PERSON3], the <unintelligible/> data's ready?") == ("so", "[PERSON3]", "the", "data's", "ready")
    assert clean("a <laugh/> b") == "a   b"


def test_content_words_are_stemmed_without_stop_words():
    assert content_words("We tested the recordings yesterday") == frozenset({"test", "recording", "yesterday"})
    assert stem("studies") == "study" and stem("is") == "is"


def test_long_texts_give_the_same_answers_uncached():
    long = "budget " * (CACHED_TEXT_CHARS // 7 + 10)
    assert len(long) > CACHED_TEXT_CHARS
    assert content_words(long) == frozenset({"budget"}) and word_count(long) == CACHED_TEXT_CHARS // 7 + 10
