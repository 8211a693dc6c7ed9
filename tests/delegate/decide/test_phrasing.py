"""Phrasing: records of any organisation said as a colleague would say them, numbers and dates kept."""

from __future__ import annotations

from delegate.decide.compose import compose, procedural
from delegate.decide.cues import Cue
from delegate.decide.phrasing import sayable, ticket_names, ticket_sentence
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario, Utterance
from delegate.speakable import defects

# Records of an organisation the phrasing was not written for (Larchmont, a logistics firm).
MAIL = BackgroundItem(
    context="Mail from Jonas Berg: Re: Depot 7 contract",
    information=(
        "Hi Marta,\n\nGood news: the Depot 7 lease renewal is signed, at 41,500 EUR a year from 1 June.\n"
        "The landlord wants the keys for the north gate back by Friday.\n"
        "Questions to jonas.berg@larchmont.example or see https://intranet.larchmont.example/depot7.\n\n"
        "Thanks,\nJonas"
    ),
    source="gmail",
    item_id="m-77",
)
TICKET = BackgroundItem(
    context="Jira OPS-212: Scanner app drops offline scans after sync",
    information=(
        "OPS-212 Scanner app drops offline scans after sync (status In Progress, priority Critical, assigned to Amara Okafor, "
        "due 2026-04-03). Offline scans are lost when the handheld syncs after 40 minutes offline. Fix in build 5.3.1."
    ),
    source="jira",
    item_id="OPS-212",
)
EVENT = BackgroundItem(
    context="Calendar: Depot 7 handover (Tue 07 Apr 2026 09:30 UTC)",
    information="Depot 7 handover, Tue 07 Apr 2026 09:30 UTC. Walk-through with the landlord; bring the north gate keys.",
    source="calendar",
    item_id="ev-9",
)
CONTRACT = BackgroundItem(
    context="Document: SERVICE AGREEMENT - Haulage",
    information=(
        "SERVICE AGREEMENT - Haulage\nOwner: Marta Lind. Last updated 2 March 2026.\n"
        "CONTRACT TERMS: The carrier collects from Depot 7 twice a day, at 06:00 and 14:00.\n"
        "- Penalty of 250 EUR for each missed collection.\n"
        "  applies from the second month."
    ),
    source="drive",
    item_id="doc-3",
)


def test_every_sentence_of_any_record_passes_the_speakable_check() -> None:
    tickets = ticket_names([TICKET])
    for item in (MAIL, TICKET, EVENT, CONTRACT):
        said = sayable(item, tickets)
        assert said, item.context
        for sentence in said:
            assert defects(sentence) == [], sentence


def test_a_mail_is_what_it_says_without_its_letter() -> None:
    said = " ".join(sayable(MAIL))
    assert "41,500 EUR a year from 1 June" in said
    assert not said.startswith("Hi") and "Jonas" not in said.split()[-1] and "Thanks" not in said
    assert "@" not in said and "http" not in said


def test_a_ticket_is_its_subject_and_state_and_numbers_stay() -> None:
    said = sayable(TICKET)
    assert said[0] == "Scanner app drops offline scans after sync: that's in progress with Amara Okafor and due 2026-04-03."
    assert "OPS-212" not in " ".join(said) and "priority" not in " ".join(said)
    assert any("40 minutes" in s for s in said) and any("5.3.1" in s for s in said)
    scope = BackgroundItem(context="Mail from Jonas Berg: scope", source="gmail", information="Scope: scanners, depots and Android target SDK 35.")
    assert sayable(scope) == ["Scope: scanners, depots and Android target SDK 35."]
    assert ticket_sentence("Export fails on large files", "status Done, assigned to Lee") == "Export fails on large files: that's done."


def test_a_meeting_is_its_day_and_time() -> None:
    assert sayable(EVENT)[0] == "Depot 7 handover is on Tuesday 7 April 2026 at 09:30 UTC."


def test_a_document_loses_its_header_owner_and_bullets() -> None:
    said = sayable(CONTRACT)
    assert "The carrier collects from Depot 7 twice a day, at 06:00 and 14:00." in said
    assert not any("Owner" in s or "SERVICE AGREEMENT" in s or "Last updated" in s for s in said)
    assert any(s.startswith("Penalty of 250 EUR") for s in said)


def test_a_key_in_a_sentence_is_said_as_the_tickets_name() -> None:
    slack = BackgroundItem(context="Slack #ops, Amara Okafor", information="OPS-212 is the one blocking the pilot.", source="slack")
    said = sayable(slack, ticket_names([TICKET]))
    assert said == ["The Scanner app drops offline scans after sync ticket is the one blocking the pilot."]


def test_the_principals_own_notes_pass_unchanged() -> None:
    note = BackgroundItem(context="When the budget comes up", information="Has the Q3 numbers; they are 4% over plan.")
    assert sayable(note) == ["Has the Q3 numbers;", "they are 4% over plan."]


def test_a_reply_from_records_is_speakable_and_names_its_items() -> None:
    profile = Profile(name="Marta Lind", label="P2", background=[MAIL, TICKET, EVENT, CONTRACT])
    s = MeetingState("m")
    s.add(Utterance(id=0, speaker="P1", text="Marta, what did we agree for the Depot 7 lease renewal?"))
    out = compose(s, profile, Cue(Scenario.explicit_cue, 0.9, ""), s.last.text)
    assert defects(out.text) == [] and "41,500 EUR" in out.text
    assert 0 in out.used_background


def test_no_chime_in_on_a_line_that_runs_the_meeting() -> None:
    assert procedural("Okay, let's start the 4.2 go/no-go.")
    assert procedural("Right. Next item.")
    assert not procedural("Let's start with the depot lease: is it signed?")
    assert not procedural("The Depot 7 handover is next Tuesday.")
    profile = Profile(name="Marta Lind", label="P2", background=[EVENT])
    s = MeetingState("m")
    s.add(Utterance(id=0, speaker="P1", text="Okay, let's start the Depot 7 handover."))
    assert compose(s, profile, Cue(Scenario.chime_in, 0.9, ""), s.last.text).text == ""


def test_another_writers_i_is_not_the_principals_to_say() -> None:
    theirs = BackgroundItem(context="Slack #ops, Jonas Berg", source="slack",
                            information="I'll return the north gate keys on Friday. The Depot 7 lease renewal is signed.")
    assert sayable(theirs, speaker="Marta Lind") == ["The Depot 7 lease renewal is signed."]
    mine = theirs.model_copy(update={"context": "Slack #ops, Marta Lind"})
    assert sayable(mine, speaker="Marta Lind")[0] == "I'll return the north gate keys on Friday."


def test_a_contract_and_a_signed_mail_lose_header_and_signature() -> None:
    contract = BackgroundItem(context="Document: Haulage contract", source="drive", information=(
        "MASTER SERVICES AGREEMENT\nThis agreement starts on 1 March 2026 and runs for 24 months.\n"
        "Either party may end it with 90 days' notice."))
    assert sayable(contract) == ["This agreement starts on 1 March 2026 and runs for 24 months.", "Either party may end it with 90 days' notice."]
    mail = BackgroundItem(context="Mail from Jonas Berg: rates", source="gmail", information=(
        "Hi Marta, the new rate is 1.85 EUR per pallet from April.\n\nBest,\nJonas Berg\nHead of Operations\n"
        "Larchmont Logistics Ltd\njonas.berg@larchmont.example | +44 20 7946 0000"))
    assert sayable(mail) == ["The new rate is 1.85 EUR per pallet from April."]
