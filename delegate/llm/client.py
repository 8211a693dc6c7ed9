"""The one OpenAI-compatible client of the process: how it is made, how a JSON answer is asked for and
checked within a time budget, and the failure every LLM caller falls back on. Only this package knows `openai`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import weakref
from collections import Counter
from functools import cache
from typing import Any, Literal, TypeVar, cast

import httpx
import openai
import structlog
from openai import AsyncOpenAI
from pydantic import BaseModel, ValidationError
from structlog.typing import FilteringBoundLogger

from delegate.config import ConfigError, Settings

log = structlog.get_logger("delegate.llm")

LLMClient = AsyncOpenAI
"""The client type callers hold (made by `make_client`): they name it through here, never through `openai`."""

T = TypeVar("T", bound=BaseModel)
FailureKind = Literal["timeout", "http_error", "connection", "invalid_output", "private_leak", "too_long", "unspeakable"]


class LLMFailure(Exception):
    """The endpoint gave no usable answer within the budget."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: FailureKind = kind
        self.detail = detail


def make_client(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> AsyncOpenAI:
    """An async client for `settings.llm_base_url`; retries and timeouts are ours, so the client's are off.

    `transport` sits under the client (the benchmarks' cache, rate-limit waits and ledger: `delegate.llm.ledger`)."""
    http = httpx.AsyncClient(transport=transport, timeout=settings.llm_timeout_s) if transport is not None else None
    return AsyncOpenAI(
        base_url=settings.llm_base_url, api_key=api_key(settings), max_retries=0, timeout=settings.llm_timeout_s,
        http_client=http,
    )


def api_key(settings: Settings) -> str:
    """The key the client sends; ConfigError when there is none and no other endpoint is named."""
    if settings.llm_api_key:  # an empty OPENAI_API_KEY is none
        return settings.llm_api_key.get_secret_value()
    if settings.llm_base_url is None:
        raise ConfigError("an LLM engine needs OPENAI_API_KEY, or OPENAI_BASE_URL pointing at a local server")
    # Servers without auth (vLLM, Ollama, llama.cpp) ignore the key, but the client insists on one.
    return "unused"


FORMATS = ("json_schema", "json_object with the schema", "json_object")
"""How an answer is bound, strictest first: OpenAI's structured outputs (OpenAI, vLLM, Ollama, llama.cpp's own
server); a JSON object with the schema beside it (llama-cpp-python's server turns it into a grammar); a JSON object."""
ATTEMPT_HEADER = "X-Delegate-Attempt"
_LEVEL: weakref.WeakKeyDictionary[AsyncOpenAI, int] = weakref.WeakKeyDictionary()
"""Per client, the strictest format its server took: a refusal moves it down once, for every later call."""


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema as strict structured outputs want it: every property required, no others allowed."""
    out = dict(schema)
    if out.get("type") == "object" and "properties" in out:
        out["properties"] = {k: _strict(v) for k, v in out["properties"].items()}
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    for key in ("items", "anyOf", "$defs"):
        if isinstance(out.get(key), dict):
            out[key] = {k: _strict(v) for k, v in out[key].items()} if key == "$defs" else _strict(out[key])
        elif isinstance(out.get(key), list):
            out[key] = [_strict(v) for v in out[key]]
    out.pop("default", None)
    out.pop("title", None)
    return out


GRAMMAR_MAX_CHARS = 400
GRAMMAR_MAX_ITEMS = 12


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every free string and list bounded: a server that turns it into a grammar then always closes
    the object within a few hundred tokens (a small model held to a grammar can otherwise write one string forever)."""
    out = dict(schema)
    if out.get("type") == "string" and "enum" not in out:
        out.setdefault("maxLength", GRAMMAR_MAX_CHARS)
    if out.get("type") == "array":
        out.setdefault("maxItems", GRAMMAR_MAX_ITEMS)
    for key, value in list(out.items()):
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: _bounded(v) for k, v in value.items()}
        elif key in ("items",) and isinstance(value, dict):
            out[key] = _bounded(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [_bounded(v) for v in value]
    return out


@cache
def _schemas(reply_type: type[BaseModel]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`reply_type`'s strict schema and its bounded form, made once (pydantic builds a schema in milliseconds)."""
    schema = _strict(reply_type.model_json_schema())
    return schema, _bounded(schema)


def response_format(reply_type: type[BaseModel], level: int = 0) -> dict[str, Any]:
    """The `response_format` binding an answer to `reply_type`'s schema, at `FORMATS[level]`."""
    strict, bounded = _schemas(reply_type)
    if level == 0:
        return {"type": "json_schema", "json_schema": {"name": reply_type.__name__, "schema": strict, "strict": True}}
    if level == 1:
        return {"type": "json_object", "schema": bounded}
    return {"type": "json_object"}


def format_used(client: AsyncOpenAI) -> str:
    """How this client's answers are bound now (`FORMATS`)."""
    return FORMATS[_LEVEL.get(client, 0)]


def assume_format(client: AsyncOpenAI, name: str) -> None:
    """Start this client at a format its server is known to take (a benchmark remembers it between runs)."""
    if name in FORMATS:
        _LEVEL[client] = FORMATS.index(name)


def _refuses_format(error: openai.APIStatusError) -> bool:
    # Servers say it differently: 400 (OpenAI-style), 422 (request validation), 500 (llama-cpp-python's server).
    said = str(error).lower()
    return error.status_code in (400, 422, 500) and ("response_format" in said or "schema" in said)


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
    max_tokens: int | None = None,
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
                    response = await _create(
                        client, model, prompt, reply_type, max(deadline - loop.time(), 0.001), on_request, logger, max_tokens,
                        attempt,
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


async def _create(
    client: AsyncOpenAI, model: str, prompt: str, reply_type: type[T], timeout: float,
    on_request: Counter[str] | None, logger: FilteringBoundLogger, max_tokens: int | None = None, attempt: int = 0,
) -> Any:
    """One request, its answer bound as strictly as the server allows; a server that refuses a format is asked again
    at once with the next one (`FORMATS`), and from then on."""
    messages: Any = [{"role": "user", "content": prompt}]
    limit: Any = {"max_tokens": max_tokens} if max_tokens is not None else {}
    # A retry is another question: a benchmark's cache (delegate.llm.ledger) keys it apart, so the retry of an unusable
    # answer is not answered by that same answer, and a re-run replays both.
    if attempt:
        limit["extra_headers"] = {ATTEMPT_HEADER: str(attempt)}
    while True:
        level = _LEVEL.get(client, 0)
        try:
            return await client.chat.completions.create(
                model=model, messages=messages, response_format=cast(Any, response_format(reply_type, level)), timeout=timeout,
                **limit,
            )
        except openai.APIStatusError as e:
            if level + 1 >= len(FORMATS) or not _refuses_format(e):
                raise
            _LEVEL[client] = max(_LEVEL.get(client, 0), level + 1)
            if on_request is not None:
                on_request["format_refused"] += 1
            logger.warning("llm_format_refused", refused=FORMATS[level], now=FORMATS[level + 1], detail=str(e)[:200])


CANCEL_MARGIN_S = 0.03
"""Kept back from the budget: a cancelled request takes a few milliseconds to unwind, and the embedded
engine's own decision came first, so the whole decision stays within `llm_timeout_s`."""


def call_budget(timeout_s: float, started: float) -> float:
    spent = time.perf_counter() - started
    return max(timeout_s - spent - min(CANCEL_MARGIN_S, 0.1 * timeout_s), 0.001)
