"""What a benchmark run pays its model server, and the cache that makes a re-run free.

`LedgerTransport` sits under the OpenAI client (`make_client(settings, transport=...)`). Every chat completion
goes through it: answered from the disk cache when the same request (endpoint, model, messages, parameters) was
answered before, else sent, with waits on 429 / 503 as the server's Retry-After says (jittered); each answer is
kept on disk and its tokens counted in the `Ledger`. A run cut off half-way is resumed by running it again: the
calls already answered come from the cache, only the missing ones are made.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import structlog

log = structlog.get_logger("delegate.llm")

RETRY_STATUSES = (429, 503)
MAX_WAITS = 6
_WIRE_HEADERS = ("content-encoding", "content-length", "transfer-encoding")
BASE_WAIT_S = 0.5
MAX_WAIT_S = 60.0

PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    # USD per million prompt / completion tokens, the providers' list prices when this table was written;
    # `--price-in/--price-out` override it. Models served locally cost nothing per token.
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}


@dataclass
class Ledger:
    """Calls sent, answers taken from the cache, tokens, waits, time: what a run cost."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rate_limited: int = 0
    """Answers 429/503 that were waited out and asked again."""
    seconds: float = 0.0
    """Time spent waiting on the server (calls overlap when run side by side)."""
    by_status: dict[int, int] = field(default_factory=dict)

    def cost(self, model: str, price_in: float | None = None, price_out: float | None = None) -> float | None:
        """USD for the tokens sent, at the prices given or the table's; None when neither knows the model."""
        if price_in is None or price_out is None:
            known = PRICES_PER_MILLION.get(model)
            if known is None:
                return None
            price_in = known[0] if price_in is None else price_in
            price_out = known[1] if price_out is None else price_out
        return round((self.prompt_tokens * price_in + self.completion_tokens * price_out) / 1e6, 6)

    def figures(self, model: str, price_in: float | None = None, price_out: float | None = None) -> dict[str, object]:
        return {
            "model": model,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "rate_limited": self.rate_limited,
            "server_seconds": round(self.seconds, 2),
            "cost_usd": self.cost(model, price_in, price_out),
        }


def request_key(request: httpx.Request, body: bytes) -> str:
    """The cache key of a request: its endpoint and its body, with keys sorted (the same call, however spelled)."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        canonical = body
    return hashlib.sha256(f"{request.method} {request.url}\n".encode() + canonical).hexdigest()


def retry_after_s(response: httpx.Response, attempt: int, rng: random.Random) -> float:
    """How long to wait before asking again: the server's Retry-After (seconds or a date), else exponential; jittered."""
    header = response.headers.get("retry-after")
    wait: float | None = None
    if header:
        try:
            wait = float(header)
        except ValueError:
            when = email.utils.parsedate_to_datetime(header) if header else None
            wait = max(when.timestamp() - time.time(), 0.0) if when is not None else None
    if wait is None:
        wait = BASE_WAIT_S * 2**attempt
    return min(wait, MAX_WAIT_S) * (1 + 0.25 * rng.random())


class LedgerTransport(httpx.AsyncBaseTransport):
    """Chat completions through a disk cache (`cache` folder, or None), rate-limit waits and the `ledger`.

    `refresh`: ask the server even when the cache holds the answer (and keep the new one)."""

    def __init__(
        self, ledger: Ledger, cache: Path | None = None, refresh: bool = False, inner: httpx.AsyncBaseTransport | None = None,
        seed: int = 0,
    ) -> None:
        self.ledger = ledger
        self.cache = cache
        self.refresh = refresh
        self.inner = inner or httpx.AsyncHTTPTransport()
        self._rng = random.Random(seed)
        self._pending: dict[str, asyncio.Future[tuple[int, list[tuple[str, str]], bytes]]] = {}
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        assert self.cache is not None
        return self.cache / key[:2] / f"{key}.json"

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return await self.inner.handle_async_request(request)
        body = await request.aread()
        key = request_key(request, body)
        if self.cache is not None and not self.refresh:
            kept = self._path(key)
            if kept.exists():
                self.ledger.cache_hits += 1
                return httpx.Response(200, content=kept.read_bytes(), headers={"content-type": "application/json"}, request=request)
        # The same call already on its way (cases side by side ask alike): wait for its answer, ask once.
        pending = self._pending.get(key)
        if pending is not None:
            status, headers, content = await asyncio.shield(pending)
            self.ledger.cache_hits += 1
            return httpx.Response(status, content=content, headers=headers, request=request)
        answer: asyncio.Future[tuple[int, list[tuple[str, str]], bytes]] = asyncio.get_running_loop().create_future()
        self._pending[key] = answer
        try:
            status, headers, content = await self._send(request, key)
            answer.set_result((status, headers, content))
        except BaseException as e:
            answer.set_exception(e)
            answer.exception()  # retrieved: a call nobody else waited for is not reported twice
            raise
        finally:
            del self._pending[key]
        return httpx.Response(status, content=content, headers=headers, request=request)

    async def _send(self, request: httpx.Request, key: str) -> tuple[int, list[tuple[str, str]], bytes]:
        for attempt in range(MAX_WAITS + 1):
            started = time.perf_counter()
            response = await self.inner.handle_async_request(request)
            content = await response.aread()
            self.ledger.seconds += time.perf_counter() - started
            self.ledger.by_status[response.status_code] = self.ledger.by_status.get(response.status_code, 0) + 1
            if response.status_code in RETRY_STATUSES and attempt < MAX_WAITS:
                self.ledger.rate_limited += 1
                wait = retry_after_s(response, attempt, self._rng)
                log.info("llm_rate_limited", status=response.status_code, wait_s=round(wait, 2))
                await asyncio.sleep(wait)
                continue
            break
        self.ledger.calls += 1
        if response.status_code == 200:
            self._count(content)
            if self.cache is not None:
                self._keep(key, content)
        # The body is decoded already: headers that describe its wire form would have it decoded twice.
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _WIRE_HEADERS]
        return response.status_code, headers, content

    def _count(self, content: bytes) -> None:
        try:
            usage = json.loads(content).get("usage") or {}
        except (ValueError, AttributeError):
            return
        self.ledger.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.ledger.completion_tokens += int(usage.get("completion_tokens") or 0)

    def _keep(self, key: str, content: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        # Written whole, then renamed: a run killed mid-write leaves no half answer to resume from.
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(content)
        tmp.replace(path)

    async def aclose(self) -> None:
        await self.inner.aclose()
