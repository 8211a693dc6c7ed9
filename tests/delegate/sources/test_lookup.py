"""The live lookup over a real sources folder: the brief's privacy and corrections, and the engine using it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from delegate.decide.local import LocalEngine
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance
from delegate.sources.brief import Meeting
from delegate.sources.folder import load_sources
from delegate.sources.lookup import SourceIndex

ANA = "ana@example.org"


def _index(sources_dir: Path) -> tuple[SourceIndex, Meeting]:
    sources = load_sources(sources_dir)
    event = sources.event("review")
    assert event is not None
    meeting = Meeting.of_event(event)
    return SourceIndex(sources, meeting, ANA), meeting


def test_search_finds_items_with_their_privacy_and_leaves_corrected_ones_out(sources_dir: Path) -> None:
    index, _ = _index(sources_dir)
    found = index.search("Did QA sign off the Lumen release candidate tests?", 3)
    assert found[0].item_id == "s1" and found[0].shareable
    move = next(b for b in index.search("Is Cleo moving to the Oslo office?", 3) if b.item_id == "s2")
    assert not move.shareable and move.why_private == "a direct message"
    assert "m1@example.org" not in {b.item_id for b in index.items}  # the launch date a later mail corrected


def test_the_engine_answers_from_the_lookup_what_the_brief_does_not_hold(sources_dir: Path) -> None:
    index, _ = _index(sources_dir)
    brief = Profile(name="Ana Ruiz", aliases=["Ana"])  # joined without a brief: everything comes from the lookup
    state = MeetingState("review", attendees=["Ana Ruiz", "Ben Cho", "Cleo Diaz"])
    state.add(Utterance(id=0, speaker="Ben Cho", text="Ana, when is the Lumen launch now?"))
    d = asyncio.run(LocalEngine(lookup_for=lambda _m, _p: index).decide(state, brief))
    assert "10 June" in d.speak and "3 June" not in d.speak and d.used_sources[0] == "m2@example.org"
