"""The LLM engine: asks an OpenAI-compatible chat endpoint whether the principal speaks, within a time budget.

Whatever the endpoint does (errors, hangs, answers nonsense, says something private), a decision comes
back within `llm_timeout_s`: the injected fallback engine's, with the failure named in its `reason`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from typing import Literal, TypeVar

import openai
import structlog
from openai import AsyncOpenAI
from pydantic import BaseModel, ConfigDict, ValidationError
from structlog.typing import FilteringBoundLogger

from delegate import guard
from delegate.config import ConfigError, Settings
from delegate.engines.base import Engine
from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, Scenario
from delegate.prompts import approx_tokens, principal_view, render, shareable_background, transcript_window
from delegate.text import content_words

log = structlog.get_logger(__name__)

T = TypeVar("T", bound=BaseModel)
FailureKind = Literal["timeout", "http_error", "connection", "invalid_output", "private_leak", "too_long"]

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


class LLMFailure(Exception):
    """The endpoint gave no usable answer within the budget."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: FailureKind = kind
        self.detail = detail


def make_client(settings: Settings) -> AsyncOpenAI:
    """An async client for `settings.llm_base_url`; retries and timeouts are ours, so the client's are off."""
    return AsyncOpenAI(
        base_url=settings.llm_base_url, api_key=api_key(settings), max_retries=0, timeout=settings.llm_timeout_s
    )


def api_key(settings: Settings) -> str:
    """The key the client sends; ConfigError when there is none and no other endpoint is named."""
    if settings.llm_api_key:  # an empty OPENAI_API_KEY is none
        return settings.llm_api_key.get_secret_value()
    if settings.llm_base_url is None:
        raise ConfigError("an LLM engine needs OPENAI_API_KEY, or OPENAI_BASE_URL pointing at a local server")
    # Servers without auth (vLLM, Ollama, llama.cpp) ignore the key, but the client insists on one.
    return "unused"


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_reply(content: str | None, reply_type: type[T]) -> T:
    """Validate a model's JSON answer; tolerates a Markdown fence or prose around the object."""
    if not content:
        raise ValueError("empty answer")
    text = _FENCE.sub("", content.strip())
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ValueError(f"no JSON object in answer: {content[:80]!r}") from None
        try:
            raw = json.loads(text[start : end + 1])
        except json.JSONDecodeError as e:
            raise ValueError(f"invalid JSON: {e.msg}") from None
    return reply_type.model_validate(raw)


def _retryable(error: Exception) -> bool:
    if isinstance(error, openai.APIStatusError):
        return error.status_code >= 500 or error.status_code in (408, 409, 429)
    return True


def _failure(error: Exception) -> LLMFailure:
    if isinstance(error, openai.APITimeoutError | TimeoutError):
        return LLMFailure("timeout", "no answer within the budget")
    if isinstance(error, openai.APIStatusError):
        return LLMFailure("http_error", f"status {error.status_code}")
    if isinstance(error, openai.APIConnectionError):
        return LLMFailure("connection", str(error) or type(error).__name__)
    return LLMFailure("invalid_output", str(error)[:200])


async def chat_json(
    client: AsyncOpenAI,
    model: str,
    prompt: str,
    reply_type: type[T],
    *,
    budget_s: float,
    attempts: int,
    on_request: Counter[str] | None = None,
    logger: FilteringBoundLogger | None = None,
) -> T:
    """Send `prompt` as one user message and validate the JSON answer, retrying within `budget_s` overall.

    Raises LLMFailure naming the last problem. `on_request["requests"]` counts HTTP requests made.
    """
    attempts = max(attempts, 1)
    logger = logger or log
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_s
    last: Exception = TimeoutError()
    try:
        async with asyncio.timeout(budget_s):
            for attempt in range(attempts):
                if on_request is not None:
                    on_request["requests"] += 1
                try:
                    response = await client.chat.completions.create(
                        model=model,
                        messages=[{"role": "user", "content": prompt}],
                        response_format={"type": "json_object"},
                        timeout=max(deadline - loop.time(), 0.001),
                    )
                    if not response.choices:
                        raise ValueError("answer without choices")
                    return parse_reply(response.choices[0].message.content, reply_type)
                except (openai.APIError, ValidationError, ValueError) as e:
                    last = e
                    logger.debug(
                        "llm_attempt_failed", attempt=attempt, error=type(e).__name__, detail=str(e)[:200]
                    )
                    if not _retryable(e) or attempt + 1 >= attempts:
                        break
                    # A refused connection fails at once; a short pause keeps retries from hammering it.
                    await asyncio.sleep(min(0.05 * 2**attempt, max(deadline - loop.time(), 0)))
    except TimeoutError:
        raise LLMFailure("timeout", f"no usable answer within {budget_s:g}s") from None
    raise _failure(last)


def _words_hit(text_words: frozenset[str], source: str) -> bool:
    words = content_words(source)
    return bool(words) and len(words & text_words) >= min(2, len(words))


CANCEL_MARGIN_S = 0.03
"""Kept back from the budget: a cancelled request takes a few milliseconds to unwind, and the embedded
engine's own decision came first, so the whole decision stays within `llm_timeout_s`."""


def _call_budget(timeout_s: float, started: float) -> float:
    spent = time.perf_counter() - started
    return max(timeout_s - spent - min(CANCEL_MARGIN_S, 0.1 * timeout_s), 0.001)


class LLMEngine:
    """Decides with an LLM; `fallback` decides whenever the LLM cannot, within `settings.llm_timeout_s`.

    Counters for reports: `decisions` made, `calls` (decisions that consulted the LLM), `requests` (HTTP
    requests, retries included), `fallbacks` (consultations that ended in the fallback's decision), and
    `fallback_reasons` by kind.
    """

    name = "llm"

    def __init__(self, settings: Settings, fallback: Engine, client: AsyncOpenAI | None = None) -> None:
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
        fixed = render(ENGAGE_PROMPT, principal=view, attendees=attendees, transcript=[], hint=hint)
        budget = max(self.settings.llm_context_tokens - approx_tokens(fixed), 64)
        window = transcript_window(meeting, principal, budget)
        prompt = render(ENGAGE_PROMPT, principal=view, attendees=attendees, transcript=window, hint=hint)
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
                budget_s=_call_budget(self.settings.llm_timeout_s, started),
                attempts=self.settings.llm_retries + 1,
                on_request=self._requests,
                logger=bound,
            )
            speak = cap_speech(" ".join(reply.speak.split()), self.settings.llm_max_speak_chars)
            verdict = guard.check(speak, principal, shown)
            if not verdict.allowed:
                # The detail names the rule and the item's index, never the words: it is logged.
                raise LLMFailure("private_leak", f"guard rule {verdict.rule} on background item {verdict.item}")
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
