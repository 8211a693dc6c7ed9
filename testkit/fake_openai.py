"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, run by uvicorn in a background thread (tests, benchmark.chaos).

Real HTTP, real `openai` client: only the answers are scripted, by a function of the prompt received.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from delegate.config import Settings


@dataclass(frozen=True)
class Reply:
    """One scripted answer: the message content, or an HTTP error status, after an optional delay."""

    content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    retry_after: str | None = None
    """With a 429 or 503: the Retry-After header sent with it."""


Script = Callable[[str], Reply | str]


class ScriptedOpenAI:
    """`POST /v1/chat/completions` answered by `script(prompt)`; every prompt received is kept in `prompts`."""

    def __init__(self, script: Script, refuse_schema: bool = False) -> None:
        self.script = script
        self.refuse_schema = refuse_schema
        """Answer a `json_schema` response format with HTTP 400, as servers without structured outputs do."""
        self.prompts: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        self.refused = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self._ids = itertools.count(1)
        app = FastAPI()
        app.add_api_route("/v1/chat/completions", self._complete, methods=["POST"])
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        # A client that gives up on a slow reply cancels its handler, which uvicorn logs as an error:
        # expected here, so only critical messages are shown.
        config = uvicorn.Config(app, log_level="critical", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedOpenAI:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the scripted OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._server.force_exit = True
        self._thread.join(timeout=5)
        self._sock.close()

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def reset(self, script: Script | None = None) -> None:
        if script is not None:
            self.script = script
        self.prompts.clear()
        self.bodies.clear()
        self.refused = 0
        self.most_in_flight = 0

    async def _complete(self, request: Request) -> JSONResponse:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: Request) -> JSONResponse:
        body = await request.json()
        if self.refuse_schema and (body.get("response_format") or {}).get("type") == "json_schema":
            self.refused += 1
            return JSONResponse(
                {"error": {"message": "response_format of type json_schema is not supported", "type": "invalid_request_error"}},
                status_code=400,
            )
        prompt = "\n".join(
            m["content"] for m in body.get("messages", []) if isinstance(m.get("content"), str)
        )
        self.bodies.append(body)
        self.prompts.append(prompt)
        reply = self.script(prompt)
        if isinstance(reply, str):
            reply = Reply(content=reply)
        if reply.delay_s:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return JSONResponse(
                {"error": {"message": "scripted failure", "type": "server_error", "code": None}},
                status_code=reply.status,
                headers={"retry-after": reply.retry_after} if reply.retry_after is not None else None,
            )
        n = next(self._ids)
        return JSONResponse(
            {
                "id": f"chatcmpl-scripted-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "scripted"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt) // 4,
                    "completion_tokens": 20,
                    "total_tokens": len(prompt) // 4 + 20,
                },
            }
        )


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens: a dead endpoint."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def scripted_settings(base_url: str, **overrides: Any) -> Settings:
    """Settings pointing the real `openai` client at a scripted server (1 s budget, one retry by default)."""
    values: dict[str, Any] = {
        "llm_base_url": base_url,
        "llm_api_key": "test-key",
        "llm_model": "scripted-model",
        "llm_timeout_s": 1.0,
        "llm_retries": 1,
    }
    values.update(overrides)
    return Settings(**values)
