import shutil
from pathlib import Path

import pytest

from benchmark.garble_match import (
    cues_to_others,
    garbled_cues,
    meeting_sentences,
    rate,
    sentence_items,
    table_cues,
)
from benchmark.garbles import GarbleTable, garbled_form, generate, held_out, load_names, load_table, plan
from delegate.language.names import Reference, find
from delegate.models import Profile

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"


def test_name_list_is_broad():
    names = load_names()
    assert len(names) >= 300
    assert len({n.name for n in names}) == len(names)
    assert len({n.language for n in names}) >= 25
    # Both halves are real halves, not a handful.
    assert 0.35 < sum(held_out(n.name) for n in names) / len(names) < 0.65


def test_garbled_form_is_what_stands_where_the_name_was():
    t = "{name}, could you tell us about the budget?"
    assert garbled_form(t, "Siobhan", "Shivon, could you tell us I'm out of the budget") == "Shivon"
    assert garbled_form(t, "Siobhan", "She won, could you tell us about the budget?") == "She won"
    assert garbled_form(t, "Ben", "Could you tell us about the budget?") == ""
    assert garbled_form("Is that right, {name}?", "Jürgen", "Is that right, Jurgen?") == "Jurgen"
    assert garbled_form("Is that right, {name}?", "Tomasz", "Is that right, Tom?") == "Tom"


def test_shipped_table_covers_every_name_unbiased_and_biased():
    table = load_table()
    names = {n.name for n in load_names()}
    unbiased = [r for r in table.records if not r.biased]
    assert {r.name for r in unbiased} == names
    assert len(unbiased) == 2 * len(names)
    assert {r.name for r in table.records if r.biased} == names
    # The recogniser really garbles: a good share of names is not written as spelled, and not all are.
    garbled = sum(r.garbled != r.name for r in unbiased) / len(unbiased)
    assert 0.2 < garbled < 0.95


def test_matcher_hears_held_out_recogniser_garbles():
    """The figure `python -m benchmark.garble_match` reports, on names the matcher was not tuned on."""
    table = load_table()
    items = garbled_cues(table.records, heldout=True)
    assert len(items) > 100
    # 21.2% when the table was made (15.1% before the weights were searched): espeak-ng speech leaves
    # tiny.en little of most names ("Wolfgang" heard as "who"), and dropped names count as misses.
    assert rate(items) >= 0.20
    # Cues whose name came out as spelled are always heard.
    exact = [r for r in table.records if held_out(r.name) and not r.biased and r.garbled == r.name]
    assert all(find(r.transcript, Profile(name=r.name)).reference is Reference.addressed for r in exact)


def test_matcher_still_hears_the_fixed_confusion_table():
    assert rate(table_cues()) >= 0.9


def test_cues_to_someone_else_rarely_fire():
    assert rate(cues_to_others(load_table().records, heldout=True)) <= 0.02


@pytest.mark.parametrize(
    "text",
    [
        "Sorry, could you repeat that?",
        "Well, what do you think?",
        "You know, it is fine.",
        "Okay, thanks, are you there?",
        "Thank you, Chair.",
        "Is that right, everyone?",
    ],
)
def test_ordinary_words_in_the_vocative_slot_are_no_names(text):
    for n in load_names():
        if held_out(n.name):
            assert find(text, Profile(name=n.name)).reference is not Reference.addressed, n.name


def test_another_attendee_is_not_taken_for_the_principal():
    names = [n.name for n in load_names() if held_out(n.name)]
    for a, b in zip(names, names[1:], strict=False):
        hit = find(f"{b}, could you tell us about the budget?", Profile(name=a), frozenset({b.lower()}))
        assert hit.reference is not Reference.addressed, (a, b)


@pytest.mark.skipif(not (SHARED / "corpora" / "qmsum").is_dir(), reason="shared QMSum / ELITR sentences not available")
def test_rarely_fires_on_real_meeting_sentences():
    names = [n.name for n in load_names() if held_out(n.name)]
    items = sentence_items(meeting_sentences(SHARED), names, heldout=True)
    assert len(items) > 2000
    assert rate(items) <= 0.005


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
def test_generator_speaks_and_transcribes_two_names(tmp_path):
    names = [n for n in load_names() if n.name in ("Daniel", "Siobhan")]
    clips = plan(names)
    assert len(clips) == 6 and sum(bool(c.attendees) for c in clips) == 2
    cache = tmp_path / "cache.jsonl"
    records = generate(clips, cache, jobs=1)
    assert [r.name for r in records] == [c.name for c in clips]
    assert all(r.transcript for r in records)
    # tiny.en writes a plain English name as spelled in at least one of its cues.
    assert any(r.garbled == "Daniel" for r in records if r.name == "Daniel")
    GarbleTable(recogniser="tiny.en", synthesiser="espeak-ng", records=records)
    # A second run comes from the cache.
    before = cache.read_text()
    assert generate(clips, cache, jobs=1) == records
    assert cache.read_text() == before
