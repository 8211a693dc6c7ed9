"""The voice's parts with the real Piper voice: sentences stream in order, cuts fall on words, echoes match."""

from __future__ import annotations

import asyncio

from delegate.voice.base import SpokenSentence, Synthesizer, split_sentences
from delegate.voice.cut import said_until
from delegate.voice.echo import SpokenWindow, find_echo
from delegate.voice.stream import load_synthesizer, speak, synthesize_all

REPLY = "The migration finishes on Friday. I will send the checklist tonight! Any questions?"


def test_sentences_split_at_their_ends_only():
    assert split_sentences(REPLY) == ["The migration finishes on Friday.", "I will send the checklist tonight!", "Any questions?"]
    assert split_sentences("Version 5.4 ships on 1.2.2027 at 9.30") == ["Version 5.4 ships on 1.2.2027 at 9.30"]
    assert split_sentences("  ") == []
    # Clauses and the commas of a long sentence: the first audio waits for a short piece only.
    assert split_sentences("The data collection is on track: two hundred recordings are in.") == [
        "The data collection is on track:", "two hundred recordings are in."]
    long = "If the visa is late, I can join remotely, present a recorded talk, and answer questions by chat, as agreed."
    assert split_sentences(long) == ["If the visa is late,", "I can join remotely,", "present a recorded talk,",
                                     "and answer questions by chat, as agreed."]


def test_the_shipped_voice_streams_a_reply_sentence_by_sentence():
    synthesizer = load_synthesizer()
    assert synthesizer.sample_rate == 22050

    async def collect() -> list[SpokenSentence]:
        return [s async for s in speak(synthesizer, REPLY)]

    streamed = asyncio.run(collect())
    assert [s.text for s in streamed] == split_sentences(REPLY)
    # Real speech: each sentence lasts about as long as its words take to say (~2-4 words a second).
    for s in streamed:
        words = len(s.text.split())
        assert words / 4.5 < s.seconds < words / 1.5 + 1.0, (s.text, s.seconds)
    # Piper samples its durations (noise_w): the same text said twice differs a little, not in its sentences.
    assert [s.text for s in synthesize_all(synthesizer, REPLY)] == [s.text for s in streamed]


def _sentence(text: str, seconds: float) -> SpokenSentence:
    return SpokenSentence(text=text, pcm=bytes(int(seconds * 100) * 2), sample_rate=100)


def test_a_cut_keeps_whole_sentences_played_and_the_words_of_the_cut_one_heard():
    sentences = [_sentence("The migration finishes on Friday.", 2.0), _sentence("I will send it tonight.", 2.0)]
    assert said_until(sentences, 0.0) == ""
    assert said_until(sentences, 1.0) == "The migration"  # half of the characters: up to "migration"
    assert said_until(sentences, 2.0) == "The migration finishes on Friday."
    assert said_until(sentences, 3.1) == "The migration finishes on Friday. I will send"
    assert said_until(sentences, 9.0) == "The migration finishes on Friday. I will send it tonight."


def test_an_echo_overlaps_the_speech_and_says_its_words():
    said = SpokenWindow(utterance_id=4, text="The migration finishes on Friday, and I will send the checklist tonight.", start=100.0, end=105.0)
    # Recognised imperfectly, a piece of it:
    assert find_echo("the migration finish on friday and I will", 100.5, 103.0, [said]) == said
    assert find_echo("the migration finish on friday and I will", 110.0, 112.0, [said]) is None  # long after
    assert find_echo("Can we move the review to Monday instead?", 101.0, 103.0, [said]) is None  # someone else
    assert find_echo("Friday?", 104.0, 104.5, [said]) is None  # too short to tell from a person's question
    assert find_echo("the migration", 100.2, 101.0, [said], final=False) == said  # a partial may be short


def test_a_dash_ends_a_piece_so_openers_and_holding_lines_start_short():
    assert split_sentences("If I may add — The budget review moved to next quarter.") == [
        "If I may add —", "The budget review moved to next quarter."]


class CountingVoice:
    """A synthesizer that keeps the pieces it was asked for: what had to be synthesised, not read from a cache."""

    def __init__(self, inner: Synthesizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.sample_rate = inner.sample_rate
        self.said: list[str] = []

    def synthesize(self, piece: str) -> bytes:
        self.said.append(piece)
        return self.inner.synthesize(piece)


def test_openings_synthesised_ahead_start_a_reply_without_waiting_for_the_voice():
    from delegate.decide.reply.compose import HOLDING_LINE, likely_openings
    from delegate.models import BackgroundItem, Profile
    from delegate.voice.cache import CachingSynthesizer
    from delegate.voice.stream import warm

    principal = Profile(name="Alice", background=[
        BackgroundItem(context="migration", information="Has moved the migration to Friday. [PERSON2] signs it off."),
        BackgroundItem(context="plans", information="She is leaving in March.", shareable=False),
    ])
    openings = likely_openings(principal, {"PERSON2": "Bob"})
    # In the principal's own words and names; never a private item.
    assert openings[0] == HOLDING_LINE and "I have moved the migration to Friday." in openings
    assert "Bob signs it off." in openings and not any("March" in o for o in openings)

    voice = CountingVoice(load_synthesizer().inner)
    synthesizer = CachingSynthesizer(voice)
    assert asyncio.run(warm(synthesizer, openings, limit=3)) == 3  # capped
    assert asyncio.run(warm(synthesizer, openings, limit=10)) == len(openings) - 3  # the rest, once each
    first = split_sentences(HOLDING_LINE)[0]
    hit = synthesizer.cached(first)
    assert hit is not None and len(hit) > synthesizer.sample_rate  # over half a second of speech, kept

    async def first_piece() -> tuple[SpokenSentence, list[str]]:
        warmed = len(voice.said)
        async for piece in speak(synthesizer, HOLDING_LINE):
            return piece, voice.said[warmed:]
        raise AssertionError("nothing spoken")

    piece, synthesised = asyncio.run(first_piece())
    assert piece.text == first and piece.pcm == hit and first not in synthesised  # no synthesis: it was ready
    # A piece nobody expected is synthesised as before, and kept for next time.
    assert synthesizer.cached("Something nobody expected.") is None
    assert synthesizer.synthesize("Something nobody expected.") == synthesizer.cached("Something nobody expected.")


def test_the_cache_keeps_within_its_budget_dropping_the_least_recently_used():
    from delegate.voice.cache import CachingSynthesizer

    class Fixed:
        name, sample_rate = "fixed", 10

        def synthesize(self, piece: str) -> bytes:
            return b"x" * 100

    cache = CachingSynthesizer(Fixed(), budget_bytes=250)
    for piece in ("a", "b"):
        cache.synthesize(piece)
    cache.cached("a")  # used: b is now the oldest
    cache.synthesize("c")
    assert cache.has("a") and cache.has("c") and not cache.has("b")


def test_a_longer_turn_holding_a_stretch_like_a_short_reply_is_not_its_echo():
    said = SpokenWindow(utterance_id=4, text="It ships on Thursday.", start=100.0, end=102.0)
    assert find_echo("We looked at the numbers yesterday.", 101.0, 101.5, [said]) is None
    assert find_echo("it ships on thursday", 101.0, 101.5, [said]) == said
