"""Look-alike letters read as what they imitate: the Unicode confusables skeleton (UTS #39, section 4).

The data is Unicode's `confusables.txt` as `confusable_homoglyphs` ships it in its wheel (loaded from
there, never downloaded). That package has no skeleton function, and it stores each confusable pair
both ways: a character that has one homoglyph, when that one has none but it, is a source and the
homoglyph its prototype. A pair whose direction the data leaves open (two non-ASCII characters, each
the other's only homoglyph) resembles no ASCII letter, and transliteration reads it anyway.
"""

from __future__ import annotations

import string
import unicodedata
from functools import lru_cache


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    from confusable_homoglyphs.confusables import confusables_data  # loads its JSON: only when first needed

    table: dict[str, str] = {}
    for char, homoglyphs in confusables_data.items():
        if len(char) != 1 or len(homoglyphs) != 1:
            continue
        target = homoglyphs[0]["c"]
        if target.isascii() or len(target) > 1 or len(confusables_data.get(target, ())) > 1:
            table[char] = target
    # Two letters are not their own prototype: "m" is "rn" and "I" is "l". A look-alike with that
    # prototype reads as the letter when it has the letter's case (Cyrillic "І" as "I", bold "𝐥" as "l").
    letters = {table[c]: c for c in string.ascii_letters if c in table}
    return {
        c: letters[target] if target in letters and c.isupper() == letters[target].isupper() else target
        for c, target in table.items()
        if not c.isascii()
    }


def skeleton(text: str) -> str:
    """`text` with every non-ASCII character as the prototype it is confusable with ("Zanzibaг": "Zanzibar").

    ASCII stays as written: the guard compares with the principal's items as they are written, where
    "m" is an "m" (the full skeleton would read it as "rn") and "0" a digit.
    """
    if text.isascii():
        return text
    table = _prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def warm_up() -> None:
    """Load the confusables data now (a fraction of a second) rather than in the first disguised text."""
    _prototypes()
