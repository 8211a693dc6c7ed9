"""The LLM answer judge: ELITR-Bench's 1-10 grading rubric (`prompts/judge_answer.md.j2`) put to a chat model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from benchmark.scoring.llm_judge import JudgeModel
from delegate.llm.prompts import render

JUDGE_PROMPT = "judge_answer.md.j2"


class GradeReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    feedback: str = ""
    score: int = Field(ge=1, le=10)


class LLMAnswerJudge(JudgeModel):
    """One call per answer; raises `LLMFailure` when the model gives no valid grade within `timeout_s`."""

    name = "llm"

    async def grade(self, question: str, response: str, reference: str) -> float:
        prompt = render(JUDGE_PROMPT, question=question, response=response, reference=reference)
        reply = await self._ask(prompt, GradeReply)
        return float(reply.score)
