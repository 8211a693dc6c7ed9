"""Brief building from real source files: provenance, private by default, the later fact wins; and what the engine says from it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from delegate.decide.local import LocalEngine
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance
from delegate.sources.brief import Meeting, build_brief
from delegate.sources.folder import load_sources

ANA = "ana@example.org"


def _brief(sources_dir: Path) -> Profile:
    sources = load_sources(sources_dir)
    event = sources.event("review")
    assert event is not None
    return build_brief(sources, Meeting.of_event(event), ANA).profile


def _reply(profile: Profile, *turns: tuple[str, str]) -> str:
    state = MeetingState("review", attendees=["Ana Ruiz", "Ben Cho", "Cleo Diaz"])
    state.extend([Utterance(id=k, speaker=who, text=text) for k, (who, text) in enumerate(turns)])
    return asyncio.run(LocalEngine().decide(state, profile)).speak


def test_items_carry_their_provenance(sources_dir: Path) -> None:
    by_id = {b.item_id: b for b in _brief(sources_dir).background}
    qa = by_id["s1"]
    assert (qa.source, qa.shareable, qa.why_private) == ("slack", True, None)
    assert qa.date is not None and qa.date.startswith("2025-03-06")
    assert "#lumen" in qa.context and "212 of 214" in qa.information


def test_a_dm_and_a_private_event_are_private_with_why(sources_dir: Path) -> None:
    by_id = {b.item_id: b for b in _brief(sources_dir).background}
    assert not by_id["s2"].shareable and by_id["s2"].why_private == "a direct message"
    assert not by_id["dentist"].shareable and by_id["dentist"].why_private == "a private calendar event"
    # Mail that reached no one else in the meeting: private in it.
    assert not by_id["m3@example.org"].shareable and "not sent to anyone else" in (by_id["m3@example.org"].why_private or "")


def test_a_private_dm_that_answers_the_question_is_never_spoken(sources_dir: Path) -> None:
    profile = _brief(sources_dir)
    said = _reply(
        profile,
        ("Ben Cho", "Before we start on the launch, a question about the team."),
        ("Ben Cho", "Ana, is Cleo moving to another office? Where is she going?"),
    )
    assert said  # named, the delegate answers
    assert "Oslo" not in said and "May" not in said


def test_a_corrected_date_the_later_one_wins(sources_dir: Path) -> None:
    sources = load_sources(sources_dir)
    event = sources.event("review")
    assert event is not None
    brief = build_brief(sources, Meeting.of_event(event), ANA)
    assert [(s.item_id, s.by) for s in brief.superseded] == [("m1@example.org", "m2@example.org")]
    said = _reply(brief.profile, ("Ben Cho", "Ana, when is the Lumen launch now?"))
    assert "10 June" in said and "3 June" not in said


def test_messages_after_the_meeting_are_left_out(sources_dir: Path) -> None:
    sources = load_sources(sources_dir)
    early = Meeting(title="Lumen launch check", start=sources.event("review").start.replace(day=4), attendees=("Ben Cho",))  # type: ignore[union-attr]
    ids = {b.item_id for b in build_brief(sources, early, ANA).profile.background}
    assert "m1@example.org" in ids and "m2@example.org" not in ids and "s1" not in ids


def test_dev_brief_keeps_every_listed_private_item_private(dev: Path) -> None:
    import json

    scenario = json.loads((dev / "scenario.json").read_text(encoding="utf-8"))
    sources = load_sources(dev / "sources")
    event = sources.event(scenario["meeting_event_id"])
    assert event is not None
    brief = build_brief(sources, Meeting.of_event(event), scenario["principal"]["email"], max_items=1000)
    private = {p["id"] for p in scenario["private"]}
    items = {b.item_id: b for b in brief.profile.background}
    assert private <= set(items)
    assert [k for k in private if items[k].shareable] == []
    assert all(b.why_private for b in brief.profile.background if not b.shareable)


@pytest.mark.parametrize("cap", [10, 100])
def test_the_brief_fits_the_server_limits(sources_dir: Path, cap: int) -> None:
    sources = load_sources(sources_dir)
    event = sources.event("review")
    assert event is not None
    profile = build_brief(sources, Meeting.of_event(event), ANA, max_items=cap).profile
    assert len(profile.background) <= cap
    assert all(len(b.information) <= 2000 and len(b.context) <= 2000 for b in profile.background)
