"""The bridge to Attendee (open source, self-hostable meeting bots: github.com/attendee-labs/attendee).

Attendee's bot joins the call; this bridge asks for it (`POST /api/v1/bots`), serves the two things Attendee
calls back — a WebSocket for real-time audio (`websocket_settings.audio`) and a webhook for bot states,
transcript and participant events — and connects them to the delegate server's meeting stream:

| Attendee | The delegate |
|---|---|
| `bot.state_change` webhook (`new_state`, `event_type`, `event_metadata`) | `admission` |
| `transcript.update` webhook (`speaker_uuid`, `speaker_name`, `transcription.transcript`) | `utterance` (listen="transcript") |
| `realtime_audio.mixed` (base64 PCM16) on the WebSocket | audio in, to the server's recogniser (listen="audio") |
| `participant_events.speech_start_stop` webhook | the speaker of the audio from then on |
| `participant_events.join_leave` webhook | who is who (`Roster`) |
| the delegate's speech | `realtime_audio.bot_output` (base64 PCM16, 16 kHz) on the WebSocket |

Webhooks are verified as Attendee signs them (`X-Webhook-Signature`: base64 HMAC-SHA256, keyed by the base64-
decoded project secret, of the payload as canonical JSON); Attendee's WebSocket carries no signature, so its URL
holds a random path token. The API key and the webhook secret are `SecretStr`s: never logged or audited.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
from collections import deque
from collections.abc import Callable
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from delegate.integrations.bridge import MeetingBridge, ServiceError
from delegate.integrations.pcm import resample
from delegate.server.protocol import AdmissionState

log = logging.getLogger("delegate.integrations.attendee")

SAMPLE_RATE = 16000
"""What the bridge asks Attendee for and sends it: the delegate's recogniser takes 16 kHz."""
TRIGGERS = ["bot.state_change", "transcript.update", "participant_events.join_leave",
            "participant_events.speech_start_stop"]
Listen = Literal["audio", "transcript"]


class AttendeeSettings(BaseSettings):
    """`ATTENDEE_URL` (your Attendee, e.g. http://localhost:8000), `ATTENDEE_API_KEY`, `ATTENDEE_WEBHOOK_SECRET`
    (Settings → Webhooks: the project's secret)."""

    model_config = SettingsConfigDict(env_prefix="ATTENDEE_", frozen=True, extra="ignore")

    url: str = "https://app.attendee.dev"
    api_key: SecretStr
    webhook_secret: SecretStr


# --- Attendee's payloads (docs/webhooks.md, docs/realtime_audio.md, bots/webhook_payloads.py) ----------------
# Read with extra="ignore": these are Attendee's documents, which grow fields; ours refuse unknown ones.


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class StateChange(_Payload):
    new_state: str
    old_state: str | None = None
    event_type: str | None = None
    event_sub_type: str | None = None
    event_metadata: dict[str, Any] | None = None


class Transcription(_Payload):
    transcript: str | None = None


class TranscriptUpdate(_Payload):
    speaker_name: str | None = None
    speaker_uuid: str | None = None
    timestamp_ms: int | None = None
    duration_ms: int | None = None
    transcription: Transcription | None = None


class ParticipantEvent(_Payload):
    participant_name: str | None = None
    participant_uuid: str
    event_type: str


class Webhook(_Payload):
    idempotency_key: str | None = None
    bot_id: str | None = None
    trigger: str
    data: dict[str, Any] = Field(default_factory=dict)


class AudioChunk(_Payload):
    chunk: str
    sample_rate: int = SAMPLE_RATE
    timestamp_ms: int | None = None


class RealtimeMessage(_Payload):
    trigger: str
    bot_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


JOINED = frozenset({"joined_not_recording", "joined_recording", "joined_recording_paused",
                    "joined_recording_permission_denied", "connected"})
LEFT = frozenset({"leaving", "post_processing", "ended", "fatal_error", "data_deleted"})
DENIED = frozenset({"request_to_join_denied", "waiting_room_timeout_exceeded"})


def admission_of(change: StateChange) -> AdmissionState | None:
    """Attendee's bot state as the delegate's admission state; None for one that is no step of admission."""
    state = change.new_state
    if state in ("joining", "joining_breakout_room"):
        return "joining"
    if state == "waiting_room":
        return "waiting_room"
    if state in JOINED:
        return "in_meeting"
    if state in LEFT:
        metadata = change.event_metadata or {}
        # Attendee names whoever removed the bot, or refused to let it in (docs/webhooks.md, "Knowing who
        # removed the bot"); a request to join denied or timed out in the waiting room is a refusal too.
        if any(k.startswith("remover_") for k in metadata) or change.event_sub_type in DENIED:
            return "removed"
        return "ended"
    return None


def sign(payload: Any, secret: str) -> str:
    """Attendee's signature of a webhook payload (bots/webhook_utils.py `sign_payload`)."""
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hmac.new(base64.b64decode(secret), canonical.encode("utf-8"), hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verified(body: bytes, signature: str | None, secret: str) -> Any:
    """The webhook's JSON if Attendee signed it with `secret`, else None."""
    if not signature:
        return None
    try:
        payload = json.loads(body)
        expected = sign(payload, secret)
    except (ValueError, binascii.Error):
        return None
    return payload if hmac.compare_digest(expected, signature) else None


# --- the bot's voice: the delegate's speech as `realtime_audio.bot_output` --------------------------------


class AttendeeAudioOut:
    """Sends the delegate's speech over Attendee's WebSocket; while that socket is down (Attendee reconnects on
    its own), what is to be said waits and goes out, in order, once it is back."""

    def __init__(self) -> None:
        self.ws: WebSocket | None = None
        self._waiting: deque[str] = deque()
        self._lock = asyncio.Lock()
        self.chunks_sent = 0

    async def speak(self, utterance_id: int, pcm: bytes, sample_rate: int, *, last: bool) -> None:
        if not pcm:
            return
        message = json.dumps({
            "trigger": "realtime_audio.bot_output",
            "data": {"chunk": base64.b64encode(resample(pcm, sample_rate, SAMPLE_RATE)).decode("ascii"),
                     "sample_rate": SAMPLE_RATE},
        })
        async with self._lock:
            self._waiting.append(message)
            await self._flush()

    async def cancel(self, utterance_id: int) -> None:
        # Attendee plays what it was sent; what has not left yet is all that can be taken back.
        async with self._lock:
            self._waiting.clear()

    async def attach(self, ws: WebSocket) -> None:
        async with self._lock:
            self.ws = ws
            await self._flush()

    def detach(self, ws: WebSocket) -> None:
        if self.ws is ws:
            self.ws = None

    async def _flush(self) -> None:
        while self._waiting and self.ws is not None:
            try:
                await self.ws.send_text(self._waiting[0])
            except (RuntimeError, OSError, WebSocketDisconnect):
                self.ws = None
                return
            self._waiting.popleft()
            self.chunks_sent += 1


# --- what Attendee calls: the webhook and the audio WebSocket ---------------------------------------------


class AttendeeListener:
    """The routes Attendee calls back, feeding one meeting's bridge."""

    def __init__(self, bridge: MeetingBridge, audio_out: AttendeeAudioOut, webhook_secret: SecretStr,
                 listen: Listen = "audio") -> None:
        self.bridge = bridge
        self.audio_out = audio_out
        self.listen = listen
        self.path_token = secrets.token_urlsafe(16)
        self._secret = webhook_secret
        self._seen: deque[str] = deque(maxlen=1000)
        self.refused = 0

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/attendee/webhook", self.webhook, methods=["POST"]),
            WebSocketRoute("/attendee/audio/{token}", self.audio),
        ])

    async def webhook(self, request: Request) -> Response:
        payload = verified(await request.body(), request.headers.get("x-webhook-signature"),
                           self._secret.get_secret_value())
        if payload is None:
            self.refused += 1
            log.warning("attendee_webhook_refused reason=signature")
            return JSONResponse({"detail": "bad signature"}, status_code=401)
        try:
            hook = Webhook.model_validate(payload)
            if hook.idempotency_key is not None and hook.idempotency_key in self._seen:
                return JSONResponse({"ok": True, "duplicate": True})  # Attendee retried one that did arrive
            await self.handle(hook)
        except ValidationError as e:
            log.warning("attendee_webhook_unreadable error=%s", e.errors(include_url=False)[0]["msg"])
            return JSONResponse({"detail": "unreadable payload"}, status_code=422)
        if hook.idempotency_key is not None:
            self._seen.append(hook.idempotency_key)
        return JSONResponse({"ok": True})

    async def handle(self, hook: Webhook) -> None:
        match hook.trigger:
            case "bot.state_change":
                change = StateChange.model_validate(hook.data)
                detail = change.new_state + (f": {change.event_type}" if change.event_type else "")
                await self.bridge.admission(admission_of(change), detail)
            case "transcript.update" if self.listen == "transcript":
                turn = TranscriptUpdate.model_validate(hook.data)
                text = turn.transcription.transcript if turn.transcription else None
                start = turn.timestamp_ms / 1000 if turn.timestamp_ms is not None else None
                end = start + turn.duration_ms / 1000 if start is not None and turn.duration_ms is not None else None
                await self.bridge.heard(turn.speaker_uuid, turn.speaker_name, text or "", start, end)
            case "participant_events.join_leave":
                event = ParticipantEvent.model_validate(hook.data)
                self.bridge.participant(event.participant_uuid, event.participant_name)
            case "participant_events.speech_start_stop" if self.listen == "audio":
                event = ParticipantEvent.model_validate(hook.data)
                if event.event_type == "speech_start":
                    await self.bridge.speaking(event.participant_uuid, event.participant_name)

    async def audio(self, ws: WebSocket) -> None:
        if not hmac.compare_digest(ws.path_params.get("token", ""), self.path_token):
            await ws.close(code=1008)
            return
        await ws.accept()
        await self.audio_out.attach(ws)
        try:
            while True:
                raw = await ws.receive_text()
                try:
                    message = RealtimeMessage.model_validate_json(raw)
                    if message.trigger == "realtime_audio.mixed" and self.listen == "audio":
                        chunk = AudioChunk.model_validate(message.data)
                        pcm = resample(base64.b64decode(chunk.chunk), chunk.sample_rate, SAMPLE_RATE)
                        await self.bridge.audio(pcm)
                except (ValidationError, ValueError, binascii.Error) as e:
                    log.warning("attendee_audio_unreadable error=%s", type(e).__name__)
        except WebSocketDisconnect:
            pass
        finally:
            self.audio_out.detach(ws)


# --- Attendee's API: the bot ----------------------------------------------------------------------------


class AttendeeAPI:
    """Attendee's REST API (docs/openapi.yml): `Authorization: Token <key>`."""

    def __init__(self, settings: AttendeeSettings, http: httpx.AsyncClient | None = None) -> None:
        self._http = http or httpx.AsyncClient(
            base_url=settings.url.rstrip("/"), timeout=30,
            headers={"Authorization": f"Token {settings.api_key.get_secret_value()}"},
        )

    async def create_bot(self, meeting_url: str, bot_name: str, audio_url: str, webhook_url: str) -> str:
        body = {
            "meeting_url": meeting_url,
            "bot_name": bot_name,
            "websocket_settings": {"audio": {"url": audio_url, "sample_rate": SAMPLE_RATE}},
            "webhooks": [{"url": webhook_url, "triggers": TRIGGERS}],
        }
        r = await self._http.post("/api/v1/bots", json=body)
        if r.status_code >= 300:
            raise ServiceError(f"Attendee refused the bot ({r.status_code}): {r.text[:300]}")
        return str(r.json()["id"])

    async def leave(self, bot_id: str) -> None:
        r = await self._http.post(f"/api/v1/bots/{bot_id}/leave")
        if r.status_code >= 300 and r.status_code != 400:  # 400: the bot is not in a meeting any more
            log.warning("attendee_leave_failed status=%s", r.status_code)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._http.aclose()


class AttendeeService:
    """Attendee's side of one meeting's bridge (`attend.BotService`)."""

    def __init__(self, bridge: MeetingBridge, settings: AttendeeSettings, listen: Listen = "audio",
                 http: httpx.AsyncClient | None = None) -> None:
        self.audio_out = AttendeeAudioOut()
        bridge.audio_out = self.audio_out
        self.listener = AttendeeListener(bridge, self.audio_out, settings.webhook_secret, listen)
        self.api = AttendeeAPI(settings, http)
        self.bot_id: str | None = None

    def app(self) -> Starlette:
        return self.listener.app()

    async def start(self, meeting_url: str, bot_name: str, public_url: str) -> str:
        ws_base = "ws" + public_url.removeprefix("http")  # https -> wss
        self.bot_id = await self.api.create_bot(
            meeting_url, bot_name, f"{ws_base}/attendee/audio/{self.listener.path_token}", f"{public_url}/attendee/webhook"
        )
        log.info("attendee_bot bot_id=%s", self.bot_id)
        return self.bot_id

    async def leave(self) -> None:
        if self.bot_id is not None:
            await self.api.leave(self.bot_id)

    async def aclose(self) -> None:
        await self.api.aclose()


def service(settings: AttendeeSettings, listen: Listen = "audio") -> Callable[[MeetingBridge], AttendeeService]:
    """For `attend.attend(service=...)`: Attendee with these settings; `listen`: the meeting's audio into the
    delegate's own recogniser (`audio`, the default) or Attendee's transcript (`transcript`)."""
    return lambda bridge: AttendeeService(bridge, settings, listen)
