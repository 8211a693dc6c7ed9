"""The LLM judge: recall and attribution by an OpenAI-compatible chat model, and its agreement with the offline judge.

Same interface as the offline judge (`benchmark.scoring.judge.Judge`); the procedures are the paper's, in our prompts
(`prompts/judge_recall.md.j2`, `prompts/judge_attribution.md.j2`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, TypeVar, get_args

import structlog
from pydantic import BaseModel, ConfigDict

from benchmark.scoring.judge import Attribution, JudgeInput, Judgement, PointJudgement
from delegate.config import Settings
from delegate.llm.client import LLMClient, chat_json, make_client
from delegate.llm.prompts import approx_tokens, principal_view, render, tail_within

log = structlog.get_logger(__name__)

RECALL_PROMPT = "judge_recall.md.j2"
ATTRIBUTION_PROMPT = "judge_attribution.md.j2"
ATTRIBUTIONS: tuple[str, ...] = get_args(Attribution)

T = TypeVar("T", bound=BaseModel)


class RecallVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    index: int
    covered: bool
    why: str = ""


class RecallReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[RecallVerdict]


class AttributedPoint(BaseModel):
    model_config = ConfigDict(extra="ignore")

    point: str
    attribution: Attribution
    expected_index: int | None = None


class AttributionReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    points: list[AttributedPoint]


class JudgeModel:
    """A judge's chat model: one model, a generous budget per call (a benchmark is not a live meeting),
    calls and HTTP requests counted. `LLMJudge` and the answer judge of `benchmark.qa` ask through it."""

    def __init__(
        self,
        settings: Settings | None = None,
        client: LLMClient | None = None,
        model: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        self.settings = settings or Settings()
        self.client = client or make_client(self.settings)
        self.model = model or self.settings.llm_model
        self.timeout_s = timeout_s
        self.calls = 0
        self._requests: Counter[str] = Counter()

    @property
    def requests(self) -> int:
        return self._requests["requests"]

    async def aclose(self) -> None:
        await self.client.close()

    async def _ask(self, prompt: str, reply_type: type[T]) -> T:
        self.calls += 1
        return await chat_json(
            self.client,
            self.model,
            prompt,
            reply_type,
            budget_s=self.timeout_s,
            attempts=self.settings.llm_retries + 1,
            on_request=self._requests,
            max_tokens=self.settings.llm_max_tokens,
        )


class LLMJudge(JudgeModel):
    """Two calls per response (recall, attribution), run together; raises `LLMFailure` if the model fails.

    The judge may use a stronger `model` than the delegate (default: `settings.llm_model`).
    """

    name = "llm"

    async def _recall(self, item: JudgeInput) -> list[int]:
        if not item.expected_points:
            return []
        prompt = render(RECALL_PROMPT, response=item.response, expected_points=item.expected_points)
        reply = await self._ask(prompt, RecallReply)
        n = len(item.expected_points)
        return sorted({v.index for v in reply.verdicts if v.covered and 0 <= v.index < n})

    def attribution_prompt(self, item: JudgeInput) -> str:
        """The attribution prompt, its snapshot cut to the newest lines within `llm_context_tokens`."""
        context = {
            "response": item.response,
            "expected_points": item.expected_points,
            "principal": principal_view(item.profile),
        }
        fixed = render(ATTRIBUTION_PROMPT, snapshot=[], **context)
        budget = max(self.settings.llm_context_tokens - approx_tokens(fixed), 64)
        return render(ATTRIBUTION_PROMPT, snapshot=tail_within(item.snapshot, budget), **context)

    async def _attribution(self, item: JudgeInput) -> list[PointJudgement]:
        reply = await self._ask(self.attribution_prompt(item), AttributionReply)
        n = len(item.expected_points)
        out: list[PointJudgement] = []
        for p in reply.points:
            k = p.expected_index if p.expected_index is not None and 0 <= p.expected_index < n else None
            # "expected" without a valid expected point is the model contradicting itself: not expected.
            attribution: Attribution = (
                p.attribution if p.attribution != "expected" or k is not None else "hallucination"
            )
            out.append(
                PointJudgement(
                    point=p.point,
                    attribution=attribution,
                    expected_index=k if attribution == "expected" else None,
                    score=1.0,
                )
            )
        return out

    async def judge(self, item: JudgeInput) -> Judgement:
        n = len(item.expected_points)
        if not item.response.strip():
            return Judgement(n_expected=n)
        covered, points = await asyncio.gather(self._recall(item), self._attribution(item))
        log.debug("llm_judgement", covered=covered, points=len(points))
        return Judgement(covered=covered, points=points, n_expected=n)


def _kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two yes/no raters; None when both say the same thing throughout (undefined)."""
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return round((observed - expected) / (1 - expected), 4)


def _shares(judgements: list[Judgement]) -> dict[str, float]:
    counts = Counter(p.attribution for j in judgements for p in j.points)
    total = sum(counts.values())
    return {a: round(counts[a] / total, 4) if total else 0.0 for a in ATTRIBUTIONS}


def agreement(offline: list[Judgement], llm: list[Judgement]) -> dict[str, Any]:
    """How far the offline judge agrees with the LLM judge on the same responses, in the same order.

    - `loose`: per response, covers at least one expected point or not (agreement share, Cohen's kappa).
    - `covered_points`: per (response, expected point), covered or not (agreement share, Cohen's kappa).
    - `strict`: mean strict recall by each judge and the mean absolute difference per response.
    - `attribution`: each judge's shares of main points by source, and the absolute differences. The
      judges split responses into points differently, so the shares are compared, not the points.
    """
    if len(offline) != len(llm):
        raise ValueError(
            f"agreement needs the same responses: {len(offline)} offline, {len(llm)} llm judgements"
        )
    pairs = [(o, m) for o, m in zip(offline, llm, strict=True) if o.n_expected == m.n_expected]
    if len(pairs) != len(offline):
        raise ValueError("agreement needs the same responses: the expected points differ")
    n = len(pairs)
    loose_o = [o.loose for o, _ in pairs]
    loose_m = [m.loose for _, m in pairs]
    cov_o = [k in o.covered for o, _ in pairs for k in range(o.n_expected)]
    cov_m = [k in m.covered for o, m in pairs for k in range(o.n_expected)]
    shares_o, shares_m = _shares(offline), _shares(llm)

    def share_equal(a: list[bool], b: list[bool]) -> float:
        return round(sum(x == y for x, y in zip(a, b, strict=True)) / len(a), 4) if a else 0.0

    return {
        "responses": n,
        "loose": {"agreement": share_equal(loose_o, loose_m), "kappa": _kappa(loose_o, loose_m)},
        "covered_points": {
            "points": len(cov_o),
            "agreement": share_equal(cov_o, cov_m),
            "kappa": _kappa(cov_o, cov_m),
        },
        "strict": {
            "offline": round(sum(o.strict for o, _ in pairs) / n, 4) if n else 0.0,
            "llm": round(sum(m.strict for _, m in pairs) / n, 4) if n else 0.0,
            "mean_abs_difference": round(sum(abs(o.strict - m.strict) for o, m in pairs) / n, 4)
            if n
            else 0.0,
        },
        "attribution": {
            "offline": shares_o,
            "llm": shares_m,
            "abs_difference": {a: round(abs(shares_o[a] - shares_m[a]), 4) for a in ATTRIBUTIONS},
            "points": {
                "offline": sum(len(o.points) for o in offline),
                "llm": sum(len(m.points) for m in llm),
            },
        },
    }
