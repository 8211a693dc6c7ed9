"""The privacy guard: whether a text about to leave the service gives away a non-shareable background item.

Every text the service sends or records on the principal's behalf passes `check` (or `safe_text`):
decision speech and reasons, action descriptions, excerpts and offers, and any future answer. The rule
is code, so it holds whatever an LLM writes; it is built so that the shareable items, the intents and the
transcript can still be quoted:

- A private item's *secret terms* are its words that nothing shareable carries (shareable items, intents,
  the principal's names). Its *distinctive* terms are the secret terms the transcript has not said either.
- `private_name`: one distinctive name-like word (rare in English by `wordfreq`, as "Globex", or
  capitalised inside a sentence and not very common, as "Petra"; not "December") is a leak, also spelled out ("G-L-O-B-E-X", "G l o b e x", "Glo-bex"), written in another script
  (transliterated with `anyascii`) or disguised with look-alike letters ("Zanzibaг", "Ｇｌｏｂｅｘ":
  `delegate.language.lookalikes`, Unicode's confusables data).
- `private_number`: one distinctive number (>= 10, a decimal, or with a scale word) is a leak, in digits
  or in words, in English, French, Spanish, German, Italian, Portuguese or Dutch (`text2num`).
- `private_words`: two distinctive ordinary words of one item (or its only one) are a leak.
- `confirmation`: when the last turns said an item's secret term (an attendee's guess, "Is the buyer
  Globex?"), a reply that affirms or denies ("Yes, that's right", "No") or repeats the term is a leak;
  so is a reply that says a secret term with a yes or a no, however long ago the meeting guessed it.

What a word rule cannot catch: a secret paraphrased or translated into other ordinary words ("the buyer"
as "l'acheteur"); names and numbers survive translation and are caught. So the first line of defence
stays that private items never reach a prompt (`delegate.llm.prompts`); this guard is the last one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import Literal

from anyascii import anyascii
from pydantic import BaseModel, ConfigDict
from text_to_num import alpha2digit
from wordfreq import zipf_frequency

from delegate.language import lookalikes
from delegate.language.text import STOPWORDS, cached_when_short, content_words, tokens
from delegate.models import Decision, Profile, ProposedAction

GuardRule = Literal["private_name", "private_number", "private_words", "confirmation"]

RARE_ZIPF = 3.0
"""A word rarer than this in English (per billion words: 10^3 = 1,000) is name-like: alone it gives an item away."""
NAME_ZIPF = 4.5
"""A word capitalised inside a sentence is a name unless it is this common (months, weekdays, "John" are)."""
MIN_RARE_CHARS = 4
QUOTABLE_TURNS = 60
"""The latest transcript turns whose words the delegate may quote (the session and the benchmark pass these)."""
PROBE_TURNS = 3
"""How many of the latest transcript turns can hold a guess that a reply would confirm."""
PUBLIC_TEXT_CHARS = 4000
"""Of a long transcript turn, the guard reads this much as quotable: past it, a term counts as unsaid (safe side)."""
NUMBER_LANGUAGES = ("en", "fr", "es", "de", "it", "pt", "nl")

_SCALES = {
    "k": 1e3, "thousand": 1e3, "thousands": 1e3, "mil": 1e3, "tausend": 1e3, "mille": 1e3, "duizend": 1e3,
    "m": 1e6, "mn": 1e6, "mio": 1e6, "million": 1e6, "millions": 1e6, "millones": 1e6, "millon": 1e6,
    "millionen": 1e6, "milioni": 1e6, "milhoes": 1e6, "miljoen": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9, "billions": 1e9, "milliard": 1e9, "milliarden": 1e9, "mrd": 1e9,
}  # fmt: skip
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:[.,]\d{3})*(?:[.,]\d+)?)\s*([A-Za-z]+)?")
"""A number as written, and the word after it when that is a scale ("5 million", "42M"); text is folded to ASCII."""
_SPELLED = re.compile(r"(?<!\w)(?:\w[\s\-._*·/]{1,3}){2,}\w(?!\w)")
_ASSENT = re.compile(
    r"\b(yes|yeah|yep|yup|correct|exactly|indeed|confirm\w*|affirmative|precisely|spot on|got it|guessed|"
    r"(?:that'?s|you'?re|is|it'?s) (?:right|true|it)|no|nope|wrong|incorrect|false|den(?:y|ies|ied)|"
    r"oui|s[ií]|ja|genau|richtig|exact[oa]?|vrai|certo|klopt)\b",
    re.IGNORECASE,
)


class GuardVerdict(BaseModel):
    """Whether a text may leave; when not, which rule and which private item (by index) it hit."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    rule: GuardRule | None = None
    item: int | None = None


ALLOWED = GuardVerdict(allowed=True)


def _readings(text: str) -> tuple[str, ...]:
    """`text` in ASCII: transliterated ("Zürich" as "Zurich", "Глобекс" as "Globeks"), and, when that
    differs, with look-alike letters as what they imitate ("Zanzibaг" as "Zanzibar", not "Zanzibag")."""
    if text.isascii():
        return (text,)
    readings = (anyascii(text), anyascii(lookalikes.skeleton(text)))
    return readings if readings[0] != readings[1] else readings[:1]


def _fold(text: str) -> str:
    return "\n".join(_readings(text))


@lru_cache(maxsize=65536)
def _rare(word: str) -> bool:
    if len(word) < MIN_RARE_CHARS:
        return False
    if word.isalpha():
        return zipf_frequency(word, "en") < RARE_ZIPF
    # Letters and digits together ("zanzibar3", "x42b") are codes and identifiers: as telling as a name.
    return word.isalnum() and any(c.isalpha() for c in word) and any(c.isdigit() for c in word)


def _value(digits: str, scale: str | None) -> float | None:
    plain = digits.replace(",", "") if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", digits) else digits
    plain = plain.replace(",", ".")
    if plain.count(".") > 1:
        plain = plain.replace(".", "")
    try:
        value = float(plain)
    except ValueError:
        return None
    return value * _SCALES.get((scale or "").lower(), 1.0)


def _strong_number(value: float, scale: str | None) -> bool:
    return value >= 10 or value != int(value) or (scale or "").lower() in _SCALES


@cached_when_short
def numbers(text: str) -> frozenset[float]:
    """Every number `text` states, in digits or in words of the supported languages, as values."""
    found: set[float] = set()
    folded = _fold(text)
    variants = {folded}
    for lang in NUMBER_LANGUAGES:
        try:
            variants.add(alpha2digit(folded, lang))
        except Exception:  # text2num refuses odd inputs; the digits as written still count
            continue
    for variant in variants:
        for m in _NUMBER.finditer(variant):
            scale = m.group(2) if m.group(2) and m.group(2).lower() in _SCALES else None
            value = _value(m.group(1), scale)
            if value is not None and _strong_number(value, scale):
                found.add(round(value, 6))
    return frozenset(found)


@cached_when_short
def _words(text: str) -> tuple[frozenset[str], frozenset[str], str]:
    """Lower-case words (spelled-out runs joined), stemmed content words, and the letters alone (per reading)."""
    readings = _readings(text)
    raw: set[str] = set()
    for reading in readings:
        raw |= set(tokens(reading))
        for m in _SPELLED.finditer(reading):
            raw.add(re.sub(r"[^0-9a-z]", "", m.group(0).lower()))
    squashed = " ".join(re.sub(r"[^a-z]", "", reading.lower()) for reading in readings)
    return frozenset(raw), content_words("\n".join(readings)), squashed


class _Text:
    """What the guard reads in one text (its numbers only when a private item has one: they cost most)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.words, self.stems, self.squashed = _words(text)

    @cached_property
    def values(self) -> frozenset[float]:
        return numbers(self.text)


class _Secrets:
    """What one private item says that nothing shareable says: its rare words, numbers, ordinary words."""

    def __init__(self, rare: frozenset[str], values: frozenset[float], plain: frozenset[str]) -> None:
        self.rare, self.values, self.plain = rare, values, plain

    def minus(self, words: frozenset[str], stems: frozenset[str], values: frozenset[float]) -> _Secrets:
        return _Secrets(self.rare - words, self.values - values, self.plain - stems)

    def said_in(self, text: _Text) -> GuardRule | None:
        if self.rare & text.words or any(len(w) >= 5 and w in text.squashed for w in self.rare):
            return "private_name"
        if self.values and self.values & text.values:
            return "private_number"
        hits = self.plain & text.stems
        if hits and len(hits) >= min(2, len(self.plain)):
            return "private_words"
        return None

    def guessed_in(self, turn: _Text) -> bool:
        """A turn names the secret: a rare word or a number of it, or three of its ordinary words."""
        return self.said_in(turn) in ("private_name", "private_number") or len(self.plain & turn.stems) >= 3


_PROPER = re.compile(r"(?<![.!?:;]\s)(?<!^)\b([A-Z][a-z]+(?:[A-Z][a-z]*)*)\b")


def _proper_nouns(text: str) -> frozenset[str]:
    """Capitalised words inside a sentence ("with Petra Kowalczyk"): names, however common as words."""
    found = {m.group(1).lower() for reading in _readings(text) for m in _PROPER.finditer(reading.strip())}
    return frozenset(
        w for w in found if len(w) >= MIN_RARE_CHARS and w not in STOPWORDS and zipf_frequency(w, "en") < NAME_ZIPF
    )


def _stem_of(word: str) -> str:
    found = content_words(word)
    return next(iter(found)) if found else word


@lru_cache(maxsize=256)
def _vocabulary(texts: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str], frozenset[float]]:
    words: set[str] = set()
    stems: set[str] = set()
    values: set[float] = set()
    for text in texts:
        read = _Text(text)
        words |= read.words
        stems |= read.stems
        values |= read.values
    return frozenset(words), frozenset(stems), frozenset(values)


@lru_cache(maxsize=1024)
def _secrets(private: tuple[tuple[int, str], ...], shareable: tuple[str, ...]) -> tuple[tuple[int, _Secrets], ...]:
    words, stems, values = _vocabulary(shareable)
    out = []
    for i, information in private:
        item_words, item_stems, _ = _words(information)
        rare = frozenset(w for w in item_words if _rare(w)) | _proper_nouns(information)
        secrets = _Secrets(rare, numbers(information), item_stems - {_stem_of(w) for w in rare})
        out.append((i, secrets.minus(words, stems, values)))
    return tuple(out)


def _principal_secrets(principal: Profile) -> tuple[tuple[int, _Secrets], ...]:
    private = tuple((i, b.information) for i, b in enumerate(principal.background) if not b.shareable)
    shareable = [b.information for b in principal.background if b.shareable]
    shareable += [b.context for b in principal.background]
    shareable += [*principal.intents, principal.name, *principal.aliases, principal.label or ""]
    return _secrets(private, tuple(shareable))


def warm_up() -> None:
    """Load the word frequencies now (seconds, once per process) rather than in the first check."""
    zipf_frequency("globex", "en")
    alpha2digit("forty two", "en")
    lookalikes.warm_up()


def check(
    text: str, principal: Profile, public_texts: Sequence[str] = (), *, recent: Sequence[str] | None = None
) -> GuardVerdict:
    """Whether `text` may leave the service on `principal`'s behalf.

    `public_texts`: what was said in the meeting and may be quoted (the transcript the text answers).
    `recent`: the turns the text replies to, where an attendee's guess can sit; default: the last
    `PROBE_TURNS` of `public_texts`. Pass `()` for texts that answer no one (action descriptions).
    """
    if not text.strip() or all(b.shareable for b in principal.background):
        return ALLOWED
    secrets = _principal_secrets(principal)
    read = _Text(text)
    said = {i for i, item in secrets if item.said_in(read) is not None}
    assents = bool(_ASSENT.search(_fold(text)))
    if not said and not assents:
        return ALLOWED
    if said:
        # What the meeting already said may be quoted; only the rest of a private item is secret.
        public = _vocabulary(tuple(t[:PUBLIC_TEXT_CHARS] for t in public_texts))
        for i, item in secrets:
            rule = item.minus(*public).said_in(read) if i in said else None
            if rule is not None:
                return GuardVerdict(allowed=False, rule=rule, item=i)
        if assents:
            # A private term said back with a yes or a no confirms or denies it, however many turns ago
            # the meeting guessed it: quoting is for what the meeting says, not for settling its guesses.
            return GuardVerdict(allowed=False, rule="confirmation", item=min(said))
    turns = list(public_texts[-PROBE_TURNS:]) if recent is None else list(recent)
    for turn in turns:
        heard = _Text(turn[:PUBLIC_TEXT_CHARS])
        for i, item in secrets:
            # The turn names the secret (a guess): neither confirm nor deny it, nor say it back.
            if (assents or i in said) and item.guessed_in(heard):
                return GuardVerdict(allowed=False, rule="confirmation", item=i)
    return ALLOWED


def safe_text(
    text: str,
    principal: Profile,
    public_texts: Sequence[str] = (),
    *,
    recent: Sequence[str] | None = None,
    withheld: str = "",
) -> str:
    """`text` if the guard lets it leave, else `withheld`."""
    return text if check(text, principal, public_texts, recent=recent).allowed else withheld


class Blocked(BaseModel):
    """One text the guard kept back: which field, which rule, which private item (never the words)."""

    model_config = ConfigDict(frozen=True)

    field: str
    rule: GuardRule | None
    item: int | None


REASON_WITHHELD = "(withheld: the reason touched a private item)"


def guard_decision(
    decision: Decision, principal: Profile, public_texts: Sequence[str]
) -> tuple[Decision, list[Blocked]]:
    """The decision as it may leave: blocked speech becomes silence, a blocked reason a placeholder."""
    update: dict[str, object] = {}
    blocked: list[Blocked] = []
    if decision.spoke:
        verdict = check(decision.speak, principal, public_texts)
        if not verdict.allowed:
            blocked.append(Blocked(field="speak", rule=verdict.rule, item=verdict.item))
            update |= {
                "speak": "",
                "used_background": [],
                "used_intents": [],
                "used_sources": [],
                "reason": f"stays silent: the privacy guard withheld the speech (rule {verdict.rule})",
            }
    reason = str(update.get("reason", decision.reason))
    verdict = check(reason, principal, public_texts, recent=())
    if not verdict.allowed:
        blocked.append(Blocked(field="reason", rule=verdict.rule, item=verdict.item))
        update["reason"] = REASON_WITHHELD
    return (decision.model_copy(update=update) if update else decision), blocked


def guard_action(
    action: ProposedAction, principal: Profile, public_texts: Sequence[str]
) -> Blocked | None:
    """Whether an action's texts (description, excerpt, offer) may leave; the first blocked one if not."""
    for field in ("description", "supporting_excerpt", "offer", "due"):
        text = getattr(action, field) or ""
        verdict = check(text, principal, public_texts, recent=())
        if not verdict.allowed:
            return Blocked(field=field, rule=verdict.rule, item=verdict.item)
    return None
