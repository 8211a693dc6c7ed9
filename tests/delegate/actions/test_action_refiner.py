"""LLM refinement of action items against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from delegate.actions import ActionExtractor, Extractor, Refiner
from delegate.actions.refiner import LLMActionRefiner
from delegate.config import Settings
from delegate.llm.client import make_client
from delegate.meeting import MeetingState
from delegate.models import ProposedAction, Utterance
from testkit.fake_openai import Reply, ScriptedOpenAI, scripted_settings

# Anna asks "you" for a poll right after PERSON3 spoke, so the embedded extractor gives it to PERSON3 once
# PERSON3 answers; the Doodle account two turns back says it is PERSON2's (the principal's).
TIMELINE = [
    ("PERSON2", "I still have the Doodle account from the last dry run."),
    ("PERSON3", "The room is booked for Thursday."),
    ("PERSON1", "Could you uh prepare the the poll for the next dry run?"),
    ("PERSON3", "Okay."),
]
ASKED = "Could you uh prepare the the poll for the next dry run?"
TIMEOUT_S = 0.5


def meeting_of(timeline: list[tuple[str, str]]) -> MeetingState:
    meeting = MeetingState(
        meeting_id="m-refine",
        attendees=["PERSON1", "PERSON2", "PERSON3"],
        names={"PERSON1": "Anna Novak"},
    )
    meeting.extend([Utterance(id=i, speaker=s, text=t) for i, (s, t) in enumerate(timeline)])
    return meeting


def answer(*items: dict[str, Any]) -> str:
    return json.dumps({"actions": list(items)})


def item(**fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": "a1",
        "action_type": "schedule_meeting",
        "description": "Prepare a Doodle poll for the next dry run.",
        "assignees": ["PERSON2"],
        "due": None,
        "utterance_id": 2,
        "supporting_excerpt": "prepare the the poll for the next dry run",
    }
    values.update(fields)
    return values


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(lambda prompt: answer(item())) as s:
        yield s


def settings_for(server: ScriptedOpenAI, **overrides: Any) -> Settings:
    return scripted_settings(server.base_url, **({"llm_timeout_s": TIMEOUT_S, "llm_retries": 0} | overrides))


@pytest.fixture
async def refiner(server: ScriptedOpenAI) -> AsyncIterator[LLMActionRefiner]:
    settings = settings_for(server)
    r = LLMActionRefiner(ActionExtractor(principal="PERSON2"), make_client(settings), settings)
    yield r
    await r.client.close()


def proposed(refiner: LLMActionRefiner, meeting: MeetingState) -> list[ProposedAction]:
    """Feed `meeting` one utterance at a time; returns what the last one proposed."""
    replay = MeetingState(
        meeting_id=meeting.meeting_id, attendees=list(meeting.attendees), names=meeting.names
    )
    found: list[ProposedAction] = []
    for u in meeting.utterances:
        replay.add(u)
        found = refiner.observe(replay)
    return found


def test_the_refiner_is_an_extractor_with_a_second_pass(refiner: LLMActionRefiner) -> None:
    assert isinstance(refiner, Extractor) and isinstance(refiner, Refiner)
    assert not isinstance(ActionExtractor(), Refiner)


async def test_refinement_cleans_the_description_and_fixes_the_assignee(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: answer(item()))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    assert (embedded.assignees, embedded.description) == (
        ["PERSON3"],
        "Prepare the poll for the next dry run.",
    )

    [refined] = await refiner.refine(meeting, [embedded])

    assert refined.id == embedded.id and refined.status == "proposed"
    assert refined.description == "Prepare a Doodle poll for the next dry run."
    assert refined.assignees == ["PERSON2"]
    assert refined.for_principal and refined.offer, "now the principal's: it comes with an offer"
    assert refined.supporting_excerpt == "prepare the the poll for the next dry run"
    assert refined.supporting_excerpt in ASKED
    assert refiner.actions == [refined]
    assert [e.event for e in refiner.embedded.book.events] == ["proposed", "updated"]
    assert (refiner.calls, refiner.refined, refiner.fallbacks) == (1, 1, 0)

    [prompt] = server.prompts
    assert "0 PERSON2: I still have the Doodle account" in prompt
    assert f"2 PERSON1: {ASKED}" in prompt
    assert "- PERSON1 (Anna Novak)" in prompt and "`PERSON2`" in prompt
    assert "id `a1`" in prompt and "Prepare the poll for the next dry run." in prompt
    assert server.bodies[0]["response_format"]["type"] == "json_schema"


async def test_a_restatement_builds_on_the_refined_version(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: answer(item()))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    await refiner.refine(meeting, [embedded])
    meeting.add(
        Utterance(id=4, speaker="PERSON2", text="Sure, I will prepare the poll for the dry run by Monday.")
    )
    [merged] = refiner.observe(meeting)
    assert merged.id == "a1" and merged.due == "by Monday"
    assert merged.description == "Prepare a Doodle poll for the next dry run."
    assert merged.assignees == ["PERSON2"]


async def test_an_action_the_llm_leaves_out_ends_rejected_and_can_still_be_approved(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: answer())
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)

    [rejected] = await refiner.refine(meeting, [embedded])

    assert rejected.status == "rejected"
    assert rejected.model_dump(exclude={"status"}) == embedded.model_dump(exclude={"status"})
    assert refiner.rejected == 1 and refiner.actions == [rejected]
    assert [e.event for e in refiner.embedded.book.events] == ["proposed", "rejected"]
    assert refiner.apply_feedback("a1", approve=True).status == "approved"


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(content="Sure! The poll is an action item for PERSON2."), "invalid_output"),
        (Reply(content=json.dumps({"actions": [{"id": "a1", "action_type": "poll"}]})), "invalid_output"),
        (Reply(status=500), "http_error"),
        (Reply(content=answer(item()), delay_s=TIMEOUT_S + 1.0), "timeout"),
    ],
    ids=["prose", "invalid_fields", "http_500", "slower_than_timeout"],
)
async def test_llm_failures_keep_the_embedded_action_and_the_meeting_goes_on(
    server: ScriptedOpenAI, refiner: LLMActionRefiner, reply: Reply, kind: str
) -> None:
    server.reset(lambda prompt: reply)
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)

    # The slow reply is a valid refinement: getting none, for a timeout, is the refiner not waiting for it.
    assert await refiner.refine(meeting, [embedded]) == []

    assert refiner.actions == [embedded]
    assert [e.event for e in refiner.embedded.book.events] == ["proposed"]
    assert (refiner.fallbacks, dict(refiner.fallback_reasons)) == (1, {kind: 1})
    meeting.add(Utterance(id=4, speaker="PERSON3", text="I will book the projector for Thursday."))
    [nxt] = refiner.observe(meeting)
    assert nxt.id == "a2" and nxt.assignees == ["PERSON3"]


async def test_an_excerpt_that_is_not_verbatim_is_replaced_by_the_embedded_one(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    # The model "corrects" the speech recognition: no longer a quote.
    server.reset(
        lambda prompt: answer(item(supporting_excerpt="Could you prepare the poll for the next dry run?"))
    )
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)

    [refined] = await refiner.refine(meeting, [embedded])

    assert refined.description == "Prepare a Doodle poll for the next dry run."
    assert refined.supporting_excerpt == embedded.supporting_excerpt == ASKED
    assert refined.utterance_ids == [2]
    assert refiner.excerpts_kept == 1


async def test_an_excerpt_must_come_from_the_utterance_it_cites(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: answer(item(utterance_id=1)))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    [refined] = await refiner.refine(meeting, [embedded])
    assert refined.supporting_excerpt == ASKED and refined.utterance_ids == [2]


async def test_an_excerpt_from_an_earlier_utterance_adds_it_to_the_action(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: answer(item(utterance_id=0, supporting_excerpt="the Doodle account")))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    [refined] = await refiner.refine(meeting, [embedded])
    assert refined.supporting_excerpt == "the Doodle account" and refined.utterance_ids == [0, 2]


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        (["Anna Novak", "[PERSON2]"], ["PERSON1", "PERSON2"]),
        (["PERSON2", "Bob from accounting"], ["PERSON2"]),
        (["Bob from accounting"], ["PERSON3"]),
    ],
)
async def test_assignees_are_speaker_labels_of_the_meeting(
    server: ScriptedOpenAI, refiner: LLMActionRefiner, said: list[str], kept: list[str]
) -> None:
    server.reset(lambda prompt: answer(item(assignees=said)))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    [refined] = await refiner.refine(meeting, [embedded])
    assert refined.assignees == kept


async def test_a_bare_list_answer_is_accepted_and_unknown_ids_are_ignored(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: json.dumps([item(), item(id=None), item(id="a9")]))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    [refined] = await refiner.refine(meeting, [embedded])
    assert refined.assignees == ["PERSON2"] and [a.id for a in refiner.actions] == ["a1"]


async def test_a_verdict_or_a_newer_version_meanwhile_wins_over_the_refinement(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: Reply(content=answer(item()), delay_s=0.2))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    pending = asyncio.create_task(refiner.refine(meeting, [embedded]))
    await asyncio.sleep(0.05)
    approved = refiner.apply_feedback("a1", approve=True)
    assert await pending == []
    assert refiner.actions == [approved]

    meeting.add(Utterance(id=4, speaker="PERSON3", text="I will book the projector for Thursday."))
    [second] = refiner.observe(meeting)
    pending = asyncio.create_task(refiner.refine(meeting, [second]))
    await asyncio.sleep(0.05)
    meeting.add(
        Utterance(id=5, speaker="PERSON3", text="Actually I will book the projector for Thursday morning.")
    )
    [newer] = refiner.observe(meeting)
    assert newer.id == second.id and newer.due != second.due
    assert await pending == [], "the answer is about a version that is gone"
    assert refiner.actions[-1] == newer


async def test_the_prompt_ends_at_the_utterance_that_proposed_the_action(
    server: ScriptedOpenAI, refiner: LLMActionRefiner
) -> None:
    server.reset(lambda prompt: answer(item()))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(refiner, meeting)
    meeting.add(Utterance(id=4, speaker="PERSON3", text="Next item: the budget."))
    await refiner.refine(meeting, [embedded])
    assert "Next item" not in server.prompts[0]


async def test_a_long_meeting_shows_a_bounded_window(server: ScriptedOpenAI) -> None:
    server.reset(lambda prompt: answer(item()))
    settings = settings_for(server, llm_context_tokens=1200)
    refiner = LLMActionRefiner(ActionExtractor(principal="PERSON2"), make_client(settings), settings)
    chatter = [
        ("PERSON3", f"Point {i} of the status report is on track and nothing changed.") for i in range(300)
    ]
    meeting = meeting_of(chatter + TIMELINE)
    embedded = proposed(refiner, meeting)
    assert [a.supporting_excerpt for a in embedded] == [ASKED]
    await refiner.refine(meeting, embedded)
    [prompt] = server.prompts
    assert ASKED in prompt and "Point 0 " not in prompt
    assert len(prompt) < 1200 * 4 + 400
    await refiner.client.close()


async def test_a_refined_description_that_gives_away_a_private_item_is_not_taken(server: ScriptedOpenAI) -> None:
    from delegate.models import BackgroundItem, Profile

    principal = Profile(
        name="Petr Novak",
        label="PERSON2",
        background=[
            BackgroundItem(context="dry runs", information="The Doodle account is mine."),
            BackgroundItem(context="if the budget comes up", information="Globex pays for the dry run.", shareable=False),
        ],
    )
    settings = settings_for(server, llm_timeout_s=10.0)  # the point here is the guard, not the clock
    guarded = LLMActionRefiner(
        ActionExtractor(principal="PERSON2"), make_client(settings), settings, principal=principal
    )
    server.reset(lambda prompt: answer(item(description="Prepare the Globex-funded poll for the dry run.")))
    meeting = meeting_of(TIMELINE)
    [embedded] = proposed(guarded, meeting)
    assert await guarded.refine(meeting, [embedded]) == []
    assert guarded.embedded.book.get(embedded.id) == embedded
    assert guarded.fallback_reasons["private_leak"] == 1
    # The same answer without the private name is taken.
    server.reset(lambda prompt: answer(item()))
    [refined] = await guarded.refine(meeting, [embedded])
    assert refined.description == "Prepare a Doodle poll for the next dry run."
    await guarded.client.close()
