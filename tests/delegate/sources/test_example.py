"""The example workplace shipped in the package: every source kind read, privacy and corrections shown, and
a delegate briefed from it answers from it without saying what is private."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from delegate.__main__ import app
from delegate.decide.local import LocalEngine
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance
from delegate.sources.example import EXAMPLE_EVENT, EXAMPLE_PRINCIPAL, example_folder
from delegate.sources.folder import load_sources

runner = CliRunner()
ATTENDEES = ["Maya Okafor", "Tomas Reyes", "Lena Park", "Dev Iyer"]


def _example_brief(tmp_path: Path) -> Profile:
    out = tmp_path / "brief.json"
    result = runner.invoke(app, ["brief", "--example", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return Profile.model_validate_json(out.read_text(encoding="utf-8"))


def _reply(profile: Profile, question: str) -> str:
    state = MeetingState(EXAMPLE_EVENT, attendees=ATTENDEES)
    state.extend([Utterance(id=0, speaker="Tomas Reyes", text=question)])
    return asyncio.run(LocalEngine().decide(state, profile)).speak


def test_the_example_holds_mail_a_calendar_tickets_an_ics_and_an_mbox() -> None:
    sources = load_sources(example_folder())
    assert {"gmail.json", "calendar.json", "jira.json", "contacts.json", "team.ics", "mail.mbox"} <= set(sources.files)
    assert {i.source for i in sources.items} >= {"gmail", "calendar", "jira"}
    assert sources.event(EXAMPLE_EVENT) is not None and sources.name_of(EXAMPLE_PRINCIPAL) == "Maya Okafor"


def test_brief_example_drafts_the_principals_brief_with_private_items_marked(tmp_path: Path) -> None:
    profile = _example_brief(tmp_path)
    assert profile.name == "Maya Okafor"
    private = {b.item_id: b.why_private for b in profile.background if not b.shareable}
    assert private["g3"] == "a mail not sent to anyone else in this meeting"
    assert "confidential" in (private["g4"] or "") and "physio" in {k.split("@")[0] for k in private}
    ids = {b.item_id for b in profile.background}
    assert "ship-date-2@kestrel.example" in ids and "ship-date@kestrel.example" not in ids  # the later mail corrects


def test_a_delegate_briefed_from_the_example_answers_from_it_and_keeps_what_is_private(tmp_path: Path) -> None:
    profile = _example_brief(tmp_path)
    ship = _reply(profile, "Maya, when do we ship Harbor 2.4 to Leeds?")
    assert "18 March" in ship and "16 March" not in ship, ship
    leave = _reply(profile, "Maya, are you away in May?")
    assert leave and "4 May" not in leave and "parental" not in leave.lower(), leave


def test_brief_names_the_missing_choice_in_one_line() -> None:
    neither = runner.invoke(app, ["brief", "--event", "x", "--principal", "a@b.example"])
    assert neither.exit_code == 2 and "--sources DIR" in neither.output and "--example" in neither.output
    assert neither.output.strip().count("\n") == 0
