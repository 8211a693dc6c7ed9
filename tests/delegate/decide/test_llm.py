"""The LLM engine against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from delegate import guard
from delegate.config import Settings
from delegate.decide.llm import THOUGHTS_WITHHELD, LLMEngine
from delegate.decide.local import LocalEngine
from delegate.llm.client import CANCEL_MARGIN_S, make_client
from delegate.llm.prompts import approx_tokens
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Scenario, Utterance
from testkit.fake_openai import Reply, ScriptedOpenAI, closed_port_url, scripted_settings

SECRET = "Negotiating a raise to 95000 with Petra Kowalczyk before the reorganisation"

PRINCIPAL = Profile(
    name="Sirui Zhao",
    label="PERSON4",
    aliases=["Sirui"],
    intents=["Find out when the demo for the client is due"],
    background=[
        BackgroundItem(
            context="if asked about travel or next week", information="Has a visa appointment this Friday"
        ),
        BackgroundItem(context="if the salary review comes up", information=SECRET, shareable=False),
        BackgroundItem(
            context="if asked about the parser", information="The parser rewrite is merged and tested"
        ),
    ],
)

TIMELINE = [
    ("PERSON3", "Good morning everyone, let's start with the status round."),
    ("PERSON6", "The annotation tool is deployed on the new server."),
    ("PERSON3", "Thanks. Any blockers on the data side?"),
    ("PERSON6", "No blockers for now."),
    ("PERSON3", "Sirui, are you travelling next week?"),
]


def meeting_of(timeline: list[tuple[str, str]], meeting_id: str = "m-test") -> MeetingState:
    meeting = MeetingState(
        meeting_id=meeting_id,
        attendees=["PERSON3", "PERSON4", "PERSON6"],
        names={"PERSON3": "Anna Novak", "PERSON4": "Sirui Zhao", "PERSON6": "Ondrej Bojar"},
    )
    meeting.extend([Utterance(id=i, speaker=s, text=t) for i, (s, t) in enumerate(timeline)])
    return meeting


def last_line(prompt: str) -> str:
    """The newest transcript line shown in an engagement prompt."""
    block = prompt.split("# Transcript so far", 1)[1].split("```")[1]
    return [line for line in block.splitlines() if line.strip()][-1]


def engage(speak: str, scenario: str = "explicit_cue", thoughts: str = "Anna asks Sirui directly.") -> str:
    return json.dumps({"thoughts": thoughts, "scenario": scenario, "speak": speak})


def answer_when_named(prompt: str) -> str:
    if "Sirui" in last_line(prompt):
        return engage("Yes, I have a visa appointment this Friday, so I'll be here next week.")
    return engage("", scenario="none", thoughts="Not addressed.")


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(answer_when_named) as s:
        yield s


async def local_decision(meeting: MeetingState):  # noqa: ANN201 - a Decision
    return await LocalEngine().decide(
        meeting_of([(u.speaker, u.text) for u in meeting.utterances]), PRINCIPAL
    )


async def test_correct_decision_comes_from_the_llm(server: ScriptedOpenAI) -> None:
    server.reset(answer_when_named)
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)

    assert decision.engine == "llm"
    assert decision.utterance_id == 4
    assert decision.scenario is Scenario.explicit_cue
    assert decision.speak == "Yes, I have a visa appointment this Friday, so I'll be here next week."
    assert decision.reason.startswith("llm: Anna asks Sirui")
    assert decision.used_background == [0]
    assert (engine.calls, engine.requests, engine.fallbacks) == (1, 1, 0)
    assert server.bodies[0]["model"] == "scripted-model"
    bound = server.bodies[0]["response_format"]
    assert bound["type"] == "json_schema" and bound["json_schema"]["strict"] is True
    assert bound["json_schema"]["schema"]["required"] == ["thoughts", "scenario", "speak"]
    assert bound["json_schema"]["schema"]["additionalProperties"] is False
    await engine.aclose()


async def test_silence_from_the_llm(server: ScriptedOpenAI) -> None:
    server.reset(answer_when_named)
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE[:4]), PRINCIPAL)
    assert not decision.spoke
    assert decision.scenario is Scenario.none
    assert engine.fallbacks == 0
    await engine.aclose()


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(content="Sure! Sirui should say she is travelling."), "invalid_output"),
        (Reply(content='{"thoughts": "no speak field"}'), "invalid_output"),
        (Reply(content=None), "invalid_output"),
        (Reply(status=500), "http_error"),
        (Reply(status=503), "http_error"),
    ],
)
async def test_bad_answers_fall_back_to_the_embedded_engine(
    server: ScriptedOpenAI, reply: Reply, kind: str
) -> None:
    server.reset(lambda prompt: reply)
    engine = LLMEngine(scripted_settings(server.base_url, llm_retries=2), fallback=LocalEngine())
    meeting = meeting_of(TIMELINE)
    decision = await engine.decide(meeting, PRINCIPAL)
    expected = await local_decision(meeting)

    assert decision.engine == "llm"
    assert decision.reason == f"llm fallback ({kind}): {expected.reason}"
    assert (decision.utterance_id, decision.scenario, decision.speak) == (
        expected.utterance_id,
        expected.scenario,
        expected.speak,
    )
    assert (engine.calls, engine.fallbacks, engine.fallback_reasons[kind]) == (1, 1, 1)
    assert engine.requests == 3 == len(server.prompts)  # one try and two retries
    await engine.aclose()


async def test_speech_without_a_scenario_borrows_the_fallbacks(server: ScriptedOpenAI) -> None:
    server.reset(lambda prompt: engage("I'll be away on Friday.", scenario="none"))
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    meeting = meeting_of(TIMELINE)
    decision = await engine.decide(meeting, PRINCIPAL)
    assert decision.speak == "I'll be away on Friday."
    assert decision.scenario is (await local_decision(meeting)).scenario is Scenario.explicit_cue
    await engine.aclose()


async def test_client_errors_are_not_retried(server: ScriptedOpenAI) -> None:
    server.reset(lambda prompt: Reply(status=400))
    engine = LLMEngine(scripted_settings(server.base_url, llm_retries=3), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.reason.startswith("llm fallback (http_error)")
    assert engine.requests == 1
    await engine.aclose()


async def test_a_retry_recovers_from_one_failure(server: ScriptedOpenAI) -> None:
    answers = iter([Reply(status=500), Reply(content=engage("I'm away on Friday only."))])
    server.reset(lambda prompt: next(answers))
    engine = LLMEngine(scripted_settings(server.base_url, llm_retries=1), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.speak == "I'm away on Friday only."
    assert (engine.requests, engine.fallbacks) == (2, 0)
    await engine.aclose()


class Clock:
    """The engine's clock, read by it and moved by the test: a budget is checked by what the engine asks
    for, not by how long a busy machine took."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def llm_calls(monkeypatch: pytest.MonkeyPatch) -> tuple[Clock, list[float]]:
    """The engine on a test clock; every LLM call's budget is recorded, and the clock moves on by it when
    the call fails (it waited all of it)."""
    from delegate.decide import llm
    from delegate.llm import client

    clock = Clock()
    budgets: list[float] = []
    real = llm.chat_json

    async def chat_json(*args: Any, budget_s: float, **kwargs: Any) -> Any:
        budgets.append(budget_s)
        try:
            return await real(*args, budget_s=budget_s, **kwargs)
        except llm.LLMFailure:
            clock.now += budget_s
            raise

    monkeypatch.setattr(llm, "time", SimpleNamespace(perf_counter=clock))
    monkeypatch.setattr(client, "time", SimpleNamespace(perf_counter=clock))  # the call's budget is read there
    monkeypatch.setattr(llm, "chat_json", chat_json)
    return clock, budgets


async def test_a_slow_answer_falls_back_within_the_budget(
    server: ScriptedOpenAI, llm_calls: tuple[Clock, list[float]]
) -> None:
    clock, budgets = llm_calls
    server.reset(lambda prompt: Reply(content=engage("Too late."), delay_s=3.0))
    engine = LLMEngine(
        scripted_settings(server.base_url, llm_timeout_s=0.4, llm_retries=2), fallback=LocalEngine()
    )
    meeting = meeting_of(TIMELINE)

    decision = await engine.decide(meeting, PRINCIPAL)

    # It gave the LLM almost all of the budget (a few ms are kept back for unwinding), no more, and one
    # request: a retry would not fit. The answer, 3 s away, was not waited for.
    assert budgets == [pytest.approx(0.4 - CANCEL_MARGIN_S)] and engine.requests == 1
    assert decision.reason.startswith("llm fallback (timeout)")
    assert decision.speak == (await local_decision(meeting)).speak
    assert decision.latency_ms == pytest.approx(budgets[0] * 1000)

    # Time the embedded engine spent deciding comes out of the LLM's share.
    real_decide = engine.fallback.decide

    async def slow_decide(*args: Any) -> Any:
        clock.now += 0.1
        return await real_decide(*args)

    engine.fallback.decide = slow_decide  # type: ignore[method-assign]
    await engine.decide(meeting, PRINCIPAL)
    assert budgets[1] == pytest.approx(0.4 - 0.1 - CANCEL_MARGIN_S)
    await engine.aclose()


async def test_a_dead_endpoint_loses_no_decision(llm_calls: tuple[Clock, list[float]]) -> None:
    _, budgets = llm_calls
    engine = LLMEngine(
        # A generous budget: three refused connections fit in it however busy the machine is.
        scripted_settings(closed_port_url(), llm_timeout_s=5.0, llm_retries=2), fallback=LocalEngine()
    )
    meeting = meeting_of([])
    for i, (speaker, text) in enumerate(TIMELINE):
        meeting.add(Utterance(id=i, speaker=speaker, text=text))
        decision = await engine.decide(meeting, PRINCIPAL)
        assert decision.utterance_id == i
        assert decision.reason.startswith("llm fallback (connection)")
    # Each decision's three attempts shared one budget, within the decision's.
    assert budgets == [pytest.approx(5.0 - CANCEL_MARGIN_S)] * len(TIMELINE)
    assert (engine.decisions, engine.calls, engine.fallbacks) == (5, 5, 5)
    assert engine.requests == 15
    await engine.aclose()


async def test_the_prompt_carries_the_profile_but_no_private_item(server: ScriptedOpenAI) -> None:
    server.reset(answer_when_named)
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    prompt = server.prompts[0]

    assert "Sirui Zhao" in prompt
    assert "Find out when the demo for the client is due" in prompt
    assert "Has a visa appointment this Friday" in prompt
    assert "if asked about travel or next week" in prompt
    assert "The parser rewrite is merged and tested" in prompt
    assert "Anna Novak: Sirui, are you travelling next week?" in prompt
    for private in (SECRET, "95000", "Petra", "salary review", "reorganisation"):
        assert private not in prompt
    await engine.aclose()


async def test_speech_that_leaks_a_private_item_is_dropped(server: ScriptedOpenAI) -> None:
    server.reset(lambda prompt: engage("Honestly I'm busy negotiating my raise to 95000 with Petra."))
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    meeting = meeting_of(TIMELINE)
    decision = await engine.decide(meeting, PRINCIPAL)
    assert decision.reason.startswith("llm fallback (private_leak)")
    assert "95000" not in decision.speak
    assert engine.fallback_reasons["private_leak"] == 1
    await engine.aclose()


async def test_speech_a_colleague_would_not_say_is_dropped(server: ScriptedOpenAI) -> None:
    pasted = "Hi all, PAR-12 parser rewrite (status Done, priority High). Details at https://wiki.example.com/parser."
    server.reset(lambda prompt: engage(pasted))
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.reason.startswith("llm fallback (unspeakable)")
    assert decision.speak != pasted and "https://" not in decision.speak
    assert engine.fallback_reasons["unspeakable"] == 1
    await engine.aclose()


def test_the_guard_spares_what_the_meeting_already_said() -> None:
    said_in_meeting = ["Petra Kowalczyk mentioned the reorganisation yesterday.", "ok", "ok", "ok"]
    assert guard.check("Petra talked about the reorganisation.", PRINCIPAL, said_in_meeting).allowed
    assert guard.check("I'm asking for 95000.", PRINCIPAL, said_in_meeting).item == 1
    assert guard.check("I have a visa appointment this Friday.", PRINCIPAL, []).allowed


async def test_the_transcript_window_fits_the_token_budget(server: ScriptedOpenAI) -> None:
    server.reset(answer_when_named)
    long_meeting = [
        ("PERSON6", f"Point number {i}: the evaluation numbers for batch {i} look stable.")
        for i in range(400)
    ]
    long_meeting.append(("PERSON3", "Sirui, are you travelling next week?"))
    settings = scripted_settings(server.base_url, llm_context_tokens=1500)
    engine = LLMEngine(settings, fallback=LocalEngine())
    decision = await engine.decide(meeting_of(long_meeting), PRINCIPAL)
    prompt = server.prompts[0]

    assert decision.spoke
    assert approx_tokens(prompt) <= 1500
    assert "Point number 0:" not in prompt
    assert "Point number 399:" in prompt
    assert last_line(prompt) == "Anna Novak: Sirui, are you travelling next week?"
    await engine.aclose()


def test_an_llm_engine_needs_a_key_or_a_local_endpoint() -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        make_client(Settings(llm_base_url=None, llm_api_key=None))
    assert make_client(Settings(llm_base_url="http://127.0.0.1:9/v1", llm_api_key=None)).api_key == "unused"


@pytest.mark.parametrize(
    "leak",
    [
        "Honestly, Petra knows.",  # one private name
        "Ask K-o-w-a-l-c-z-y-k.",  # spelled out
        "It's about ninety-five thousand.",  # the number in words
        "Je négocie 95 000 avec Kowalczyk.",  # translated: the number and the name survive
    ],
)
async def test_the_guard_holds_short_spelled_and_translated_leaks(server: ScriptedOpenAI, leak: str) -> None:
    server.reset(lambda prompt: engage(leak))
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.reason.startswith("llm fallback (private_leak)"), decision.reason
    assert decision.speak == (await local_decision(meeting_of(TIMELINE))).speak
    assert "95" not in decision.reason and "Kowalczyk" not in decision.reason
    await engine.aclose()


async def test_the_guard_holds_a_confirmed_guess(server: ScriptedOpenAI) -> None:
    guess = [*TIMELINE[:4], ("PERSON3", "Sirui, is it true you are negotiating with Petra Kowalczyk?")]
    server.reset(lambda prompt: engage("Yes, that's right."))
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(guess), PRINCIPAL)
    assert decision.reason.startswith("llm fallback (private_leak)")
    assert decision.speak != "Yes, that's right."
    await engine.aclose()


async def test_the_models_thoughts_pass_the_guard_before_they_become_the_reason(server: ScriptedOpenAI) -> None:
    server.reset(
        lambda prompt: engage(
            "I have a visa appointment this Friday.", thoughts="Must not mention the raise to 95000 with Petra."
        )
    )
    engine = LLMEngine(scripted_settings(server.base_url), fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.speak == "I have a visa appointment this Friday."
    assert "95000" not in decision.reason and "Petra" not in decision.reason
    assert decision.reason == f"llm: {THOUGHTS_WITHHELD}"
    await engine.aclose()


async def test_long_speech_is_cut_at_a_sentence_or_falls_back(server: ScriptedOpenAI) -> None:
    sentence = "I have a visa appointment this Friday. "
    server.reset(lambda prompt: engage(sentence * 40))
    settings = scripted_settings(server.base_url).model_copy(update={"llm_max_speak_chars": 100})
    engine = LLMEngine(settings, fallback=LocalEngine())
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.speak == (sentence * 2).strip() and len(decision.speak) <= 100
    server.reset(lambda prompt: engage("word " * 400))
    decision = await engine.decide(meeting_of(TIMELINE), PRINCIPAL)
    assert decision.reason.startswith("llm fallback (too_long)") and len(decision.speak) < 400
    await engine.aclose()
