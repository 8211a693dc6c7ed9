"""Is this utterance addressing person X? Names, aliases, initials, `[PERSONk]` masks and ASR-garbled names.

A name can be *addressed* (vocative: "[PERSON5], what is your status?", "...right, Sirui?") or merely
*mentioned* ("as [PERSON5] said"). Garbled names ("Sirui" heard as "Siri" or "three") are accepted only
where a name is expected — the vocative slots at the edges of a clause — and where the odd word sounds
like the name (Metaphone codes from jellyfish) and is spelled like it (rapidfuzz similarity).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

import jellyfish
from rapidfuzz.distance import JaroWinkler
from rapidfuzz.fuzz import ratio

from delegate.language.text import CACHED_TEXT_CHARS, clean
from delegate.models import Profile


class Reference(StrEnum):
    addressed = "addressed"
    """Spoken to: "[X], what is your status?"."""
    named = "named"
    """Named in passing, neither clearly spoken to nor clearly spoken about: "maybe [X] also knows"."""
    mentioned = "mentioned"
    """Spoken about: "as [X] said", "[X]'s mail"."""
    absent = "absent"


@dataclass(frozen=True, slots=True)
class NameHit:
    reference: Reference
    form: str
    """What matched: `mask`, `name`, `alias`, `initials` or `garbled`."""
    surface: str
    score: float


ABSENT = NameHit(Reference.absent, "", "", 0.0)

_TOKEN = re.compile(r"\[[A-Z]+\d*\]|['’]s\b|[^\W\d_](?:[^\W_]|['’-])*|[0-9]+|[,.;:?!—–-]")
_NAME_PART = re.compile(r"[^\W\d_](?:[^\W_]|['’-])*")
_END = frozenset("?.!")
_PAUSE = frozenset(",;:—–-")

# Words before a name that make it third-person: "as [X] said", "with [X]", "and [X]".
_MENTION_BEFORE = frozenset(
    "as with from to by about of for and or than like that at between among without including told asked "
    "ask tell call email mail invite cc contact send sent wrote write the".split()
)
# Words after a name that make it third-person: "[X] said", "[X] and [Y] liked", "[X]'s mail".
_MENTION_AFTER = frozenset(
    "said says told has had was is were did does wrote sent mentioned thinks thought knows wants wanted "
    "and or will would came went presented showed asked gave found made prepared created proposed suggested "
    "agreed explained replied answered works worked himself herself mentions".split()
)
# "[X] will present", "[X] is going to tell us": a third-person form that hands over the floor.
_HANDOFF_VERBS = frozenset("present tell show say give explain report update talk share start continue go".split())
# "move to [X]", "over to [X]", "turn to [X]": the floor is handed to X.
_HANDOVER = frozenset("move moving over turn pass go back hand".split())
# Words that open a request or question right after a vocative name: "[X] can you ...", "[X] what ...".
_REQUEST_AFTER = frozenset(
    "can could would will do did are is have what how when where why which who please you your any maybe "
    "if let do".split()
)
# Words before a name in a vocative slot: "so [X],", "okay [X]", "thanks [X]", "what about [X]?".
_VOCATIVE_BEFORE = frozenset(
    "so okay ok yes yeah well now and hi hello hey thanks thank right then about um uh eh ehm mhm alright "
    "sorry maybe also".split()
)
# Words that fit the slot before "..., could you" on their own, so are never taken for a garbled name.
_NOT_NAMES = frozenset(
    "you your yes yeah yep the and but so okay ok well right sure sorry please thanks thank this that there "
    "then they them we us our it is was be do does did can could would should will have has had not no now "
    "here what when where which who why how all any some one maybe also just like really very still "
    "actually anyway first second third finally again honestly basically alright guys everyone everybody "
    "folks team people friends sir madam look listen see wait hold sorry otherwise besides meanwhile however "
    "therefore instead perhaps indeed sure fine great good cool nice exactly absolutely definitely true "
    "today tomorrow yesterday later next last before after also too and or nope hmm mhm uh um eh ehm oh ah "
    "hi hello hey bye thanks cheers welcome "
    # Forms of address fill the vocative slot too: "Thank you, Chair.", "Mr. Chair, ...".
    "chair chairman chairwoman chairperson convener convenor president minister member members colleague "
    "colleagues professor doctor mister mr mrs ms miss dear".split()
)
# Sound pairs speech recognisers swap; folded before comparing codes ("Sirui" heard as "three").
_FOLD = (("th", "s"), ("sh", "s"), ("ch", "j"), ("ph", "f"), ("z", "s"), ("v", "w"), ("x", "ks"), ("ck", "k"))
# More pairs, for names from outside English: aspirated consonants, "y"/"i" and "w"/"u" glides, long vowels.
_FOLD_WIDE = _FOLD + (("kh", "k"), ("dh", "d"), ("bh", "b"), ("gh", "g"), ("y", "i"), ("w", "u"), ("ou", "u"), ("ee", "i"))


@dataclass(frozen=True, slots=True)
class GarbleModel:
    """How `sounds_like` weighs sound against spelling, and from which score a word is taken for a name.

    Chosen by `python -m benchmark.garble_match --tune` on recogniser garbles of half the names of
    `benchmark/names/first_names.txt`, under a false-positive budget on real meeting sentences.
    """

    phonetic: float = 0.45
    """Weight of the phonetic-code similarity; spelling (Jaro-Winkler) gets the rest."""
    initial: float = 0.05
    """Bonus when the first consonant sound is the same: listeners and recognisers keep it most."""
    threshold: float = 0.71
    folds: tuple[tuple[str, str], ...] = _FOLD_WIDE
    span_words: int = 3
    """Longest run of words read as one garbled name in a vocative slot ("She won, ..." for Siobhan)."""
    span_threshold: float = 0.78
    """Score from which such a run is taken for the name: runs of ordinary words sound like more names."""


GARBLE = GarbleModel()
GARBLE_THRESHOLD = GARBLE.threshold
"""`sounds_like` score from which a name-like word is taken for the person's garbled name."""


def _fold(word: str, folds: tuple[tuple[str, str], ...] = _FOLD) -> str:
    for a, b in folds:
        word = word.replace(a, b)
    return word


@lru_cache(maxsize=4096)
def _codes(word: str) -> tuple[str, str]:
    # Metaphone and NYSIIS work on English letters: "Jürgen" is coded as "jurgen".
    w = re.sub(r"[^a-z]", "", unicodedata.normalize("NFKD", word.lower()).encode("ascii", "ignore").decode())
    if not w:
        return ("", "")
    return (jellyfish.metaphone(w), jellyfish.nysiis(w))


def sounds_like(heard: str, name: str, model: GarbleModel = GARBLE) -> float:
    """How plausibly ASR produced `heard` for `name`: 0..1, from phonetic codes and spelling."""
    h, n = heard.lower(), name.lower()
    if h == n:
        return 1.0
    if len(h) < 3 or len(n) < 3:
        return 0.0
    hm, hn = _codes(h)
    nm, nn = _codes(n)
    fm, fn = _codes(_fold(h, model.folds))
    gm, gn = _codes(_fold(n, model.folds))
    phon = max(ratio(hm, nm), ratio(hn, nn), ratio(fm, gm), ratio(fn, gn)) / 100.0
    spell = JaroWinkler.similarity(h, n)
    score = model.phonetic * phon + (1.0 - model.phonetic) * spell
    if hm[:1] and (hm[:1] == nm[:1] or fm[:1] == gm[:1]):
        score += model.initial
    return min(score, 1.0)


@dataclass(frozen=True, slots=True)
class NameForms:
    """Every way a principal can be written in a transcript."""

    masks: frozenset[str]
    words: frozenset[str]
    """Lower-case single-word names and aliases (first name, last name, nick names, label)."""
    phrases: tuple[tuple[str, ...], ...]
    """Lower-case multi-word names ("sirui zhao") as token tuples."""
    initials: frozenset[str]
    garble_targets: tuple[str, ...]
    """Names long enough to be recognised when garbled."""


@lru_cache(maxsize=1024)
def _forms(name: str, aliases: tuple[str, ...], label: str | None) -> NameForms:
    masks: set[str] = set()
    words: set[str] = set()
    phrases: list[tuple[str, ...]] = []
    initials: set[str] = set()
    for n in (name, *aliases, *( [label] if label else [] )):
        n = n.strip()
        if not n:
            continue
        if re.fullmatch(r"[A-Z]+\d+", n):
            masks.add(f"[{n}]")
            continue
        if n.startswith("[") and n.endswith("]"):
            masks.add(n)
            continue
        parts = [p.lower() for p in _NAME_PART.findall(n)]
        if len(parts) == 1:
            words.add(parts[0])
        elif len(parts) > 1:
            phrases.append(tuple(parts))
            words.add(parts[0])
            if len(parts[-1]) > 3:
                words.add(parts[-1])
            initials.add("".join(p[0] for p in parts))
    garble = tuple(sorted(w for w in words if len(w) >= 4))
    return NameForms(frozenset(masks), frozenset(words), tuple(phrases), frozenset(initials), garble)


def forms_of(person: Profile) -> NameForms:
    return _forms(person.name, tuple(person.aliases), person.label)


def _tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_word(tok: str) -> bool:
    return tok[:1].isalnum() or tok.startswith("[")


def _slot_reference(toks: list[str], i: int, j: int) -> Reference:
    """Whether the name spanning toks[i:j] is addressed or mentioned, from the words around it."""
    before = toks[i - 1].lower() if i > 0 else ""
    before2 = toks[i - 2].lower() if i > 1 else ""
    after = toks[j].lower() if j < len(toks) else ""
    after2 = toks[j + 1].lower() if j + 1 < len(toks) else ""
    at_start = i == 0 or before in _END or before in _PAUSE or (before in _VOCATIVE_BEFORE and (i < 2 or before2 in _END | _PAUSE))
    at_end = j >= len(toks) or after in _END
    if after.startswith("'") or after in ("'s", "’s"):
        return Reference.mentioned
    if before in ("about",) and before2 in ("what", "how") and at_end:
        return Reference.addressed
    if before == "to" and before2 in _HANDOVER:
        return Reference.addressed
    if before == "and" and after in _PAUSE and i > 1 and (before2.startswith("[") or toks[i - 2][:1].isupper()):
        return Reference.addressed  # "[X] and [Y], we are going to ..."
    if before in _MENTION_BEFORE and not (before in ("and", "so") and at_start):
        return Reference.mentioned
    if after in ("will", "is", "can", "could", "would", "should") and after2 in ("going", *_HANDOFF_VERBS):
        return Reference.addressed
    if after in _MENTION_AFTER:
        return Reference.mentioned
    if (after in _PAUSE or after in _END) and (at_start or before in _PAUSE or at_end or before in _VOCATIVE_BEFORE):
        return Reference.addressed
    if at_start and (after in _REQUEST_AFTER or after in _PAUSE):
        return Reference.addressed
    if before in _PAUSE and at_end:
        return Reference.addressed
    if at_start and at_end:
        return Reference.addressed
    return Reference.named


def _garble_slot(toks: list[str], i: int) -> bool:
    """A single word at i sits where a vocative name would: `X, ...` at a clause start or `..., X?` at the end."""
    before = toks[i - 1].lower() if i > 0 else ""
    after = toks[i + 1] if i + 1 < len(toks) else ""
    clause_start = i == 0 or before in _END or before in _PAUSE or before in _VOCATIVE_BEFORE
    if clause_start and after in _PAUSE:
        return True
    if before in _PAUSE and (after in _END or after == ""):
        return True
    return clause_start and after.lower() in ("can", "could", "would", "do", "are", "what", "how") and i == 0


def _name_like(toks: list[str], i: int) -> bool:
    """A capitalised word inside a sentence (recognisers capitalise names), or any word in a vocative slot."""
    tok = toks[i]
    sentence_start = i == 0 or toks[i - 1] in _END
    return (tok[:1].isupper() and not sentence_start and tok != "I") or _garble_slot(toks, i)


def find(
    text: str,
    person: Profile,
    others: frozenset[str] = frozenset(),
    model: GarbleModel = GARBLE,
    unheard: frozenset[str] = frozenset(),
) -> NameHit:
    """The strongest reference to `person` in `text`: addressed, then named, then mentioned, then absent.

    `others` are lower-case name words of the other attendees: a word that is someone else's name is
    never taken for a garbled form of this person's. `unheard` are lower-case names the recogniser checked
    against the audio and found not said (`Utterance.names_unheard`): a person with one of them is absent,
    whatever word of the text looks like their name.
    """
    if unheard and not unheard.isdisjoint(forms_of(person).words):
        return ABSENT
    if len(text) > CACHED_TEXT_CHARS:
        return _find(text, forms_of(person), others, model)
    return _find_cached(text, forms_of(person), others, model)


def _find(text: str, forms: NameForms, others: frozenset[str], model: GarbleModel = GARBLE) -> NameHit:
    toks = _tokenize(clean(text))
    best = ABSENT
    lower = [t.lower() for t in toks]
    for i, tok in enumerate(toks):
        hit: NameHit | None = None
        if tok in forms.masks:
            hit = NameHit(_slot_reference(toks, i, i + 1), "mask", tok, 1.0)
        elif _is_word(tok):
            lw = lower[i]
            for phrase in forms.phrases:
                if tuple(lower[i : i + len(phrase)]) == phrase:
                    hit = NameHit(_slot_reference(toks, i, i + len(phrase)), "name", " ".join(toks[i : i + len(phrase)]), 1.0)
                    break
            if hit is None and lw in forms.words and (tok[0].isupper() or lw not in _NOT_NAMES):
                hit = NameHit(_slot_reference(toks, i, i + 1), "alias", tok, 0.95)
            elif hit is None and tok.isupper() and len(tok) >= 2 and lw in forms.initials:
                hit = NameHit(_slot_reference(toks, i, i + 1), "initials", tok, 0.85)
            elif (
                hit is None
                and forms.garble_targets
                and lw not in _NOT_NAMES
                and lw not in others
                and _name_like(toks, i)
            ):
                score = max(sounds_like(lw, target, model) for target in forms.garble_targets)
                if score >= model.threshold:
                    ref = Reference.addressed if _garble_slot(toks, i) else _slot_reference(toks, i, i + 1)
                    hit = NameHit(ref, "garbled", tok, score)
        if hit is not None and _rank(hit) > _rank(best):
            best = hit
    if best.reference is not Reference.addressed and forms.garble_targets and model.span_words > 1:
        best = max(best, _garbled_span(toks, lower, forms, others, model), key=_rank)
    return best


def _garbled_span(toks: list[str], lower: list[str], forms: NameForms, others: frozenset[str], model: GarbleModel) -> NameHit:
    """A name a recogniser split into words, alone in a vocative slot: "She won, what do you think?".

    The run must fill the slot: from a clause start up to a pause, or from a pause to the end.
    """
    best = ABSENT
    n = len(toks)
    for i in range(n):
        after_pause = i > 0 and toks[i - 1] in _PAUSE
        # "You know, ...", "So then, ...": a run opened by a word that fills the slot on its own is no name.
        if not (i == 0 or after_pause or toks[i - 1] in _END) or lower[i] in _NOT_NAMES:
            continue
        for j in range(i + 1, min(n, i + model.span_words) + 1):
            if not _NAME_PART.fullmatch(lower[j - 1]) or lower[j - 1] in others:
                break
            after = toks[j] if j < n else ""
            if j - i < 2 or not (after in _PAUSE or (after_pause and (after in _END or not after))):
                continue
            joined = re.sub(r"['’-]", "", "".join(lower[i:j]))
            score = max(sounds_like(joined, target, model) for target in forms.garble_targets)
            if score >= model.span_threshold and score > best.score:
                best = NameHit(Reference.addressed, "garbled", " ".join(toks[i:j]), score)
    return best


# Every session of a meeting asks the same question of the same utterance for each attendee.
_find_cached = lru_cache(maxsize=8192)(_find)


def _rank(hit: NameHit) -> tuple[int, float]:
    order = {Reference.absent: 0, Reference.mentioned: 1, Reference.named: 2, Reference.addressed: 3}
    return (order[hit.reference], hit.score)
