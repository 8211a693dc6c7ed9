"""Phrasing: records of any organisation said as a colleague would say them, numbers and dates kept."""

from __future__ import annotations

from delegate.decide.cues import Cue
from delegate.decide.reply.compose import compose, procedural
from delegate.decide.reply.phrasing import sayable, ticket_names, ticket_sentence
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
    # The state as a verb, the holder by first name, the ISO date as a person says it (its weekday right).
    assert said[0] == "Scanner app drops offline scans after sync — that's in progress; Amara has it, due Friday 3 April."
    assert "OPS-212" not in " ".join(said) and "priority" not in " ".join(said)
    assert any("40 minutes" in s for s in said) and any("5.3.1" in s for s in said)
    scope = BackgroundItem(context="Mail from Jonas Berg: scope", source="gmail", information="Scope: scanners, depots and Android target SDK 35.")
    assert sayable(scope) == ["Scope: scanners, depots and Android target SDK 35."]
    assert ticket_sentence("Export fails on large files", "status Done, assigned to Lee") == "Export fails on large files — that's done."
    # The principal's own ticket is theirs to say as "I".
    mine = ticket_sentence("Export fails on large files", "status To Do, assigned to Marta Lind", speaker="Marta Lind")
    assert mine == "Export fails on large files — that hasn't started yet; I have it."



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
    # Said by the subject its summary opens with, not the whole summary dropped into the sentence.
    assert said == ["The Scanner app ticket is the one blocking the pilot."]


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


def test_the_principal_is_said_as_i_and_a_sheet_row_as_who_is_what() -> None:
    rota = BackgroundItem(
        context="Document: Depot on-call",
        information="Rota for the peak week (6-12 April): primary Jonas Berg, secondary Amara Okafor, escalation Marta Lind.",
        source="drive",
    )
    said = sayable(rota, speaker="Marta Lind")
    assert said == ["Rota for the peak week (6-12 April): Jonas is primary and Amara is secondary, with me as escalation."]
    owner = BackgroundItem(context="Document: Depot 7", information="Marta Lind owns the key register for Depot 7.", source="drive")
    assert sayable(owner, speaker="Marta Lind") == ["I own the key register for Depot 7."]
    # Said by someone else, the name stays.
    assert sayable(owner, speaker="Jonas Berg") == ["Marta Lind owns the key register for Depot 7."]


def test_help_steps_and_cut_notes_are_left_out_and_a_subjectless_note_gets_one() -> None:
    faq = BackgroundItem(
        context="Document: Scanner FAQ",
        information="Open the scanner menu and tap Sync. From the home screen, tap Settings and follow the steps. Reassigned from Lee to Amara.",
        source="drive",
    )
    assert sayable(faq) == ["It was reassigned from Lee to Amara."]
    plan = BackgroundItem(context="Calendar: cutover", information="If approved: switch the depots to build 5.3.1 on Monday.", source="calendar")
    assert sayable(plan) == ["If approved, we switch the depots to build 5.3.1 on Monday."]
    notes = BackgroundItem(context="My notes", information="I'm grouping the depots by region, e.g. The audit is on Monday; but.")
    assert sayable(notes) == ["I'm grouping the depots by region.", "The audit is on Monday."]


def test_a_key_inside_a_sentence_is_said_as_the_tickets_subject() -> None:
    note = BackgroundItem(context="Slack #ops, Jonas Berg", information="Blockers closed: OPS-212 verified on build 5.3.1.", source="slack")
    assert sayable(note, ticket_names([TICKET])) == ["Blockers closed: the Scanner app ticket verified on build 5.3.1."]


def test_a_reply_keeps_to_the_talk_and_does_not_repeat_the_principal() -> None:
    lease = BackgroundItem(
        context="Mail from Jonas Berg: Depot 7",
        information="The Depot 7 lease renewal is signed, at 41,500 EUR a year from 1 June. It will be in the April budget. "
        "The canteen menu changes on Thursday.",
        source="gmail",
    )
    profile = Profile(name="Marta Lind", label="P2", background=[lease])
    s = MeetingState("m", names={"P1": "Ana Ruiz", "P2": "Marta Lind"})
    s.add(Utterance(id=0, speaker="P1", text="Marta, is the Depot 7 lease renewal signed, and at what rent?"))
    out = compose(s, profile, Cue(Scenario.explicit_cue, 0.9, ""), s.last.text)
    assert "41,500 EUR" in out.text and "canteen" not in out.text  # nothing about something else tacked on
    # "It will be in the April budget." only right after the sentence it leans on.
    assert "It will be" not in out.text or "41,500 EUR a year from 1 June. It will be" in out.text
    # What the principal has just said is not said again.
    s.add(Utterance(id=1, speaker="P2", text="The Depot 7 lease renewal is signed, at 41,500 EUR a year from 1 June."))
    s.add(Utterance(id=2, speaker="P1", text="Marta, is the Depot 7 lease renewal signed, and at what rent?"))
    again = compose(s, profile, Cue(Scenario.explicit_cue, 0.9, ""), s.last.text)
    assert "41,500 EUR a year" not in again.text


def test_an_abbreviations_full_stop_ends_no_sentence() -> None:
    from delegate.decide.reply.phrasing import SENTENCE

    parts = SENTENCE.split("I am structuring it by modules, e.g. morphology and syntax. Then the rest, i.e. semantics; done.")
    assert parts == ["I am structuring it by modules, e.g. morphology and syntax.", "Then the rest, i.e. semantics;", "done."]
