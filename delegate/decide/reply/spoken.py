"""The principal's own voice: profile sentences turned into what the principal says aloud.

A principal writes their background as notes ("Has a visa appointment this Friday", "see [PERSON3]'s
mail; it's running now"); the delegate speaks *as* them: first person, whole sentences that end with
their punctuation, names without mask brackets.
"""

from __future__ import annotations

import re

from wordfreq import zipf_frequency

from delegate.language.text import MASK

COMMON_WORD_ZIPF = 4.5
"""A word this common in English (thirty uses per million words) is not a name: it loses its capital mid-sentence."""

# Subjectless note openers in the third person, and what the principal says instead.
THIRD_PERSON_OPENERS: dict[str, str] = {
    "has": "I have",
    "hasn't": "I haven't",
    "had": "I had",
    "is": "I am",
    "isn't": "I'm not",
    "was": "I was",
    "wasn't": "I wasn't",
    "does": "I do",
    "doesn't": "I don't",
    "did": "I did",
    "didn't": "I didn't",
    "will": "I will",
    "won't": "I won't",
    "would": "I would",
    "can": "I can",
    "can't": "I can't",
    "cannot": "I cannot",
    "could": "I could",
    "should": "I should",
    "must": "I must",
    "needs": "I need",
    "wants": "I want",
    "plans": "I plan",
    "thinks": "I think",
    "knows": "I know",
    "works": "I work",
    "prefers": "I prefer",
    "expects": "I expect",
    "hopes": "I hope",
    "agrees": "I agree",
    "leads": "I lead",
    "owns": "I own",
    "handles": "I handle",
    "manages": "I manage",
    "runs": "I run",
    "uses": "I use",
    "likes": "I like",
    "believes": "I believe",
    "joined": "I joined",
    "sent": "I sent",
    "finished": "I finished",
    "started": "I started",
}
# After one of these, the opener word is not a verb of the principal's ("Has anyone ...?" is a question).
_NOT_SUBJECTLESS_NEXT = frozenset("anyone anybody someone somebody everyone it this that there he she they we you i".split())
_FINAL = re.compile(r"[.!?…]['\")\]]*$")
_CLAUSE_END = re.compile(r"[;:,—–-]+$")


def unmask(text: str, names: dict[str, str]) -> str:
    """`[PERSON3]` as the name the meeting knows for it, or the bare label: nobody says brackets."""
    return MASK.sub(lambda m: names.get(m.group(1), m.group(1)), text)


def first_person(sentence: str) -> str:
    """A note that opens with a subjectless third-person verb ("Has a visa appointment") in the first person."""
    words = sentence.split(maxsplit=2)
    if not words:
        return sentence
    head = words[0].lower().replace("’", "'")
    if head not in THIRD_PERSON_OPENERS or sentence.rstrip().endswith("?"):
        return sentence
    if len(words) > 1 and words[1].lower().strip(",") in _NOT_SUBJECTLESS_NEXT:
        return sentence
    rest = sentence[len(words[0]) :]
    return THIRD_PERSON_OPENERS[head] + rest


def lower_first(text: str) -> str:
    """`text` with its first word in lower case where English writes it so ("Change of plan", "Both have");
    a name, a key or an acronym ("Lena", "HAR-212", "RC3") keeps its capital."""
    first = text.split(" ", 1)[0]
    word = first.strip(".,;:!?")
    if not word[:1].isupper() or not word[1:].islower() or word == "I" or word.startswith(("I'", "I’")):
        return text
    return text[0].lower() + text[1:] if zipf_frequency(word.lower(), "en") >= COMMON_WORD_ZIPF else text


def finished(sentence: str) -> str:
    """The sentence with its final punctuation; a clause cut at `;` or `,` ends with a full stop instead."""
    s = sentence.strip()
    if not s or _FINAL.search(s):
        return s
    return _CLAUSE_END.sub("", s).rstrip() + "."


def spoken(sentences: list[str], names: dict[str, str]) -> str:
    """Sentences of the principal's notes, in order, as one reply they would say."""
    out: list[str] = []
    for k, sentence in enumerate(sentences):
        s = unmask(sentence.strip(), names)
        if not s:
            continue
        continues = bool(out) and out[-1].endswith(";")
        if continues:
            s = lower_first(s)  # "…on nights; Both have…" reads on as one sentence
        else:
            s = first_person(s)
            s = s[0].upper() + s[1:]
        # A clause kept with its own `;` reads on into the next sentence of the same reply.
        last = k == len(sentences) - 1
        out.append(finished(s) if last or not s.endswith(";") else s)
    return " ".join(out)
