"""The extractor on scripted streams of utterances: what is proposed, to whom, when accepted, merged, its state."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from delegate.actions import ActionBook, ActionExtractor, UnknownAction, find_due
from delegate.meeting import MeetingState
from delegate.models import ProposedAction, Utterance

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "benchmark" / "elitr-dev"

Script = list[tuple[str, str]]


def replay(script: Script, principal: str | None = None,
           names: dict[str, str] | None = None) -> tuple[ActionExtractor, list[list[ProposedAction]], MeetingState]:
    """Feed (speaker, text) turns one at a time; return the extractor and what each turn emitted."""
    meeting = MeetingState(meeting_id="m", names=names or {})
    extractor = ActionExtractor(principal=principal)
    emitted = []
    for i, (speaker, text) in enumerate(script):
        meeting.add(Utterance(id=i, speaker=speaker, text=text))
        emitted.append(extractor.observe(meeting))
    return extractor, emitted, meeting


def test_commitment_is_proposed_for_the_speaker_with_due_and_verbatim_excerpt() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "Where are we with the slides for the review?"),
        ("PERSON2", "Uh, I will send you the slides by Friday."),
    ])
    assert emitted[0] == []
    [action] = emitted[1]
    assert action.assignees == ["PERSON2"]
    assert action.action_type == "share_document"
    assert action.due == "by Friday"
    assert action.description == "Send [PERSON1] the slides by Friday."
    assert action.supporting_excerpt == "Uh, I will send you the slides by Friday."
    assert action.utterance_ids == [1]
    assert action.status == "proposed"


@pytest.mark.parametrize("text", [
    "I sent it yesterday.",
    "I already sent the report to the reviewers.",
    "I have sent you the slides this morning.",
    "I will not send the report before the review.",
    "Can you share your screen?",
    "Let me share my screen.",
    "I will explain the architecture first.",
    "We'll see.",
])
def test_past_reports_negations_and_meeting_room_talk_are_not_actions(text: str) -> None:
    ex, emitted, _ = replay([("PERSON1", "Okay, next point."), ("PERSON2", text)])
    assert ex.actions == []


def test_request_to_a_named_person_is_theirs_once_they_answer() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "The budget is still open."),
        ("PERSON3", "[PERSON5], can you prepare the budget table for the review by Wednesday?"),
        ("PERSON5", "Sure."),
    ])
    assert emitted[1] == []  # asked, not yet accepted
    [action] = emitted[2]
    assert action.assignees == ["PERSON5"]
    assert action.accepted_by_utterance == 2 and action.utterance_ids == [1]
    assert action.supporting_excerpt == "[PERSON5], can you prepare the budget table for the review by Wednesday?"
    assert action.due == "by Wednesday"
    assert action.description.startswith("Prepare the budget table for the review")


def test_request_by_display_name_in_a_meeting_with_names() -> None:
    names = {"PERSON1": "Dana Whitfield", "PERSON6": "Marcus Oyelaran"}
    ex, emitted, _ = replay([
        ("PERSON6", "Support could own the status page."),
        ("PERSON1", "I like that. Marcus, can you write up a proposal for support owning the status page?"),
        ("PERSON6", "Okay, will do."),
    ], names=names)
    [action] = emitted[2]
    assert action.assignees == ["PERSON6"]


def test_unnamed_request_goes_to_the_person_spoken_with() -> None:
    ex, emitted, _ = replay([
        ("PERSON2", "The export is ready on my side."),
        ("PERSON1", "Great, please upload the export to the shared folder today."),
        ("PERSON2", "Okay."),
    ])
    [action] = emitted[2]
    assert action.assignees == ["PERSON2"]
    assert action.due == "today"


def test_assignment_in_the_third_person() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "So the video."),
        ("PERSON1", "And [PERSON5] and [PERSON11] should select the video and test the performance."),
        ("PERSON11", "Yes, we can do that."),
    ])
    [action] = emitted[2]
    assert action.assignees == ["PERSON5", "PERSON11"]
    assert action.accepted_by_utterance == 2


def test_a_request_declined_by_its_addressee_is_dropped() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "[PERSON5], could you review the grant report by Friday?"),
        ("PERSON5", "No, I can't this week, I'm travelling."),
        ("PERSON1", "Okay, fine."),
        ("PERSON1", "Next point then."),
        ("PERSON3", "The budget is fine."),
        ("PERSON1", "Good."),
    ])
    assert ex.actions == []


def test_an_unanswered_request_stands_once_the_topic_moved_on() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "[PERSON5], please send the minutes to the partners."),
        ("PERSON3", "The room is booked for Thursday."),
        ("PERSON1", "Good, thanks."),
        ("PERSON3", "And the catering is ordered."),
        ("PERSON1", "Then the next item is the budget."),
    ])
    assert emitted[:4] == [[], [], [], []]
    [action] = emitted[4]
    assert action.assignees == ["PERSON5"] and action.accepted_by_utterance == 4


def test_restatement_is_merged_and_a_changed_due_date_updates_the_action() -> None:
    ex, emitted, _ = replay([
        ("PERSON2", "I will send the evaluation report to [PERSON7] on Monday."),
        ("PERSON1", "Good."),
        ("PERSON2", "So yes, I'll send the evaluation report to [PERSON7], on Monday."),
        ("PERSON1", "Could it be earlier?"),
        ("PERSON2", "Okay, I will send the evaluation report to [PERSON7] on Friday then."),
    ])
    assert len(ex.actions) == 1
    first = emitted[0][0]
    assert emitted[2] == []  # same details: merged silently
    [updated] = emitted[4]
    assert updated.id == first.id
    assert updated.due == "on Friday"
    assert updated.utterance_ids == [0, 2, 4]
    assert updated.supporting_excerpt == first.supporting_excerpt
    assert [e.event for e in ex.book.events] == ["proposed", "updated"]


def test_acceptance_takes_over_the_request_and_its_assignee() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "Could you update the wiki page with the new benchmark numbers?"),
        ("PERSON3", "Sure, I can do it."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON3"]
    assert action.description.startswith("Update the wiki page")
    assert action.supporting_excerpt in "Could you update the wiki page with the new benchmark numbers?"
    assert action.utterance_ids == [0, 1]


def test_anaphoric_commitment_refers_back_to_the_request() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "[PERSON6], can you write up a proposal for support owning the status page?"),
        ("PERSON6", "Yeah, I'll draft something by Wednesday."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON6"]
    assert "proposal" in action.description
    assert action.due == "by Wednesday"
    assert action.supporting_excerpt == "[PERSON6], can you write up a proposal for support owning the status page?"


def test_principal_actions_are_flagged_with_an_offer() -> None:
    ex, emitted, _ = replay([
        ("PERSON1", "[PERSON4], could you e-mail the vendor about the contract renewal?"),
        ("PERSON2", "And I will review the contract draft this week."),
        ("PERSON4", "Yes, sure."),
    ], principal="PERSON4")
    # The request to the principal goes out at once: the principal answers it with feedback.
    mine, theirs = ex.actions
    assert mine.utterance_ids == [0] and mine.accepted_by_utterance is None
    assert mine.for_principal and mine.action_type == "send_email"
    assert mine.offer == "I can draft this email for you."
    assert not theirs.for_principal and theirs.offer is None


def test_feedback_changes_the_state_and_is_recorded() -> None:
    ex, _, _ = replay([
        ("PERSON1", "I will book the meeting room for the workshop."),
        ("PERSON2", "And I'll prepare the agenda for the workshop tomorrow."),
    ])
    first, second = ex.actions
    approved = ex.apply_feedback(first.id, approve=True)
    rejected = ex.apply_feedback(second.id, approve=False)
    assert approved.status == "approved" and rejected.status == "rejected"
    assert [a.status for a in ex.actions] == ["approved", "rejected"]
    assert [(e.action_id, e.event) for e in ex.book.events] == [
        (first.id, "proposed"), (second.id, "proposed"), (first.id, "approved"), (second.id, "rejected"),
    ]
    with pytest.raises(UnknownAction):
        ex.apply_feedback("nope", approve=True)


def test_a_rejected_action_is_not_revived_by_a_restatement() -> None:
    ex, _, meeting = replay([("PERSON1", "I will book the meeting room for the workshop.")])
    ex.apply_feedback(ex.actions[0].id, approve=False)
    meeting.add(Utterance(id=1, speaker="PERSON1", text="So I will book the meeting room for the workshop on Monday."))
    [new] = ex.observe(meeting)
    assert new.id != ex.actions[0].id and ex.actions[0].status == "rejected"


def test_action_book_alone() -> None:
    book = ActionBook(principal="PERSON1")
    a = book.put(ProposedAction(id=book.next_id(), action_type="review", description="Review the draft.",
                                assignees=["PERSON1"], supporting_excerpt="x"), utterance_id=3)
    assert a.for_principal and a.offer
    assert book.apply_feedback(a.id, True).status == "approved"
    assert [e.event for e in book.events] == ["proposed", "approved"]




def test_due_phrases() -> None:
    assert find_due("send it by the end of the week please") == "by the end of the week"
    assert find_due("I'll do it tomorrow morning") == "tomorrow morning"
    assert find_due("we meet on 17th February") == "on 17th February"
    assert find_due("no date here") is None


def test_state_stays_bounded_over_a_long_meeting() -> None:
    script = [("PERSON1" if i % 2 else "PERSON2", f"I will prepare report number {i} for the {i} review.")
              for i in range(400)]
    ex, _, _ = replay(script)
    assert len(ex._open._open) <= ex._open.max_open and len(ex._recent) <= 12


def _grounded(action: ProposedAction, meeting: MeetingState) -> bool:
    texts = {u.id: u.text for u in meeting.utterances}
    return any(action.supporting_excerpt in texts[i] for i in action.utterance_ids)


def test_excerpts_are_verbatim_in_a_scripted_meeting() -> None:
    ex, _, meeting = replay([
        ("PERSON1", "Okay, uh, let's start. [PERSON2], could you, um, could you send the <unintelligible/> logs to me?"),
        ("PERSON2", "Yes, I will."),
        ("PERSON3", "I, I will, I will write to to [PERSON7] about the reviewers. And I'll check the figures."),
        ("PERSON1", "Everybody please fill the table by mid next week."),
    ])
    assert ex.actions
    assert all(_grounded(a, meeting) for a in ex.actions)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared ELITR dev meetings not available")
def test_excerpts_are_verbatim_on_real_meetings() -> None:
    from benchmark.scoring.data import load

    for bench in load(SHARED):
        meeting = MeetingState(meeting_id=bench.meeting_id, attendees=list(bench.attendees))
        ex = ActionExtractor()
        for u in bench.utterances:
            meeting.add(u)
            for action in ex.observe(meeting):
                assert _grounded(action, meeting), action


def test_a_stuttered_trigger_still_finds_the_commitment() -> None:
    ex, emitted, _ = replay([
        ("PERSON11", "Is there anything you would like me to read?"),
        ("PERSON4", "Not yet. But I will, I expect to send you, um, something by the end of the week."),
        ("PERSON12", "Yeah, yeah, I will, I will ask [PERSON9] about the money for the grant."),
    ])
    assert [a.assignees for a in ex.actions] == [["PERSON4"], ["PERSON12"]]
    assert ex.actions[0].due == "by the end of the week"
    assert ex.actions[1].description.startswith("Ask [PERSON9] about the money")


def test_long_unpunctuated_turns_cost_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: the characters the trigger patterns are handed, every search of every sentence.
    A turn is cut into sentences of at most MAX_SENTENCE characters, so ten times the words is ten times
    the searching; one unbounded sentence would make each of its many matches search the rest of it again."""
    from delegate.actions import detect as detect_module
    from delegate.actions.describe import MAX_SENTENCE, overlapping

    searched: list[int] = []
    longest: list[int] = []

    class Counted:
        def __init__(self, pattern: re.Pattern[str]) -> None:
            self.pattern = pattern

        def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
            searched.append(len(text) - pos)
            return self.pattern.search(text, pos)

    def counted(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
        longest.append(len(text))
        return overlapping(Counted(pattern), text)  # type: ignore[arg-type]

    monkeypatch.setattr(detect_module, "overlapping", counted)

    def cost(n: int) -> tuple[int, int]:
        text = "And Dana and Kwame and " * n + "I will send the report to [PERSON2] and " * n + "uh, " * n
        meeting = MeetingState(meeting_id="m")
        meeting.add(Utterance(id=0, speaker="PERSON1", text=text))
        searched.clear()
        ActionExtractor().observe(meeting)
        return len(text), sum(searched)

    short, short_work = cost(200)
    long, long_work = cost(2000)
    assert max(longest) <= MAX_SENTENCE
    assert long_work / long < 1.1 * short_work / short, (short_work, long_work)


def test_a_pronoun_resolves_to_an_earlier_sentence_of_the_same_turn() -> None:
    ex, emitted, _ = replay([
        ("PERSON2", "Can the test data be released under CC BY?"),
        ("PERSON1", "I think it's fine, but let me check with the legal office. I'll ask them this week."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON1"]
    assert "legal office" in action.description
    assert action.due == "this week"


def test_a_demonstrative_determiner_is_not_a_pronoun() -> None:
    ex, emitted, _ = replay([
        ("PERSON2", "Right now it says updating database, which is not great."),
        ("PERSON5", "I can write that copy for the migration screen if you want."),
    ])
    [action] = ex.actions
    assert action.description.startswith("Write that copy for the migration screen")


def test_a_short_bare_imperative_is_a_request_to_the_person_spoken_with() -> None:
    ex, emitted, _ = replay([
        ("PERSON4", "We could send the standard part of the questionnaire in advance, if that helps."),
        ("PERSON1", "Let's do that. Send the standard part early."),
        ("PERSON4", "Okay."),
    ])
    assert [a.assignees for a in ex.actions] == [["PERSON4"]]
    assert ex.actions[0].description == "Send the standard part early."


def test_a_vocative_earlier_in_the_turn_names_who_a_later_request_is_for() -> None:
    ex, emitted, _ = replay([
        ("PERSON20", "I think so."),
        ("PERSON10", "Yeah. So [PERSON15], could you prepare an internal poll? So that we reduce the number of dates. "
                     "And then everybody fills it in. Could you email the options to [PERSON5] tomorrow?"),
        ("PERSON15", "Yes."),
    ])
    email = [a for a in ex.actions if a.action_type == "send_email"]
    assert [a.assignees for a in email] == [["PERSON15"]]


def test_asked_by_someone_to_do_it_falls_to_the_speaker() -> None:
    ex, emitted, _ = replay([
        ("PERSON2", "Any news?"),
        ("PERSON14", "I've agreed, I was asked by [PERSON9] to give the presentation on the pipeline on Monday."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON14"]
    assert action.description.startswith("Give the presentation on the pipeline")


def test_done_in_a_later_clause_does_not_cancel_the_commitment() -> None:
    ex, emitted, _ = replay([
        ("PERSON3", "We need external reviewers for the book."),
        ("PERSON12", "I will write to [PERSON7] about the reviewers - I already talked with him."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON12"]
    assert action.description == "Write to [PERSON7] about the reviewers."


def test_false_starts_and_adverbs_between_trigger_and_verb_are_skipped() -> None:
    ex = ActionExtractor()
    u = Utterance(id=1, speaker="PERSON12", text="Yeah, I could also sen-, um, let you know when the survey section is finished.")
    [cand] = ex.candidates(u, "PERSON11")
    assert cand.description == "Let [PERSON11] know when the survey section is finished."
    u = Utterance(id=2, speaker="PERSON9", text="Maybe we can directly schedule a meeting for tomorrow.")
    [cand] = ex.candidates(u, "PERSON14")
    assert cand.description == "Schedule a meeting for tomorrow."


def test_the_chair_is_not_credited_for_a_reminder() -> None:
    long_turn = ("Okay, so that is the reviewing, good. Then report and dissemination, that is another important "
                 "thing, this report has to be written by the coordinators but everybody contributes their data to it. "
                 "So please make sure to enter your dissemination activities into the continuous reporting table.")
    ex, emitted, _ = replay([("PERSON22", "It is in the other doc."), ("PERSON10", long_turn), ("PERSON22", "Sure.")])
    [action] = ex.actions
    assert action.assignees == ["PERSON22"]
    assert "[PERSON10]" not in action.description


def test_own_proposal_taken_on_in_the_same_turn() -> None:
    ex, emitted, _ = replay([
        ("PERSON10", "You could use the dates as folder names."),
        ("PERSON3", "We still don't have a format. Actually maybe we should first create a template for the output "
                    "files? Would do that."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON3"]
    assert action.description.startswith("Create a template for the output files")


def test_someone_named_responsible_for_the_work_just_mentioned_owns_it() -> None:
    ex, emitted, _ = replay([
        ("PERSON9", "Zoom worked fine today."),
        ("PERSON10", "So we actually need to book a Zoom meeting slot. And I think [PERSON7] is responsible for that."),
    ])
    [action] = ex.actions
    assert action.assignees == ["PERSON7"]
    assert action.description == "Book a Zoom meeting slot."


@pytest.mark.parametrize(("speaker", "text"), [
    ("PERSON3", "OK. So I will try to register today."),
    ("PERSON1", "I will schedule accordingly."),
    ("PERSON3", "But I have to ask [PERSON3] about the forms."),
])
def test_vague_or_self_addressed_commitments_are_not_proposed(speaker: str, text: str) -> None:
    ex, emitted, _ = replay([("PERSON12", "What about the conference?"), (speaker, text)])
    assert ex.actions == []


def test_a_request_for_right_now_is_not_an_action_item() -> None:
    ex, emitted, _ = replay([("PERSON12", "What about the guidelines?"),
                             ("PERSON3", "[PERSON5], can you check the annotation guidelines at the moment?")])
    assert ex.actions == []


def test_ongoing_activity_scores_below_a_plan_with_the_same_trigger() -> None:
    ex = ActionExtractor()
    [work] = ex.candidates(Utterance(id=1, speaker="PERSON3", text="I will work on the attention sections with [PERSON1]."),
                           "PERSON12")
    [plan] = ex.candidates(Utterance(id=2, speaker="PERSON3", text="I will plan the attention sections with [PERSON1]."),
                           "PERSON12")
    assert work.confidence < plan.confidence < 1


def test_if_not_done_yet_is_a_reminder_not_a_condition() -> None:
    ex = ActionExtractor()
    text = "So if you haven't done so yet, please make sure to enter your activities into the reporting table."
    [reminder] = ex.candidates(Utterance(id=1, speaker="PERSON10", text=text), "PERSON22")
    text = "So if you want, please make sure to enter your activities into the reporting table."
    [conditional] = ex.candidates(Utterance(id=2, speaker="PERSON10", text=text), "PERSON22")
    assert reminder.confidence > conditional.confidence
    assert reminder.confidence >= ex.threshold


@pytest.mark.parametrize("text", [
    "So that at least I should be able to prepare the call link for all the participants.",
    "There is a university service where I can send big attachments to the partners.",
])
def test_a_commitment_inside_a_purpose_or_relative_clause_is_not_proposed(text: str) -> None:
    ex, emitted, _ = replay([("PERSON10", "It seems fine too."), ("PERSON9", text)])
    assert ex.actions == []
