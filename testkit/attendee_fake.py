"""A fake Attendee on loopback: its bot API, and a bot that calls a bridge back the way Attendee does.

Routes and payloads follow Attendee's published API (docs/openapi.yml, docs/webhooks.md, docs/realtime_audio.md
and bots/webhook_utils.py of github.com/attendee-labs/attendee); every payload it sends is one of the recorded
examples in testkit/payloads/attendee/ with its values changed, never a shape of its own (README there).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from delegate.integrations.attendee import sign

SAMPLE_RATES = (8000, 16000, 24000)
TRIGGERS = frozenset({"bot.state_change", "transcript.update", "chat_messages.update", "participant_events.join_leave",
                      "participant_events.speech_start_stop", "calendar.events_update", "calendar.state_change",
                      "bot_logs.update"})


def payload(name: str) -> dict[str, Any]:
    """A recorded Attendee payload (testkit/payloads/attendee/NAME.json), to be filled in."""
    text = resources.files("testkit").joinpath("payloads", "attendee", f"{name}.json").read_text("utf-8")
    return json.loads(text)


@dataclass
class FakeBot:
    """One bot Attendee made: it posts signed webhooks to the bridge and streams audio over its WebSocket."""

    id: str
    request: dict[str, Any]
    secret: str
    left: bool = False
    output: list[bytes] = field(default_factory=list)
    """Audio the bridge sent as `realtime_audio.bot_output`, decoded, in order."""
    output_rates: list[int] = field(default_factory=list)
    output_at: list[float] = field(default_factory=list)
    """`time.perf_counter()` when each output chunk arrived."""
    state: str = "joining"
    ws: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None
    delivered: list[dict[str, Any]] = field(default_factory=list)

    @property
    def audio_url(self) -> str:
        return str(self.request["websocket_settings"]["audio"]["url"])

    @property
    def webhook_url(self) -> str:
        return str(self.request["webhooks"][0]["url"])

    async def post(self, body: dict[str, Any], *, signature: str | None = None, retries: int = 3) -> int:
        """Deliver a webhook signed as Attendee signs it; retried on a non-2xx answer as Attendee does."""
        headers = {"X-Webhook-Signature": signature or sign(body, self.secret), "Content-Type": "application/json"}
        async with httpx.AsyncClient(timeout=30) as http:
            for _ in range(retries + 1):
                r = await http.post(self.webhook_url, content=json.dumps(body).encode(), headers=headers)
                if r.status_code < 300 or r.status_code in (400, 401, 422):
                    break
                await asyncio.sleep(0.1)
        self.delivered.append(body)
        return r.status_code

    def _hook(self, name: str, data: dict[str, Any]) -> dict[str, Any]:
        body = payload(name)
        body["idempotency_key"] = str(uuid.uuid4())
        body["bot_id"] = self.id
        body["data"].update(data)
        return body

    async def change_state(self, new_state: str, event_type: str, *, sub_type: str | None = None,
                           metadata: dict[str, Any] | None = None) -> int:
        old, self.state = self.state, new_state
        return await self.post(self._hook("bot.state_change", {
            "new_state": new_state, "old_state": old, "event_type": event_type, "event_sub_type": sub_type,
            "event_metadata": metadata,
        }))

    async def removed_by(self, name: str) -> int:
        """A participant removes the bot (Teams names them: docs/webhooks.md, "Knowing who removed the bot")."""
        template = payload("bot.state_change")["data"]["event_metadata"]
        return await self.change_state("post_processing", "meeting_ended", metadata={**template, "remover_name": name})

    async def transcript(self, participant_uuid: str, name: str | None, text: str, at_ms: int = 0) -> int:
        data = payload("transcript.update")["data"]
        data.update(speaker_name=name, speaker_uuid=participant_uuid, timestamp_ms=at_ms, duration_ms=1500)
        data["transcription"] = {**data["transcription"], "transcript": text}
        return await self.post(self._hook("transcript.update", data))

    async def participant(self, participant_uuid: str, name: str | None, event_type: str = "join") -> int:
        trigger = ("participant_events.join_leave" if event_type in ("join", "leave")
                   else "participant_events.speech_start_stop")
        data = payload(trigger)["data"]
        data.update(participant_name=name, participant_uuid=participant_uuid, event_type=event_type,
                    id=f"pe_{secrets.token_hex(6)}")
        return await self.post(self._hook(trigger, data))

    # --- the real-time audio WebSocket ------------------------------------------------------------------

    async def connect_audio(self) -> None:
        self.ws = await connect(self.audio_url, max_size=None)
        self._reader = asyncio.create_task(self._read(self.ws))

    async def _read(self, ws: ClientConnection) -> None:
        template = payload("realtime_audio.bot_output")
        with contextlib.suppress(ConnectionClosed):  # the bridge's listener stopped: the meeting is over
            await self._read_from(ws, template)

    async def _read_from(self, ws: ClientConnection, template: dict[str, Any]) -> None:
        async for raw in ws:
            message = json.loads(raw)
            assert set(message) == set(template), message.keys()
            assert message["trigger"] == template["trigger"]
            assert set(message["data"]) == set(template["data"])
            assert message["data"]["sample_rate"] in SAMPLE_RATES
            self.output_at.append(time.perf_counter())
            self.output.append(base64.b64decode(message["data"]["chunk"]))
            self.output_rates.append(message["data"]["sample_rate"])

    async def drop_audio(self) -> None:
        """The WebSocket drops (Attendee reconnects by itself, here with `connect_audio`)."""
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        self.ws = None

    async def send_audio(self, pcm: bytes, sample_rate: int = 16000, chunk_ms: int = 100) -> None:
        """Mixed meeting audio as `realtime_audio.mixed` messages (base64 PCM16), one chunk at a time."""
        assert self.ws is not None
        step = sample_rate * chunk_ms // 1000 * 2
        for at in range(0, len(pcm), step):
            body = payload("realtime_audio.mixed")
            body["bot_id"] = self.id
            body["data"].update(chunk=base64.b64encode(pcm[at : at + step]).decode(), sample_rate=sample_rate,
                                timestamp_ms=at // 2 * 1000 // sample_rate)
            await self.ws.send(json.dumps(body))

    @property
    def output_pcm(self) -> bytes:
        return b"".join(self.output)


class FakeAttendee:
    """Attendee's bot API (`POST /api/v1/bots`, `POST /api/v1/bots/{id}/leave`), keyed by `api_key`; its bots
    sign webhooks with `webhook_secret` (base64, as Attendee's project secrets are)."""

    def __init__(self) -> None:
        self.api_key = secrets.token_hex(16)
        self.webhook_secret = base64.b64encode(secrets.token_bytes(32)).decode()
        self.bots: dict[str, FakeBot] = {}
        self.created = asyncio.Queue[FakeBot]()
        self.refused: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/api/v1/bots", self._create, methods=["POST"]),
            Route("/api/v1/bots/{bot_id}/leave", self._leave, methods=["POST"]),
        ])

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Token {self.api_key}"

    async def _create(self, request: Request) -> JSONResponse:
        if not self._authorized(request):
            return JSONResponse({"detail": "Invalid token."}, status_code=401)
        body = await request.json()
        problems = _bot_request_problems(body)
        if problems:
            self.refused.append(body)
            return JSONResponse(problems, status_code=400)
        bot = FakeBot(id=f"bot_{secrets.token_hex(8)}", request=body, secret=self.webhook_secret)
        self.bots[bot.id] = bot
        self.created.put_nowait(bot)
        shown = payload("bot") | {"id": bot.id, "meeting_url": body["meeting_url"], "state": "joining"}
        return JSONResponse(shown, status_code=201)

    async def _leave(self, request: Request) -> JSONResponse:
        if not self._authorized(request):
            return JSONResponse({"detail": "Invalid token."}, status_code=401)
        bot = self.bots.get(request.path_params["bot_id"])
        if bot is None:
            return JSONResponse({"detail": "Not found."}, status_code=404)
        bot.left = True
        return JSONResponse(payload("bot") | {"id": bot.id, "state": "leaving"})


def _bot_request_problems(body: Any) -> dict[str, list[str]]:
    """What Attendee's serializer (bots/serializers.py) would refuse in a create-bot body, as DRF words it."""
    problems: dict[str, list[str]] = {}
    if not isinstance(body, dict) or not isinstance(body.get("meeting_url"), str):
        return {"meeting_url": ["This field is required."]}
    if not isinstance(body.get("bot_name"), str) or not body["bot_name"]:
        problems["bot_name"] = ["This field is required."]
    audio = (body.get("websocket_settings") or {}).get("audio")
    if audio is not None:
        if not str(audio.get("url", "")).startswith(("ws://", "wss://")):
            problems["websocket_settings"] = ["audio.url must start with ws:// or wss://"]
        elif audio.get("sample_rate", 16000) not in SAMPLE_RATES:
            problems["websocket_settings"] = ["audio.sample_rate must be 8000, 16000 or 24000"]
    for hook in body.get("webhooks") or []:
        unknown = set(hook.get("triggers") or []) - TRIGGERS
        if unknown:
            problems["webhooks"] = [f"Invalid webhook trigger type: {sorted(unknown)[0]}"]
    return problems

