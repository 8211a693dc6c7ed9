"""Ask the delegate with an LLM: the embedded asker's retrieval feeds `prompts/ask.md.j2`; its answer is the fallback.

Whatever the endpoint does (errors, hangs, cites turns it was not shown, says nothing), an answer comes
back within `llm_timeout_s`: the embedded one, with the engine marked as the asker's.
"""

from __future__ import annotations

import time

import structlog
from pydantic import BaseModel, ConfigDict, Field

from delegate.ask.base import NO_ANSWER, WITHHELD, Answer, Audience
from delegate.ask.embedded import EmbeddedAsker, outbound_text, question_type
from delegate.ask.retrieval import Hit
from delegate.config import Settings
from delegate.language.text import MASK
from delegate.llm.client import LLMClient, LLMFailure, call_budget, chat_json, make_client
from delegate.llm.prompts import approx_tokens, principal_view, render
from delegate.meeting import MeetingState
from delegate.models import Profile

log = structlog.get_logger(__name__)

ASK_PROMPT = "ask.md.j2"
LLM_CONFIDENCE = 0.75
HYBRID_SURE_FROM = 0.6
"""The hybrid asker keeps an embedded answer at least this confident and asks the LLM only otherwise."""
NEIGHBOURS = 1
"""Turns shown on each side of a retrieved one: an answer often sits in the reply to the turn that matched."""


class AskReply(BaseModel):
    """The JSON object the ask prompt asks for."""

    model_config = ConfigDict(extra="ignore")

    answer: str
    turn_ids: list[int] = Field(default_factory=list)
    answered: bool = True


class LLMAsker:
    """`llm`: every question goes to the model; `hybrid`: only those the embedded asker is unsure of."""

    def __init__(
        self,
        settings: Settings,
        embedded: EmbeddedAsker | None = None,
        client: LLMClient | None = None,
        *,
        hybrid: bool = False,
    ) -> None:
        self.settings = settings
        self.embedded = embedded or EmbeddedAsker()
        self.client = client or make_client(settings)
        self.hybrid = hybrid
        self.name = "hybrid" if hybrid else "llm"
        self.calls = 0
        self.fallbacks = 0

    async def aclose(self) -> None:
        await self.client.close()

    def observe(self, meeting: MeetingState) -> None:
        self.embedded.observe(meeting)

    def stale(self, meeting: MeetingState) -> bool:
        return self.embedded.stale(meeting)

    def prepare(self, meeting: MeetingState) -> None:
        self.embedded.prepare(meeting)

    def prompt(
        self, meeting: MeetingState, question: str, hits: list[Hit], principal: Profile | None, audience: Audience
    ) -> tuple[str, list[int]]:
        """The ask prompt within `llm_context_tokens`: retrieved turns (and neighbours), best first until full."""
        context = {
            "question": question,
            "question_type": question_type(question).value,
            "attendees": [meeting.display_name(a) for a in meeting.attendees],
            # The principal's notes reach the prompt only through principal_view (shareable items only),
            # and only when the principal asks.
            "principal": principal_view(principal) if principal is not None and audience == "principal" else None,
        }
        left = max(self.settings.llm_context_tokens - approx_tokens(render(ASK_PROMPT, turns=[], **context)), 64)
        chosen: dict[int, dict[str, object]] = {}
        for hit in hits:
            for i in range(hit.index - NEIGHBOURS, hit.index + NEIGHBOURS + 1):
                if not 0 <= i < len(meeting.utterances) or i in chosen:
                    continue
                u = meeting.utterances[i]
                text = MASK.sub(lambda m: meeting.names.get(m.group(1), m.group(0)), u.text)
                line = {"id": u.id, "speaker": meeting.display_name(u.speaker), "text": text}
                cost = approx_tokens(f"[{u.id}] {line['speaker']}: {text}\n")
                if cost > left:
                    continue
                chosen[i] = line
                left -= cost
        turns = [chosen[i] for i in sorted(chosen)]
        return render(ASK_PROMPT, turns=turns, **context), [int(t["id"]) for t in turns]  # type: ignore[call-overload]

    async def ask(
        self, meeting: MeetingState, question: str, principal: Profile | None, audience: Audience
    ) -> Answer:
        started = time.perf_counter()
        fallback = await self.embedded.ask(meeting, question, principal, audience)
        if self.hybrid and fallback.confidence >= HYBRID_SURE_FROM:
            return fallback.model_copy(update={"engine": self.name})
        bound = log.bind(meeting_id=meeting.meeting_id, engine=self.name)
        self.calls += 1
        hits = self.embedded.retrieve(meeting, question)
        prompt, shown = self.prompt(meeting, question, hits, principal, audience)
        budget = call_budget(self.settings.llm_timeout_s, started)
        try:
            reply = await chat_json(
                self.client,
                self.settings.llm_model,
                prompt,
                AskReply,
                budget_s=budget,
                attempts=self.settings.llm_retries + 1,
                max_tokens=self.settings.llm_max_tokens,
                logger=bound,
            )
            text = " ".join(reply.answer.split())
            if not text:
                raise LLMFailure("invalid_output", "empty answer")
            cited = [i for i in reply.turn_ids if i in shown]
            if reply.turn_ids and not cited:
                raise LLMFailure("invalid_output", "cites only turns it was not shown")
        except LLMFailure as failure:
            self.fallbacks += 1
            latency_ms = (time.perf_counter() - started) * 1000
            bound.warning("ask_llm_fallback", kind=failure.kind, detail=failure.detail, latency_ms=round(latency_ms, 1))
            return fallback.model_copy(update={"engine": self.name, "latency_ms": latency_ms})
        wanted = set(cited)
        by_id = {u.id: u for u in meeting.utterances if u.id in wanted}
        shown_texts = [by_id[i].text for i in cited if i in by_id]
        answered = reply.answered and bool(cited)
        text = outbound_text(text if answered else NO_ANSWER, principal, audience, shown_texts)
        answered = answered and text not in (NO_ANSWER, WITHHELD)
        latency_ms = (time.perf_counter() - started) * 1000
        bound.info("ask_llm_answer", answered=answered, turns=len(cited), latency_ms=round(latency_ms, 1))
        return Answer(
            question=question,
            question_type=question_type(question),
            text=text,
            answered=answered,
            turn_ids=cited if answered else [],
            speakers=list(dict.fromkeys(meeting.display_name(by_id[i].speaker) for i in cited if i in by_id))
            if answered
            else [],
            confidence=LLM_CONFIDENCE if answered else 0.0,
            engine=self.name,
            latency_ms=latency_ms,
        )
