"""A fake Recall.ai on loopback: its bot API, and a bot that calls a bridge back the way Recall does.

Routes and payloads follow Recall's published documentation (README in testkit/payloads/: what was taken from
where, and what could not be checked); every payload it sends is a recorded example with its values changed.
Requests are signed the Svix way with a `whsec_` secret and retried on a non-2xx answer, as Svix does.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import secrets
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from delegate.integrations.recall import sign


def payload(name: str) -> dict[str, Any]:
    """A recorded Recall payload (testkit/payloads/recall/NAME.json), to be filled in."""
    return json.loads(resources.files("testkit").joinpath("payloads", "recall", f"{name}.json").read_text("utf-8"))


def mp3_seconds(mp3: bytes) -> float:
    """How long an MP3 clip plays (decoded with PyAV, as a check that it is real MP3)."""
    import av

    with av.open(io.BytesIO(mp3)) as container:
        return sum(frame.samples / frame.sample_rate for frame in container.decode(audio=0))


@dataclass
class FakeRecallBot:
    id: str
    request: dict[str, Any]
    secret: str
    status_url: str
    left: bool = False
    clips: list[bytes] = field(default_factory=list)
    """MP3 clips the bridge asked the bot to play (`output_audio`), in order."""
    _relative: float = 0.0

    @property
    def realtime_url(self) -> str:
        return str(self.request["recording_config"]["realtime_endpoints"][0]["url"])

    async def post(self, url: str, body: dict[str, Any], *, secret: str | None = None, retries: int = 3) -> int:
        raw = json.dumps(body).encode()
        msg_id = f"msg_{secrets.token_hex(8)}"
        now = int(time.time())
        headers = {"webhook-id": msg_id, "webhook-timestamp": str(now), "content-type": "application/json",
                   "webhook-signature": sign(msg_id, now, raw, secret or self.secret)}
        async with httpx.AsyncClient(timeout=30) as http:
            for _ in range(retries + 1):
                r = await http.post(url, content=raw, headers=headers)
                if r.status_code < 300 or r.status_code in (400, 401, 422):
                    break
                await asyncio.sleep(0.1)
        return r.status_code

    def _bot(self, body: dict[str, Any]) -> dict[str, Any]:
        body["data"]["bot"] = {"id": self.id, "metadata": {}}
        return body

    async def status(self, code: str, sub_code: str | None = None) -> int:
        body = payload("bot.status")
        body["event"] = f"bot.{code}"
        body["data"]["data"].update(code=code, sub_code=sub_code)
        return await self.post(self.status_url, self._bot(body))

    async def transcript(self, participant_id: int, name: str | None, text: str) -> int:
        body = payload("transcript.data")
        template = body["data"]["data"]["words"][0]
        words = []
        for word in text.split():
            words.append({**template, "text": word, "start_timestamp": {"relative": self._relative},
                          "end_timestamp": {"relative": self._relative + 0.3}})
            self._relative += 0.35
        body["data"]["data"]["words"] = words
        body["data"]["data"]["participant"].update(id=participant_id, name=name)
        return await self.post(self.realtime_url, self._bot(body))

    async def participant(self, participant_id: int, name: str | None, event: str = "join") -> int:
        body = payload("participant_events.join")
        body["event"] = f"participant_events.{event}"
        body["data"]["data"]["participant"].update(id=participant_id, name=name)
        return await self.post(self.realtime_url, self._bot(body))


class FakeRecall:
    """Recall's bot API (`POST /api/v1/bot/`, `.../leave_call/`, `.../output_audio/`), keyed by `api_key`; its
    status webhooks go to `status_url` (set in Recall's dashboard; here, by the test)."""

    def __init__(self) -> None:
        self.api_key = secrets.token_hex(20)
        self.webhook_secret = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
        self.bots: dict[str, FakeRecallBot] = {}
        self.created = asyncio.Queue[FakeRecallBot]()
        self.status_url = ""

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/api/v1/bot/", self._create, methods=["POST"]),
            Route("/api/v1/bot/{bot_id}/leave_call/", self._leave, methods=["POST"]),
            Route("/api/v1/bot/{bot_id}/output_audio/", self._output_audio, methods=["POST"]),
        ])

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") in (self.api_key, f"Token {self.api_key}")

    async def _create(self, request: Request) -> JSONResponse:
        if not self._authorized(request):
            return JSONResponse({"detail": "Invalid API key."}, status_code=401)
        body = await request.json()
        endpoints = (body.get("recording_config") or {}).get("realtime_endpoints") or []
        if not isinstance(body.get("meeting_url"), str) or not endpoints or not endpoints[0].get("url"):
            return JSONResponse({"meeting_url": ["This field is required."]}, status_code=400)
        template = payload("create_bot.request")["recording_config"]
        assert set(body["recording_config"]) == set(template)
        bot = FakeRecallBot(id=secrets.token_hex(16), request=body, secret=self.webhook_secret, status_url=self.status_url)
        self.bots[bot.id] = bot
        self.created.put_nowait(bot)
        return JSONResponse(payload("bot") | {"id": bot.id, "bot_name": body.get("bot_name")}, status_code=201)

    def _bot(self, request: Request) -> FakeRecallBot | None:
        return self.bots.get(request.path_params["bot_id"]) if self._authorized(request) else None

    async def _leave(self, request: Request) -> JSONResponse:
        bot = self._bot(request)
        if bot is None:
            return JSONResponse({"detail": "Not found."}, status_code=404)
        bot.left = True
        return JSONResponse(payload("bot") | {"id": bot.id})

    async def _output_audio(self, request: Request) -> JSONResponse:
        bot = self._bot(request)
        if bot is None:
            return JSONResponse({"detail": "Not found."}, status_code=404)
        body = await request.json()
        if set(body) != set(payload("output_audio.request")) or body["kind"] != "mp3":
            return JSONResponse({"kind": ["Only mp3 is supported."]}, status_code=400)
        bot.clips.append(base64.b64decode(body["b64_data"]))
        return JSONResponse(payload("bot") | {"id": bot.id})
