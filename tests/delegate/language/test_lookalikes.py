"""Look-alike letters read as what they imitate, by Unicode's confusables data."""

from __future__ import annotations

from delegate.language.lookalikes import skeleton


def test_look_alike_letters_read_as_the_latin_letter_they_imitate() -> None:
    assert skeleton("Zanzibaг") == "Zanzibar"  # Cyrillic г
    assert skeleton("Zaոzibar") == "Zanzibar"  # Armenian ո
    assert skeleton("ΖΑΝΖΙΒΑR") == "ZANZIBAR"  # Greek
    assert skeleton("𝐙𝐚𝐧𝐳𝐢𝐛𝐚𝐫") == "Zanzibar"


def test_ascii_stays_as_written_and_the_two_letters_that_are_not_their_own_prototype_are_read_back() -> None:
    assert skeleton("m I l 0 1 | rn") == "m I l 0 1 | rn"
    # Bold m (prototype "rn"); Cyrillic І and bold l (both prototype "l"), told apart by their case.
    assert skeleton("𝐦 І 𝐥") == "m I l"


def test_accents_stay_on_their_letters() -> None:
    # NFD: "ë" is "e" and a combining diaeresis, which anyascii drops in the guard's reading.
    assert skeleton("Zoë") == "Zoe\u0308"
