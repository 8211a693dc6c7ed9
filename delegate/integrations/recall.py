"""The bridge to Recall.ai (hosted meeting bots: docs.recall.ai).

Recall's bot joins the call; this bridge asks for it (`POST /api/v1/bot/`) with a real-time webhook endpoint for
its transcript and participant events, receives the bot's status webhooks (configured once in Recall's dashboard,
pointed at this bridge), and connects them to the delegate server's meeting stream:

| Recall.ai | The delegate |
|---|---|
| `bot.<code>` status webhook (`data.data.code`, `sub_code`) | `admission` |
| `transcript.data` (`data.data.words`, `data.data.participant` with `id` and `name`) | `utterance` |
| `participant_events.join` / `.update` | who is who (`Roster`) |
| the delegate's speech (all of one reply) | `POST /api/v1/bot/{id}/output_audio/` as base64 MP3 |

Every request from Recall is verified as Recall signs it (Svix: `webhook-id`, `webhook-timestamp`,
`webhook-signature`, or the legacy `svix-*` headers, keyed by the workspace's `whsec_` secret). The API key and
the secret are `SecretStr`s: never logged or audited. What could not be checked against Recall itself is listed
in testkit/payloads/README.md.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import hmac
import io
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from delegate.integrations.bridge import MeetingBridge, ServiceError
from delegate.server.protocol import AdmissionState

log = logging.getLogger("delegate.integrations.recall")

TOLERANCE_S = 300
"""How old (or early) a signed request may be, as Svix's own libraries allow."""
REALTIME_EVENTS = ["transcript.data", "participant_events.join", "participant_events.leave", "participant_events.update"]


class RecallSettings(BaseSettings):
    """`RECALL_URL` (your region, e.g. https://us-west-2.recall.ai), `RECALL_API_KEY`, `RECALL_WEBHOOK_SECRET`
    (the workspace verification secret, `whsec_...`)."""

    model_config = SettingsConfigDict(env_prefix="RECALL_", frozen=True, extra="ignore")

    url: str = "https://us-west-2.recall.ai"
    api_key: SecretStr
    webhook_secret: SecretStr


# --- signatures --------------------------------------------------------------------------------------------


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix("whsec_"))


def sign(msg_id: str, timestamp: int, body: bytes, secret: str) -> str:
    """The `v1,...` signature Recall (through Svix) puts on a request."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode("ascii")


def verified(headers: Mapping[str, str], body: bytes, secret: str, now: float | None = None) -> bool:
    """Whether Recall signed this request with `secret`, lately."""
    msg_id = headers.get("webhook-id") or headers.get("svix-id")
    stamp = headers.get("webhook-timestamp") or headers.get("svix-timestamp")
    given = headers.get("webhook-signature") or headers.get("svix-signature")
    if not (msg_id and stamp and given):
        return False
    try:
        timestamp = int(stamp)
        expected = sign(msg_id, timestamp, body, secret)
    except (ValueError, binascii.Error):
        return False
    if abs((time.time() if now is None else now) - timestamp) > TOLERANCE_S:
        return False
    return any(hmac.compare_digest(expected, s) for s in given.split())


# --- Recall's payloads ("Bot Webhooks", "Real-Time Event Payloads") -----------------------------------------
# Read with extra="ignore": these are Recall's documents, which grow fields; ours refuse unknown ones.


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Participant(_Payload):
    id: int | str
    name: str | None = None


class Timestamp(_Payload):
    relative: float | None = None


class Word(_Payload):
    text: str
    start_timestamp: Timestamp | None = None
    end_timestamp: Timestamp | None = None


class TranscriptData(_Payload):
    words: list[Word] = Field(default_factory=list)
    participant: Participant | None = None


class ParticipantData(_Payload):
    participant: Participant


class Status(_Payload):
    code: str
    sub_code: str | None = None


class Event(_Payload):
    event: str
    data: dict[str, Any] = Field(default_factory=dict)


IN_CALL = frozenset({"in_call_not_recording", "in_call_recording", "recording_permission_allowed"})
OVER = frozenset({"call_ended", "done", "fatal"})
REMOVAL_WORDS = ("kicked", "removed", "denied")
"""Sub-codes naming a removal or a refusal to admit (`bot_kicked_from_call`, `bot_kicked_from_waiting_room`, ...)."""


def admission_of(status: Status) -> AdmissionState | None:
    """Recall's bot status as the delegate's admission state; None for one that is no step of admission."""
    if status.code == "joining_call":
        return "joining"
    if status.code == "in_waiting_room":
        return "waiting_room"
    if status.code in IN_CALL:
        return "in_meeting"
    if status.code in OVER:
        sub = status.sub_code or ""
        return "removed" if any(w in sub for w in REMOVAL_WORDS) else "ended"
    return None


# --- the bot's voice: the delegate's speech as MP3 clips ------------------------------------------------------


def mp3_of(pcm: bytes, sample_rate: int) -> bytes:
    """16-bit mono PCM as MP3 (Recall's output audio takes MP3 only); PyAV, of the `audio` extra."""
    import av
    import numpy as np

    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=sample_rate, layout="mono")
        frame = av.AudioFrame.from_ndarray(np.frombuffer(pcm, dtype="<i2").reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = sample_rate
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


class RecallAudioOut:
    """Gathers each reply's audio and, once all of it came, has the bot play it (`output_audio`); a reply cut
    before its end (someone spoke over it) is never sent. Recall plays whole clips: no streaming."""

    def __init__(self, api: RecallAPI) -> None:
        self._api = api
        self._gathering: dict[int, bytearray] = {}
        self.clips_sent = 0

    async def speak(self, utterance_id: int, pcm: bytes, sample_rate: int, *, last: bool) -> None:
        gathered = self._gathering.setdefault(utterance_id, bytearray())
        gathered += pcm
        if not last:
            return
        clip = bytes(self._gathering.pop(utterance_id))
        if clip:
            mp3 = await asyncio.to_thread(mp3_of, clip, sample_rate)
            await self._api.output_audio(mp3)
            self.clips_sent += 1

    async def cancel(self, utterance_id: int) -> None:
        self._gathering.pop(utterance_id, None)


# --- what Recall calls: status webhooks and the real-time endpoint -----------------------------------------


class RecallListener:
    """The routes Recall calls back, feeding one meeting's bridge."""

    def __init__(self, bridge: MeetingBridge, webhook_secret: SecretStr) -> None:
        self.bridge = bridge
        self._secret = webhook_secret
        self._seen: deque[str] = deque(maxlen=1000)
        self.bot_id: str | None = None
        self.refused = 0

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/recall/webhook", self.receive, methods=["POST"]),
            Route("/recall/realtime", self.receive, methods=["POST"]),
        ])

    async def receive(self, request: Request) -> Response:
        body = await request.body()
        if not verified(request.headers, body, self._secret.get_secret_value()):
            self.refused += 1
            log.warning("recall_webhook_refused reason=signature")
            return JSONResponse({"detail": "bad signature"}, status_code=401)
        msg_id = request.headers.get("webhook-id") or request.headers.get("svix-id") or ""
        if msg_id in self._seen:
            return JSONResponse({"ok": True, "duplicate": True})  # a retry of one that did arrive
        try:
            await self.handle(Event.model_validate_json(body))
        except ValidationError as e:
            log.warning("recall_webhook_unreadable error=%s", e.errors(include_url=False)[0]["msg"])
            return JSONResponse({"detail": "unreadable payload"}, status_code=422)
        self._seen.append(msg_id)
        return JSONResponse({"ok": True})

    async def handle(self, event: Event) -> None:
        bot = event.data.get("bot") or {}
        if self.bot_id is not None and bot.get("id") not in (None, self.bot_id):
            return  # the dashboard's webhooks are the workspace's: another bot's
        inner = event.data.get("data") or {}
        if event.event.startswith("bot."):
            status = Status.model_validate(inner)
            await self.bridge.admission(admission_of(status), status.code + (f": {status.sub_code}" if status.sub_code else ""))
        elif event.event == "transcript.data":
            turn = TranscriptData.model_validate(inner)
            text = " ".join(w.text.strip() for w in turn.words if w.text.strip())
            who = turn.participant
            start = turn.words[0].start_timestamp.relative if turn.words and turn.words[0].start_timestamp else None
            last = turn.words[-1].end_timestamp if turn.words else None
            await self.bridge.heard(
                str(who.id) if who else None, who.name if who else None, text, start, last.relative if last else None
            )
        elif event.event in ("participant_events.join", "participant_events.update"):
            joined = ParticipantData.model_validate(inner)
            self.bridge.participant(str(joined.participant.id), joined.participant.name)


# --- Recall's API ------------------------------------------------------------------------------------------


class RecallAPI:
    """Recall's REST API: the bot, its leaving, its audio output."""

    def __init__(self, settings: RecallSettings, http: httpx.AsyncClient | None = None) -> None:
        self._http = http or httpx.AsyncClient(
            base_url=settings.url.rstrip("/"), timeout=30,
            headers={"Authorization": settings.api_key.get_secret_value()},
        )
        self.bot_id: str | None = None

    async def create_bot(self, meeting_url: str, bot_name: str, realtime_url: str) -> str:
        body = {
            "meeting_url": meeting_url,
            "bot_name": bot_name,
            "recording_config": {
                "transcript": {"provider": {"recallai_streaming": {"mode": "prioritize_low_latency", "language_code": "en"}}},
                "realtime_endpoints": [{"type": "webhook", "url": realtime_url, "events": REALTIME_EVENTS}],
            },
        }
        r = await self._http.post("/api/v1/bot/", json=body)
        if r.status_code >= 300:
            raise ServiceError(f"Recall.ai refused the bot ({r.status_code}): {r.text[:300]}")
        self.bot_id = str(r.json()["id"])
        return self.bot_id

    async def output_audio(self, mp3: bytes) -> None:
        r = await self._http.post(
            f"/api/v1/bot/{self.bot_id}/output_audio/", json={"kind": "mp3", "b64_data": base64.b64encode(mp3).decode()}
        )
        if r.status_code >= 300:
            log.warning("recall_output_audio_failed status=%s", r.status_code)

    async def leave(self) -> None:
        if self.bot_id is None:
            return
        r = await self._http.post(f"/api/v1/bot/{self.bot_id}/leave_call/")
        if r.status_code >= 300 and r.status_code != 400:  # 400: the bot is not in a call any more
            log.warning("recall_leave_failed status=%s", r.status_code)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._http.aclose()


class RecallService:
    """Recall's side of one meeting's bridge (`attend.BotService`)."""

    def __init__(self, bridge: MeetingBridge, settings: RecallSettings, http: httpx.AsyncClient | None = None) -> None:
        self.api = RecallAPI(settings, http)
        self.audio_out = RecallAudioOut(self.api)
        bridge.audio_out = self.audio_out
        self.listener = RecallListener(bridge, settings.webhook_secret)

    def app(self) -> Starlette:
        return self.listener.app()

    async def start(self, meeting_url: str, bot_name: str, public_url: str) -> str:
        bot_id = await self.api.create_bot(meeting_url, bot_name, f"{public_url}/recall/realtime")
        self.listener.bot_id = bot_id
        log.info("recall_bot bot_id=%s", bot_id)
        return bot_id

    async def leave(self) -> None:
        await self.api.leave()

    async def aclose(self) -> None:
        await self.api.aclose()


def service(settings: RecallSettings) -> Callable[[MeetingBridge], RecallService]:
    """For `attend.attend(service=...)`: Recall.ai with these settings (its transcript names the speakers)."""
    return lambda bridge: RecallService(bridge, settings)
