"""The LLM judge against a scripted OpenAI-compatible server, and its agreement figures with the offline judge."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from benchmark.scoring.judge import Attribution, JudgeInput, Judgement, OfflineJudge, PointJudgement
from benchmark.scoring.llm_judge import LLMJudge, agreement
from delegate.config import Settings
from delegate.llm.client import LLMFailure
from delegate.models import BackgroundItem, Profile
from testkit.fake_openai import Reply, Script, ScriptedOpenAI

PROFILE = Profile(
    name="Sirui Zhao",
    label="PERSON4",
    aliases=["Sirui"],
    intents=["Find out when the client demo is due"],
    background=[
        BackgroundItem(context="if asked about travel", information="Has a visa appointment this Friday"),
        BackgroundItem(context="pay", information="Asking for a raise to 95000", shareable=False),
    ],
)

ITEM = JudgeInput(
    response="I can't come on Friday, I have my visa appointment. When is the client demo due?",
    expected_points=["Has a visa appointment on Friday", "Will send the slides tonight"],
    profile=PROFILE,
    snapshot=["Anna Novak: Good morning.", "Anna Novak: Sirui, can you come to the office on Friday?"],
)

RECALL = {
    "verdicts": [{"index": 0, "why": "visa on Friday", "covered": True}, {"index": 1, "covered": False}]
}
ATTRIBUTION = {
    "points": [
        {"point": "Cannot come on Friday: visa appointment", "attribution": "expected", "expected_index": 0},
        {"point": "Asks when the client demo is due", "attribution": "context", "expected_index": None},
    ]
}


def scripted(recall: object = RECALL, attribution: object = ATTRIBUTION) -> Script:
    def script(prompt: str) -> str:
        if '{"verdicts"' in prompt:
            return json.dumps(recall)
        return json.dumps(attribution)

    return script


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(scripted()) as s:
        yield s


def judge_for(server: ScriptedOpenAI) -> LLMJudge:
    settings = Settings(llm_base_url=server.base_url, llm_api_key="k", llm_retries=1)
    return LLMJudge(settings, model="judge-model", timeout_s=5.0)


async def test_recall_and_attribution_from_the_model(server: ScriptedOpenAI) -> None:
    server.reset(scripted())
    judge = judge_for(server)
    judgement = await judge.judge(ITEM)

    assert judgement.covered == [0]
    assert judgement.n_expected == 2
    assert judgement.strict == 0.5
    assert [(p.attribution, p.expected_index) for p in judgement.points] == [
        ("expected", 0),
        ("context", None),
    ]
    assert judge.calls == judge.requests == len(server.prompts) == 2
    assert {b["model"] for b in server.bodies} == {"judge-model"}
    await judge.aclose()


async def test_the_prompts_show_what_they_judge_and_nothing_private(server: ScriptedOpenAI) -> None:
    server.reset(scripted())
    judge = judge_for(server)
    await judge.judge(ITEM)
    recall = next(p for p in server.prompts if '{"verdicts"' in p)
    attribution = next(p for p in server.prompts if '{"points"' in p)

    for prompt in (recall, attribution):
        assert ITEM.response in prompt
        assert "[1] Will send the slides tonight" in prompt
    assert "Has a visa appointment this Friday" in attribution
    assert "Find out when the client demo is due" in attribution
    assert "Anna Novak: Sirui, can you come to the office on Friday?" in attribution
    for prompt in server.prompts:
        assert "95000" not in prompt and "raise" not in prompt
    await judge.aclose()


async def test_the_snapshot_is_cut_to_the_context_budget(server: ScriptedOpenAI) -> None:
    server.reset(scripted())
    long = ITEM.model_copy(
        update={"snapshot": [f"Ondrej Bojar: status line {i} of a long meeting" for i in range(2000)]}
    )
    settings = Settings(llm_base_url=server.base_url, llm_api_key="k", llm_context_tokens=1200)
    judge = LLMJudge(settings)
    prompt = judge.attribution_prompt(long)
    assert "status line 1999 of" in prompt and "status line 0 of" not in prompt
    assert len(prompt) / 4 <= 1200
    await judge.aclose()


async def test_an_empty_response_costs_no_call(server: ScriptedOpenAI) -> None:
    server.reset(scripted())
    judge = judge_for(server)
    judgement = await judge.judge(ITEM.model_copy(update={"response": "  "}))
    assert judgement == Judgement(n_expected=2)
    assert server.prompts == []
    await judge.aclose()


async def test_indices_outside_the_expected_points_are_dropped(server: ScriptedOpenAI) -> None:
    server.reset(
        scripted(
            recall={"verdicts": [{"index": 7, "covered": True}, {"index": 1, "covered": True}]},
            attribution={"points": [{"point": "x", "attribution": "expected", "expected_index": 9}]},
        )
    )
    judge = judge_for(server)
    judgement = await judge.judge(ITEM)
    assert judgement.covered == [1]
    assert [(p.attribution, p.expected_index) for p in judgement.points] == [("hallucination", None)]
    await judge.aclose()


async def test_a_failing_model_raises(server: ScriptedOpenAI) -> None:
    server.reset(lambda prompt: Reply(content="I think the first point is covered."))
    judge = judge_for(server)
    with pytest.raises(LLMFailure) as failure:
        await judge.judge(ITEM)
    assert failure.value.kind == "invalid_output"
    await judge.aclose()


def _j(covered: list[int], n: int, *attributions: Attribution) -> Judgement:
    return Judgement(
        covered=covered,
        n_expected=n,
        points=[PointJudgement(point=f"p{i}", attribution=a) for i, a in enumerate(attributions)],
    )


def test_agreement_figures() -> None:
    offline = [_j([0], 2, "expected", "context"), _j([], 1, "hallucination"), _j([0, 1], 2, "expected")]
    llm = [_j([0], 2, "expected", "transcript"), _j([0], 1, "expected"), _j([0], 2, "expected")]
    figures = agreement(offline, llm)

    assert figures["responses"] == 3
    assert figures["loose"]["agreement"] == round(2 / 3, 4)
    assert figures["covered_points"] == {
        "points": 5,
        "agreement": 0.6,
        "kappa": pytest.approx(1 / 6, abs=1e-4),
    }
    assert figures["strict"]["mean_abs_difference"] == round((0 + 1 + 0.5) / 3, 4)
    assert figures["attribution"]["offline"] == {
        "expected": 0.5,
        "context": 0.25,
        "transcript": 0.0,
        "hallucination": 0.25,
    }
    assert figures["attribution"]["llm"]["expected"] == 0.75
    assert figures["attribution"]["points"] == {"offline": 4, "llm": 4}
    assert agreement(offline, offline)["covered_points"]["kappa"] == 1.0
    with pytest.raises(ValueError, match="same responses"):
        agreement(offline, llm[:2])


async def test_both_judges_on_the_same_item_give_comparable_figures(server: ScriptedOpenAI) -> None:
    server.reset(scripted())
    judge = judge_for(server)
    offline = await OfflineJudge().judge(ITEM)
    figures = agreement([offline], [await judge.judge(ITEM)])
    assert figures["responses"] == 1
    assert 0.0 <= figures["covered_points"]["agreement"] <= 1.0
    await judge.aclose()
