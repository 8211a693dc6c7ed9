"""Briefs for every participant of a training meeting, made the way the benchmark's are: what they know and later say.

A benchmark brief holds background items (what the person knows, which they say in the meeting) and
intents (what they want to learn). Here, without annotators, each participant's items are the openings
of their own most substantive turns and their intents their own questions, both chosen with a fixed seed
from across the whole meeting — so at most moments the brief holds things they will say later, like
the benchmark's, and at some the very answer they give next. That is the run-time situation too (the
principal's brief is written to hold what they will say); what run time could not have is the reply
word for word, so an item keeps only its opening `ITEM_WORDS` words, and carries no `context` (which
in the benchmark is written by someone who read the whole meeting).
"""

from __future__ import annotations

import random
import zlib

from delegate.addressing import person
from delegate.decide.turn_taking import is_question
from delegate.language.text import content_words
from delegate.meeting import is_backchannel
from delegate.models import BackgroundItem, Profile, Utterance

ITEMS = 8
INTENTS = 4
ITEM_WORDS = 40
MIN_CONTENT_WORDS = 6
"""A turn with fewer content words says too little to be something the person knows."""


def _opening(text: str) -> str:
    words = text.split()
    return " ".join(words[:ITEM_WORDS])


def brief(label: str, display: str, utterances: list[Utterance], meeting_id: str, seed: int = 0) -> Profile:
    """The brief of the participant `label`: up to `ITEMS` items from their substantive statements, `INTENTS` from their questions."""
    rng = random.Random(seed * 7919 + zlib.crc32(f"{meeting_id}/{label}".encode()))
    own = [u for u in utterances if u.speaker == label and not is_backchannel(u.text)]
    substantive = [u for u in own if len(content_words(u.text)) >= MIN_CONTENT_WORDS]
    questions = [u for u in substantive if is_question(u.text)]
    statements = [u for u in substantive if not is_question(u.text)]
    picked = sorted(rng.sample(statements, min(ITEMS, len(statements))), key=lambda u: u.id)
    asked = sorted(rng.sample(questions, min(INTENTS, len(questions))), key=lambda u: u.id)
    return person(label, display).model_copy(update={
        "background": [BackgroundItem(context="", information=_opening(u.text)) for u in picked],
        "intents": [_opening(u.text) for u in asked],
    })


def briefs(attendees: list[str], names: dict[str, str], utterances: list[Utterance], meeting_id: str,
           have: dict[str, Profile], seed: int = 0) -> dict[str, Profile]:
    """A brief for every attendee: the meeting's own where it has one (the benchmark's), a made one otherwise."""
    return {a: have.get(a) or brief(a, names.get(a, a), utterances, meeting_id, seed) for a in attendees}
