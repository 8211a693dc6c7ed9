"""The LLM engine: asks an OpenAI-compatible chat endpoint whether the principal speaks, within a time budget.

Whatever the endpoint does (errors, hangs, answers nonsense, says something private), a decision comes
back within `llm_timeout_s`: the injected fallback engine's, with the failure named in its `reason`.
"""

from __future__ import annotations

import re
import time
from collections import Counter

import structlog
from pydantic import BaseModel, ConfigDict

from delegate import guard
from delegate.config import Settings
from delegate.decide.base import Engine
from delegate.decide.reply.plan import plan_for
from delegate.language.text import content_words
from delegate.llm.client import LLMClient, LLMFailure, call_budget, chat_json, make_client
from delegate.llm.prompts import (
    approx_tokens,
    principal_view,
    render,
    shareable_background,
    transcript_window,
)
from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, Scenario
from delegate.speakable import defects

log = structlog.get_logger(__name__)


ENGAGE_PROMPT = "engage.md.j2"
LLM_CONFIDENCE = 0.75
"""An LLM verdict carries no calibrated probability; this marks it as firmer than an unsure local one."""
_REASON_CHARS = 300
THOUGHTS_WITHHELD = "(the model's reasoning is withheld: it touched a private item)"
_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")


def cap_speech(speak: str, max_chars: int) -> str:
    """`speak` cut after its last full sentence within `max_chars`; LLMFailure(too_long) if none fits."""
    if len(speak) <= max_chars:
        return speak
    ends = [m.end() for m in _SENTENCE_END.finditer(speak, 0, max_chars + 1)]
    if not ends:
        raise LLMFailure("too_long", f"speech of {len(speak)} characters has no sentence end within {max_chars}")
    return speak[: ends[-1]]


class EngageReply(BaseModel):
    """The JSON object the engagement prompt asks for."""

    model_config = ConfigDict(extra="ignore")

    thoughts: str = ""
    scenario: Scenario | None = None
    speak: str


def _words_hit(text_words: frozenset[str], source: str) -> bool:
    words = content_words(source)
    return bool(words) and len(words & text_words) >= min(2, len(words))


class LLMEngine:
    """Decides with an LLM; `fallback` decides whenever the LLM cannot, within `settings.llm_timeout_s`.

    Counters for reports: `decisions` made, `calls` (decisions that consulted the LLM), `requests` (HTTP
    requests, retries included), `fallbacks` (consultations that ended in the fallback's decision), and
    `fallback_reasons` by kind.
    """

    name = "llm"

    def __init__(self, settings: Settings, fallback: Engine, client: LLMClient | None = None) -> None:
        self.settings = settings
        self.fallback = fallback
        self.client = client or make_client(settings)
        self.decisions = 0
        self.calls = 0
        self.fallbacks = 0
        self.fallback_reasons: Counter[str] = Counter()
        self._requests: Counter[str] = Counter()

    @property
    def requests(self) -> int:
        return self._requests["requests"]

    def stats(self) -> dict[str, float | int | dict[str, int]]:
        return {
            "decisions": self.decisions,
            "llm_calls": self.calls,
            "llm_requests": self.requests,
            "llm_fallbacks": self.fallbacks,
            "llm_fallback_reasons": dict(self.fallback_reasons),
            "llm_calls_per_100_utterances": round(100 * self.calls / self.decisions, 2)
            if self.decisions
            else 0.0,
        }

    async def aclose(self) -> None:
        await self.client.close()

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        started = time.perf_counter()
        self.decisions += 1
        # The fallback decides first: it takes microseconds and must be ready the moment the LLM fails.
        fallback = await self.fallback.decide(meeting, principal)
        return await self.consult(meeting, principal, fallback, started=started)

    def prompt(
        self, meeting: MeetingState, principal: Profile, hint: str | None = None
    ) -> tuple[str, list[str]]:
        """The engagement prompt within `llm_context_tokens`, and the transcript texts it shows."""
        view = principal_view(principal)
        attendees = [meeting.display_name(a) for a in meeting.attendees]
        # What the last turn asks of the principal, read by rule (`plan`): the prompt says what a colleague answers to each kind.
        kind = plan_for(meeting, principal).kind.value.replace("_", "/")
        fixed = render(ENGAGE_PROMPT, principal=view, attendees=attendees, transcript=[], hint=hint, turn_kind=kind)
        budget = max(self.settings.llm_context_tokens - approx_tokens(fixed), 64)
        window = transcript_window(meeting, principal, budget)
        prompt = render(ENGAGE_PROMPT, principal=view, attendees=attendees, transcript=window, hint=hint, turn_kind=kind)
        return prompt, [line.text for line in window]

    async def consult(
        self,
        meeting: MeetingState,
        principal: Profile,
        fallback: Decision,
        *,
        hint: str | None = None,
        engine: str | None = None,
        started: float | None = None,
    ) -> Decision:
        """The LLM's decision for the latest utterance, or `fallback` (relabelled) if the LLM fails."""
        started = time.perf_counter() if started is None else started
        engine = engine or self.name
        bound = log.bind(meeting_id=meeting.meeting_id, utterance_id=fallback.utterance_id, engine=engine)
        self.calls += 1
        prompt, shown = self.prompt(meeting, principal, hint)
        try:
            reply = await chat_json(
                self.client,
                self.settings.llm_model,
                prompt,
                EngageReply,
                budget_s=call_budget(self.settings.llm_timeout_s, started),
                attempts=self.settings.llm_retries + 1,
                on_request=self._requests,
                logger=bound,
                max_tokens=self.settings.llm_max_tokens,
            )
            speak = cap_speech(" ".join(reply.speak.split()), self.settings.llm_max_speak_chars)
            verdict = guard.check(speak, principal, shown)
            if not verdict.allowed:
                # The detail names the rule and the item's index, never the words: it is logged.
                raise LLMFailure("private_leak", f"guard rule {verdict.rule} on background item {verdict.item}")
            # The same rules the embedded engine phrases to: a reply a colleague would not say falls back.
            unsaid = defects(speak)
            if unsaid:
                raise LLMFailure("unspeakable", f"speakable check: {', '.join(unsaid)}")
        except LLMFailure as failure:
            self.fallbacks += 1
            self.fallback_reasons[failure.kind] += 1
            latency_ms = (time.perf_counter() - started) * 1000
            bound.warning(
                "llm_fallback", kind=failure.kind, detail=failure.detail, latency_ms=round(latency_ms, 1)
            )
            return fallback.model_copy(
                update={
                    "engine": engine,
                    "reason": f"llm fallback ({failure.kind}): {fallback.reason}"[:_REASON_CHARS],
                    "latency_ms": latency_ms,
                }
            )
        decision = self._decision(reply, speak, principal, shown, fallback, engine, started)
        bound.info(
            "llm_decision",
            scenario=decision.scenario.value,
            spoke=decision.spoke,
            latency_ms=round(decision.latency_ms, 1),
        )
        return decision

    def _decision(
        self,
        reply: EngageReply,
        speak: str,
        principal: Profile,
        shown: list[str],
        fallback: Decision,
        engine: str,
        started: float,
    ) -> Decision:
        scenario = reply.scenario or Scenario.none
        if speak and scenario is Scenario.none:
            # Speech needs a reason to take the floor; the model left it out, so borrow the fallback's.
            scenario = fallback.scenario if fallback.scenario is not Scenario.none else Scenario.chime_in
        said = content_words(speak)
        used_background = [
            i for i, item in shareable_background(principal) if speak and _words_hit(said, item.information)
        ]
        used_intents = [i for i, intent in enumerate(principal.intents) if speak and _words_hit(said, intent)]
        thoughts = " ".join(reply.thoughts.split())[:_REASON_CHARS] or ("speaks" if speak else "stays silent")
        # The model's thoughts go out as the decision's reason: they pass the same guard as its speech.
        thoughts = guard.safe_text(thoughts, principal, shown, recent=(), withheld=THOUGHTS_WITHHELD)
        return Decision(
            utterance_id=fallback.utterance_id,
            scenario=scenario,
            speak=speak,
            reason=f"llm: {thoughts}"[:_REASON_CHARS],
            confidence=LLM_CONFIDENCE,
            engine=engine,
            latency_ms=(time.perf_counter() - started) * 1000,
            used_background=used_background,
            used_intents=used_intents,
        )
