"""The hybrid engine: the embedded gate decides every utterance; the scripted LLM server hears only candidates."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from delegate.config import Settings
from delegate.decide import build_engine
from delegate.decide.hybrid import HybridEngine, is_candidate
from delegate.decide.llm import LLMEngine
from delegate.decide.local import LocalEngine
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Decision, Profile, Scenario, Speaking, Utterance
from testkit.fake_openai import ScriptedOpenAI, closed_port_url, scripted_settings

PRINCIPAL = Profile(
    name="Sirui Zhao",
    label="PERSON4",
    aliases=["Sirui"],
    intents=["Find out when the client demo is due"],
    background=[
        BackgroundItem(context="if asked about travel", information="Has a visa appointment this Friday"),
        BackgroundItem(
            context="if asked about the parser", information="The parser rewrite is merged and tested"
        ),
        BackgroundItem(context="pay", information="Asking for a raise to 95000", shareable=False),
    ],
)

# A status meeting: mostly others' business, one question to Sirui, one topic of hers.
TIMELINE = [
    ("PERSON3", "Good morning everyone, let's start with the status round."),
    ("PERSON6", "The annotation tool is deployed on the new server."),
    ("PERSON3", "Great. Ondrej, did the backups run last night?"),
    ("PERSON6", "Yes, all of them finished before midnight."),
    ("PERSON3", "Okay."),
    ("PERSON7", "I updated the budget spreadsheet for the second quarter."),
    ("PERSON3", "Thanks, Martin. Please send it to finance."),
    ("PERSON7", "Will do."),
    ("PERSON3", "Sirui, is the parser rewrite done?"),
    ("PERSON4", "Yes, it's merged and tested."),
    ("PERSON3", "Good. Martin, what about the invoices?"),
    ("PERSON7", "They are all paid, the last one on Monday."),
    ("PERSON3", "Fine, let's move on to the hiring plan."),
    ("PERSON6", "We have two candidates for the annotation job."),
]

NAMES = {
    "PERSON3": "Anna Novak",
    "PERSON4": "Sirui Zhao",
    "PERSON6": "Ondrej Bojar",
    "PERSON7": "Martin Popel",
}


def new_meeting() -> MeetingState:
    return MeetingState(meeting_id="m-hybrid", attendees=list(NAMES), names=NAMES)


def last_line(prompt: str) -> str:
    block = prompt.split("# Transcript so far", 1)[1].split("```")[1]
    return [line for line in block.splitlines() if line.strip()][-1]


def answer_when_named(prompt: str) -> str:
    if "Sirui" in last_line(prompt):
        return json.dumps(
            {"thoughts": "Asked directly.", "scenario": "explicit_cue", "speak": "Yes, it's merged."}
        )
    return json.dumps({"thoughts": "Not my turn.", "scenario": "none", "speak": ""})


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(answer_when_named) as s:
        yield s


# Every speaking decision goes to the LLM here, so the timeline's clear name cues reach it too.
SURE_FROM = 1.01


def hybrid_for(settings: Settings) -> HybridEngine:
    local = LocalEngine()
    return HybridEngine(local, LLMEngine(settings, fallback=local), sure_from=SURE_FROM)


async def gate_decisions() -> list[Decision]:
    """The embedded engine's own decisions over the timeline, as the hybrid's gate sees them."""
    engine, meeting, out = LocalEngine(), new_meeting(), []
    for i, (speaker, text) in enumerate(TIMELINE):
        meeting.add(Utterance(id=i, speaker=speaker, text=text))
        out.append(await engine.decide(meeting, PRINCIPAL))
    return out


async def replay(engine: HybridEngine) -> list[Decision]:
    meeting, out = new_meeting(), []
    for i, (speaker, text) in enumerate(TIMELINE):
        meeting.add(Utterance(id=i, speaker=speaker, text=text))
        out.append(await engine.decide(meeting, PRINCIPAL))
    return out


def test_candidates() -> None:
    silent = Decision(utterance_id=1, scenario=Scenario.none, reason="r", confidence=0.9, engine="local")
    assert not is_candidate(silent)
    assert is_candidate(silent.model_copy(update={"confidence": 0.3}))
    assert is_candidate(silent.model_copy(update={"scenario": Scenario.chime_in}))
    assert is_candidate(silent.model_copy(update={"speak": "Yes.", "confidence": 0.6}))
    assert not is_candidate(silent.model_copy(update={"speak": "Yes.", "confidence": 0.95}))


async def test_the_llm_hears_only_candidate_utterances(server: ScriptedOpenAI) -> None:
    server.reset(answer_when_named)
    gate = await gate_decisions()
    candidates = [d.utterance_id for d in gate if is_candidate(d, sure_from=SURE_FROM)]
    assert 0 < len(candidates) < len(TIMELINE) / 2
    assert 8 in candidates  # "Sirui, is the parser rewrite done?"

    engine = hybrid_for(scripted_settings(server.base_url))
    decisions = await replay(engine)

    assert [last_line(p) for p in server.prompts] == [
        f"{NAMES[TIMELINE[i][0]]}: {TIMELINE[i][1]}" for i in candidates
    ]
    assert (engine.decisions, engine.calls, engine.fallbacks) == (len(TIMELINE), len(candidates), 0)
    assert engine.stats()["llm_calls_per_100_utterances"] == round(100 * len(candidates) / len(TIMELINE), 2)
    for decision, gated in zip(decisions, gate, strict=True):
        assert decision.engine == "hybrid"
        assert decision.utterance_id == gated.utterance_id
        if decision.utterance_id not in candidates:
            assert decision.model_dump(exclude={"engine", "latency_ms"}) == gated.model_dump(
                exclude={"engine", "latency_ms"}
            )
    assert all("95000" not in p and "raise" not in p for p in server.prompts)
    assert decisions[8].speak == "Yes, it's merged."
    assert decisions[8].reason == "llm: Asked directly."
    assert (
        "A quick rule-based check of the last utterance says: explicit cue"
        in server.prompts[candidates.index(8)]
    )


async def test_a_dead_endpoint_leaves_the_gate_decisions(server: ScriptedOpenAI) -> None:
    gate = await gate_decisions()
    # A generous budget: a refused connection and its retry fit in it however busy the machine is.
    engine = hybrid_for(scripted_settings(closed_port_url(), llm_timeout_s=5.0))
    decisions = await replay(engine)

    assert [(d.utterance_id, d.speak, d.scenario) for d in decisions] == [
        (g.utterance_id, g.speak, g.scenario) for g in gate
    ]
    assert engine.fallbacks == engine.calls == sum(is_candidate(g, sure_from=SURE_FROM) for g in gate)
    # Each call: its request and the one retry, refused at once; the budget is test_llm.py's to check.
    assert engine.requests == 2 * engine.calls
    assert all(
        d.reason.startswith("llm fallback (connection)")
        for d, g in zip(decisions, gate, strict=True)
        if is_candidate(g, sure_from=SURE_FROM)
    )


def test_build_engine_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = scripted_settings("http://127.0.0.1:9/v1")
    assert build_engine("llm", settings).name == "llm"
    hybrid = build_engine("hybrid", settings)
    assert isinstance(hybrid, HybridEngine) and hybrid.name == "hybrid"
    with pytest.raises(ValueError, match="unknown engine"):
        build_engine("oracle", settings)


async def test_confident_speech_stands_without_a_call(server: ScriptedOpenAI) -> None:
    server.reset(answer_when_named)
    local = LocalEngine()
    engine = HybridEngine(local, LLMEngine(scripted_settings(server.base_url), fallback=local))
    gate = await gate_decisions()
    decisions = await replay(engine)
    sure = [g for g in gate if g.spoke and g.confidence >= 0.8]
    assert sure, "the timeline has a clear name cue"
    assert engine.calls == sum(is_candidate(g) for g in gate) < sum(is_candidate(g, sure_from=SURE_FROM) for g in gate)
    for decision, gated in zip(decisions, gate, strict=True):
        if gated in sure:
            assert decision.speak == gated.speak and decision.engine == "hybrid"


def always_speak(prompt: str) -> str:
    return json.dumps({"thoughts": "I have something.", "scenario": "chime_in", "speak": "The parser rewrite is merged and tested."})


async def test_at_the_addressed_level_a_silent_gate_is_final_and_the_model_cannot_chime_in(server: ScriptedOpenAI) -> None:
    spoke = {}
    for level in (Speaking.addressed, Speaking.forward):
        server.reset(always_speak)
        local = LocalEngine()
        # Every silence is "unsure" here: without the level, the model would be asked after every utterance.
        engine = HybridEngine(local, LLMEngine(scripted_settings(server.base_url), fallback=local), unsure_below=1.01, sure_from=SURE_FROM)
        meeting, said = new_meeting(), []
        principal = PRINCIPAL.model_copy(update={"speaking": level})
        for i, (speaker, text) in enumerate(TIMELINE):
            meeting.add(Utterance(id=i, speaker=speaker, text=text))
            if (await engine.decide(meeting, principal)).spoke:
                said.append(i)
        spoke[level] = said
    assert 8 in spoke[Speaking.addressed]  # named: answered at every level
    assert set(spoke[Speaking.addressed]) < set(spoke[Speaking.forward])
