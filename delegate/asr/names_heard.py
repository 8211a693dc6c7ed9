"""Names checked against the audio: was an attendee's name said where the recogniser wrote something else?

tiny.en, even told the names in its prompt, writes a name it does not know as what it sounds like ("Sirui"
as "Siri", "Tigist" as "Can you", or nothing). People are called in two places of a sentence: before
it ("Anna, could you ...", "Okay, Anna, ...") and after it ("... right, Anna?"). For the principal's name
and each way the words there could hide it (the first or last one or two words, or none: the name
dropped), `name_readings` writes the transcript with the name in; the recogniser scores each reading
and the heard text against the audio (delegate.asr.whisper `SpeechModel.score_texts`), and
`best_reading` keeps a reading only when the audio supports it at least as well as the heard text.

A word that only looks like a name ("Rain, every example, go ahead" for Anna) loses against the audio,
and an utterance with no name where one could be gains none: the check writes names that were said.
The name then goes to the decision as checked and not said (`Heard.unheard`), so that the look-alike
is not read as the name there either.
No faster-whisper here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MAX_HIDDEN_WORDS = 2
"""Words a garbled name may have become ("Sirui" as "Sir, we")."""
_OPENERS = frozenset("okay ok so thanks thank hey hi well right and now yes".split())
"""A word before a vocative name: "Okay, Anna, ...", "Thanks. Anna, ..."."""
MIN_GAIN = 0.0
"""Log-probability (sum over the tokens) a reading must gain over the heard text: the audio must support
the name at least as well as what was written. Not fitted: `python -m benchmark.names` reports it."""
NOT_SAID_GAP = 5.0
"""Log-probability by which the best reading must lose for the name to go to the decision as not said. A
said name often loses too, by less (the readings put it over the wrong words): on the tune half of the
names' cues (every name said), 6 of 35 checks lost by 0.4-16 and all but one of them by under 5."""


def names_to_check(hotwords: str | None) -> list[str]:
    """The principal's first name, from the name the prompt opens with (`name_prompt` puts theirs first):
    "Sirui Zhao" -> "Sirui", as people are called. Only that: each reading costs a decode (~30 ms on a busy
    core), and being called by name is what the delegate must not miss."""
    first = (hotwords or "").split(",")[0].split()
    return first[:1]


class Heard(str):
    """A final's text, with the attendees' names it was checked for against the audio and found not said."""

    unheard: tuple[str, ...]

    def __new__(cls, text: str, unheard: Iterable[str] = ()) -> Heard:
        heard = super().__new__(cls, text)
        heard.unheard = tuple(dict.fromkeys(unheard))
        return heard


def _said(text: str, names: Iterable[str]) -> bool:
    lowered = f" {text.casefold()} "
    return any(f" {n.casefold()}" in lowered.replace(",", " ").replace("?", " ").replace(".", " ") for n in names)


def name_readings(text: str, names: Sequence[str]) -> list[str]:
    """The transcript with each name in a vocative slot, over up to MAX_HIDDEN_WORDS words it may have become.

    None when the text already says one of the names, or is empty.
    """
    words = text.split()
    if not words or _said(text, names):
        return []
    readings: dict[str, None] = {}
    opener = 1 if words[0].strip(",.!?").casefold() in _OPENERS and len(words) > 1 else 0
    head = words[:opener]
    if head:
        head = [head[0].rstrip(",.!?") + ","]
    for name in names:
        for hidden in range(MAX_HIDDEN_WORDS + 1):
            rest = words[opener + hidden :]
            if rest:
                readings[" ".join([*head, f"{name},", *rest])] = None
            kept = words[: len(words) - hidden]
            if kept:
                last = kept[-1].rstrip(",.!?")
                readings[" ".join([*kept[:-1], *([f"{last},"] if last else []), f"{name}?"])] = None
    readings.pop(text, None)
    return list(readings)


def not_said(heard: float, scores: Sequence[float]) -> bool:
    """Whether the audio is clearly against every reading with the name (not merely unconvinced)."""
    return bool(scores) and max(scores) < heard - NOT_SAID_GAP


def best_reading(heard: float, readings: Sequence[str], scores: Sequence[float]) -> str | None:
    """The reading the audio supports best, if it scores at least `heard + MIN_GAIN`."""
    if not readings:
        return None
    best = max(range(len(readings)), key=lambda i: scores[i])
    return readings[best] if scores[best] >= heard + MIN_GAIN else None
