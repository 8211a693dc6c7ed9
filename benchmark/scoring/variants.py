"""Derive mismatched, noisy-name and engaged-negative cases from a meeting's matched cases.

- *mismatched*: the principal swapped for a profiled participant who is not in the exchange (not among
  the recent speakers, not named near the cue, not speaking in the next turns): expected silence.
- *noisy_name*: for explicit cues, every speaker label gets a realistic name and the principal's name in
  the cue is replaced by what a speech recogniser heard for it: it should still answer. Two sources:
  `recogniser` (default): what the shipped tiny.en wrote for first names from many languages spoken by
  espeak-ng (`benchmark/names/garbles.json`, `python -m benchmark.garbles`), only the held-out half of
  the names the matcher was not tuned on, and only where it wrote something for the name (a dropped
  name leaves no name to hear); `biased`: the same, transcribed with recognition biased towards the
  attendees' names as the live service does (fewer names garbled, so a smaller pool); `table`: a fixed table of confusions (`NAME_POOL`), written by hand
  independently of the delegate's matcher.
- *engaged negatives* (variant `mismatched`, scenario `none`): the principal took part in the last few
  turns, but the next four turns belong to others: expected silence. The real test of over-eagerness.

Deterministic for a given seed.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Iterable
from functools import lru_cache
from typing import Literal

from benchmark.garbles import held_out, load_table, usable_garbles
from benchmark.scoring.data import BenchMeeting, Case
from delegate.meeting import is_backchannel
from delegate.models import Scenario

# First name, family name, and what ASR systems typically write for the first name.
NAME_POOL: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Sirui", "Zhao", ("Siri", "Three", "Cherie")),
    ("Jisen", "Wu", ("Jason", "Jesen", "Jiesen")),
    ("Ondrej", "Novak", ("Andre", "Ondre", "Ondray")),
    ("Dominik", "Machacek", ("Dominic", "Domenic", "Dominique")),
    ("Kwame", "Mensah", ("Kwami", "Quame", "Kwamee")),
    ("Siobhan", "Byrne", ("Shivon", "Chevonne", "Shavon")),
    ("Xavier", "Dubois", ("Xavi", "Zavier", "Javier")),
    ("Priya", "Raman", ("Pria", "Preya", "Prya")),
    ("Tomasz", "Kowalski", ("Thomas", "Tomas", "Tomash")),
    ("Lucia", "Herrera", ("Lucy", "Lucya", "Luchia")),
    ("Rohan", "Mehta", ("Rowan", "Rohen", "Roan")),
    ("Amara", "Okafor", ("Amora", "Omara", "Amarah")),
    ("Petra", "Svobodova", ("Peter", "Petro", "Petrah")),
    ("Mateusz", "Zielinski", ("Mateus", "Matteus", "Matheus")),
    ("Bogdan", "Ionescu", ("Bogdon", "Bogden", "Bugdan")),
    ("Zdenek", "Kral", ("Zdenick", "Stenek", "Zdenyk")),
    ("Katerina", "Dvorakova", ("Catarina", "Katrina", "Caterina")),
    ("Dmitri", "Volkov", ("Dimitri", "Dmitry", "Demitri")),
    ("Ines", "Moreau", ("Inez", "Enes", "Inés")),
    ("Chiara", "Ricci", ("Kiara", "Kiera", "Chiarra")),
    ("Haruto", "Sato", ("Haruta", "Heruto", "Harooto")),
    ("Aoife", "Kelly", ("Eefa", "Eva", "Ifa")),
    ("Nikhil", "Rao", ("Nickel", "Nikil", "Nikel")),
    ("Yerlan", "Abenov", ("Yarlan", "Erlan", "Yerlin")),
)

GarbleSource = Literal["recogniser", "biased", "table"]
Pool = tuple[tuple[str, str, tuple[str, ...]], ...]

_MASK = re.compile(r"\[([A-Z]+\d+)\]")


@lru_cache(maxsize=2)
def recogniser_pool(biased: bool = False) -> Pool:
    """Held-out names of the recogniser garble table that it garbled, each with a family name and its garbles."""
    table = load_table()
    families = sorted({fam for _, fam, _ in NAME_POOL})
    pool = []
    for name in sorted({r.name for r in table.records if held_out(r.name)}):
        garbles = usable_garbles(table, name, biased)
        if garbles:
            pool.append((name, families[zlib.crc32(name.encode()) % len(families)], garbles))
    return tuple(pool)


def name_pool(source: GarbleSource) -> Pool:
    return NAME_POOL if source == "table" else recogniser_pool(source == "biased")


def _rng(seed: int, key: str) -> random.Random:
    return random.Random(seed * 1_000_003 + zlib.crc32(key.encode()))


def _names_for(meeting: BenchMeeting, seed: int, source: GarbleSource) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """A realistic name for every speaker label of the meeting (stable for a seed)."""
    labels = sorted(set(meeting.attendees) | {u.speaker for u in meeting.utterances} | set(meeting.profiles))
    pool = list(name_pool(source))
    _rng(seed, meeting.meeting_id).shuffle(pool)
    return {label: pool[i % len(pool)] for i, label in enumerate(labels)}


def _name_pattern(words: Iterable[str]) -> re.Pattern[str]:
    alts = sorted({re.escape(w) for w in words if w}, key=len, reverse=True)
    return re.compile(r"(?<![\w\[])(?:" + "|".join(alts) + r")(?![\w\]])")


def noisy_name_case(meeting: BenchMeeting, case: Case, seed: int, source: GarbleSource = "recogniser") -> Case | None:
    """The explicit cue with the principal's name garbled; None if the cue holds no name of theirs."""
    text = meeting.utterances[case.last_utterance].text
    pooled = _names_for(meeting, seed, source)
    principal = case.principal
    mask = f"[{principal}]"
    rng = _rng(seed, case.id)
    if mask in text:
        # Masked transcript: give labels names; the cue says others' names and a garbled principal.
        first, last, garbles = pooled[principal]
        garbled = text.replace(mask, rng.choice(garbles))
        garbled = _MASK.sub(lambda m: pooled[m.group(1)][0] if m.group(1) in pooled else m.group(0), garbled)
        names = {label: f"{f} {fam}" for label, (f, fam, _) in pooled.items()}
    else:
        display = meeting.display_name(principal)
        parts = display.split()
        pattern = _name_pattern([display, *parts[:1]])
        if not pattern.search(text):
            return None
        entry = next((p for p in name_pool(source) if p[0].lower() == parts[0].lower()), None)
        garbles = entry[2] if entry else (_generic_garble(parts[0], rng),)
        garbled = pattern.sub(rng.choice(garbles), text)
        names = dict(meeting.names) or None
    if garbled == text:
        return None
    return case.model_copy(
        update={
            "id": f"{case.id}#noisy",
            "variant": "noisy_name",
            "edits": {**case.edits, case.last_utterance: garbled},
            "names": names,
            "derived_from": case.id,
        }
    )


def _generic_garble(name: str, rng: random.Random) -> str:
    """For names outside the table: a vowel swapped, as recognisers often spell unknown names."""
    vowels = [i for i, ch in enumerate(name) if ch.lower() in "aeiou" and i > 0]
    if not vowels:
        return name + "h"
    i = rng.choice(vowels)
    swap = {"a": "e", "e": "a", "i": "y", "o": "u", "u": "o"}[name[i].lower()]
    return name[:i] + swap + name[i + 1 :]


def _named_labels(meeting: BenchMeeting, text: str) -> set[str]:
    found = set(_MASK.findall(text))
    low = text.lower()
    for label, display in meeting.names.items():
        first = display.split()[0].lower() if display else ""
        if first and re.search(rf"\b{re.escape(first)}\b", low):
            found.add(label)
    return found


def _substantive_speakers(meeting: BenchMeeting, start: int, stop: int) -> list[str]:
    return [u.speaker for u in meeting.utterances[max(start, 0) : stop] if not is_backchannel(u.text)]


def mismatched_case(meeting: BenchMeeting, case: Case, seed: int) -> Case | None:
    """The same snapshot with the principal swapped for a profiled outsider; None if there is none."""
    i = case.last_utterance
    busy = set(_substantive_speakers(meeting, i - 7, i + 1))
    busy |= {u.speaker for u in meeting.utterances[i + 1 : i + 5]}
    for u in meeting.utterances[max(0, i - 1) : i + 1]:
        busy |= _named_labels(meeting, u.text)
    outsiders = sorted(p for p in meeting.profiles if p != case.principal and p not in busy)
    if not outsiders:
        return None
    q = _rng(seed, case.id).choice(outsiders)
    return Case(
        id=f"{meeting.meeting_id}/{q}/{i}#mismatched",
        variant="mismatched",
        scenario=case.scenario,
        principal=q,
        last_utterance=i,
        derived_from=case.id,
    )


def engaged_negatives(meeting: BenchMeeting, seed: int, per_principal: int = 4) -> list[Case]:
    """Snapshots where the principal just took part but the next four turns are others'."""
    cued = {(c.principal, c.last_utterance) for c in meeting.cases}
    out: list[Case] = []
    n = len(meeting.utterances)
    for p in sorted(meeting.profiles):
        candidates = []
        for i in range(3, n - 4):
            u = meeting.utterances[i]
            if u.speaker == p or (p, i) in cued or is_backchannel(u.text):
                continue
            if p not in _substantive_speakers(meeting, i - 4, i):
                continue
            if any(v.speaker == p for v in meeting.utterances[i + 1 : i + 5]):
                continue
            if p in _named_labels(meeting, u.text):
                continue
            candidates.append(i)
        rng = _rng(seed, f"{meeting.meeting_id}/{p}/engaged")
        for i in sorted(rng.sample(candidates, min(per_principal, len(candidates)))):
            out.append(
                Case(
                    id=f"{meeting.meeting_id}/{p}/{i}#engaged",
                    variant="mismatched",
                    scenario=Scenario.none,
                    principal=p,
                    last_utterance=i,
                )
            )
    return out


def derive(meeting: BenchMeeting, seed: int = 0, garbles: GarbleSource = "recogniser") -> list[Case]:
    """The meeting's own cases plus every derived variant; `garbles`: where noisy names come from."""
    matched = [c for c in meeting.cases if c.variant == "matched"]
    out = list(meeting.cases)
    for case in matched:
        mm = mismatched_case(meeting, case, seed)
        if mm is not None:
            out.append(mm)
        if case.scenario is Scenario.explicit_cue:
            nn = noisy_name_case(meeting, case, seed, garbles)
            if nn is not None:
                out.append(nn)
    out.extend(engaged_negatives(meeting, seed))
    return out
