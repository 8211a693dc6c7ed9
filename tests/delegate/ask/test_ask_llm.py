"""The LLM asker against a scripted OpenAI-compatible server over real HTTP: its answer, and every fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from delegate.ask.llm import LLMAsker
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Utterance
from testkit.fake_openai import Reply, ScriptedOpenAI, closed_port_url, scripted_settings

SECRET = "Negotiating a raise to 95000 with Petra Kowalczyk"
PRINCIPAL = Profile(
    name="Sirui Zhao",
    label="PERSON4",
    background=[
        BackgroundItem(context="if asked about travel", information="Has a visa appointment this Friday"),
        BackgroundItem(context="if salaries come up", information=SECRET, shareable=False),
    ],
)
QUESTION = "Who is the contact for diarization?"


def meeting() -> MeetingState:
    state = MeetingState("m-ask", names={"PERSON3": "Anna Novak", "PERSON6": "Ondrej Bojar"})
    lines = [
        ("PERSON3", "Let's go through the shared task data."),
        ("PERSON6", "The corpus is ready, we only need the speaker labels."),
        ("PERSON3", "If anyone needs diarization, who should they write to?"),
        ("PERSON6", "For diarization the contact is [PERSON7], he runs the pipeline."),
        ("PERSON3", "Good, then we move on to the annotation schedule."),
    ]
    state.extend([Utterance(id=i, speaker=s, text=t) for i, (s, t) in enumerate(lines)])
    return state


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(lambda prompt: "{}") as s:
        yield s


async def test_the_model_answers_from_the_retrieved_turns(server: ScriptedOpenAI) -> None:
    server.reset(lambda p: json.dumps({"answer": "PERSON7 is the contact (Ondrej Bojar).", "turn_ids": [3], "answered": True}))
    # A generous budget: the first question of the test run also loads the embedding model.
    asker = LLMAsker(scripted_settings(server.base_url, llm_timeout_s=10.0))
    try:
        answer = await asker.ask(meeting(), QUESTION, PRINCIPAL, "principal")
    finally:
        await asker.aclose()
    assert answer.engine == "llm" and answer.text == "PERSON7 is the contact (Ondrej Bojar)."
    assert answer.turn_ids == [3] and answer.speakers == ["Ondrej Bojar"]
    prompt = server.prompts[-1]
    assert QUESTION in prompt and "[3] Ondrej Bojar: For diarization" in prompt
    # The prompt sees the principal's notes only through principal_view: never the private one.
    assert "visa appointment" in prompt and "95000" not in prompt and "Kowalczyk" not in prompt


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500),
        Reply(content="not json at all"),
        Reply(content=json.dumps({"answer": "PERSON9", "turn_ids": [99]})),  # cites a turn it was not shown
        Reply(content=json.dumps({"answer": "late", "turn_ids": [3]}), delay_s=2.0),  # past the 1 s budget
    ],
    ids=["http_500", "invalid_json", "unshown_turn", "timeout"],
)
async def test_any_failure_falls_back_to_the_embedded_answer(server: ScriptedOpenAI, reply: Reply) -> None:
    server.reset(lambda p: reply)
    asker = LLMAsker(scripted_settings(server.base_url, llm_retries=0))
    try:
        answer = await asker.ask(meeting(), QUESTION, None, "meeting")
    finally:
        await asker.aclose()
    embedded = asker.embedded.answer(meeting(), QUESTION)
    assert answer.engine == "llm" and asker.fallbacks == 1
    assert answer.text == embedded.text and answer.turn_ids == embedded.turn_ids
    # For the timeout, the embedded answer is the asker not waiting for the 2-s one, which would be "late".
    assert "[PERSON7]" in answer.text or "PERSON7" in answer.text


async def test_a_dead_endpoint_falls_back() -> None:
    asker = LLMAsker(scripted_settings(closed_port_url()))
    try:
        answer = await asker.ask(meeting(), QUESTION, None, "meeting")
    finally:
        await asker.aclose()
    assert asker.fallbacks == 1 and answer.answered and answer.engine == "llm"


async def test_hybrid_asks_the_model_only_when_the_embedded_answer_is_unsure(server: ScriptedOpenAI) -> None:
    server.reset(lambda p: json.dumps({"answer": "Nothing says so.", "turn_ids": [], "answered": False}))
    asker = LLMAsker(scripted_settings(server.base_url), hybrid=True)
    try:
        sure = await asker.ask(meeting(), "Who were the participants of the meeting?", None, "meeting")
        assert asker.calls == 0 and sure.engine == "hybrid" and "Anna Novak" in sure.text
        unsure = await asker.ask(meeting(), "What is the budget of the catering company?", None, "meeting")
    finally:
        await asker.aclose()
    assert asker.calls == 1 and len(server.prompts) == 1
    assert not unsure.answered and unsure.turn_ids == []
