"""The meeting bots this server hosts (`POST /v1/meetings/{id}/attend`, the console's "Send a bot"): one bridge per
meeting, run as a task in this process by the same code as `delegate attend` (`integrations.attend.run_bot`).

The bridge joins the meeting's stream with the meeting's bot token, as any bot does; what the service calls back
(webhooks, Attendee's audio socket) is served under `/v1/bots/{path token}/` on this server, at the public base URL
`DELEGATE_PUBLIC_URL`. The services' keys come from the server's environment (`ATTENDEE_*`, `RECALL_*`), read once
at start-up (`keys`); they are never in a request, a log line or the audit log.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from delegate.integrations.attend import BotService, run_bot
from delegate.integrations.bridge import MeetingBridge
from delegate.server.bots.keys import ServiceKeys
from delegate.server.protocol import (
    AttendRequest,
    BotEvent,
    BotState,
    BotStatus,
    ErrorCode,
    ProtocolError,
    Via,
)
from delegate.server.registry import MeetingSession

log = structlog.get_logger("delegate.server.bots")

MOUNT = "/v1/bots"
"""Where the services' webhooks and audio sockets reach this server (each bot under its own random token)."""
RECALL_WORKSPACE_HOOK = "recall/webhook"
"""Recall's status webhooks go to one endpoint per workspace (its dashboard): `PUBLIC_URL/v1/bots/recall/webhook`."""
STATE_OF = {"joining": "requested", "waiting_room": "waiting_room", "in_meeting": "in_meeting",
            "removed": "removed", "ended": "ended"}
MAX_DETAIL = 200


@dataclass
class HostedBot:
    """One meeting's bot: its bridge's task, where it stands, and the routes its service calls."""

    session: MeetingSession
    via: Via
    path: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    leave: asyncio.Event = field(default_factory=asyncio.Event)
    bridge: MeetingBridge | None = None
    bot_id: str | None = None
    app: Starlette | None = None
    task: asyncio.Task[Any] | None = None
    outcome: BotState | None = None
    """Set once the bridge is done: its last state, or `failed`."""
    detail: str = ""

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def status(self) -> BotStatus:
        if self.outcome is not None:
            state: BotState = self.outcome
        else:
            state = STATE_OF[self.bridge.admission_state] if self.bridge is not None else "requested"  # type: ignore[assignment]
        return BotStatus(via=self.via, state=state, detail=self.detail, bot_id=self.bot_id)

    def publish(self) -> None:
        status = self.status()
        self.session.outbox.publish(BotEvent(meeting_id=self.session.meeting_id, **status.model_dump()))


class HostedBots:
    """The bots this process hosts, by meeting; also the ASGI app of their services' routes (under `MOUNT`)."""

    def __init__(self, public_url: str | None, keys: ServiceKeys) -> None:
        self._public_url = public_url.rstrip("/") if public_url else None
        self._keys = keys
        self._bots: dict[tuple[str, str], HostedBot] = {}
        self._by_path: dict[str, HostedBot] = {}

    def status(self, owner: str, meeting_id: str) -> BotStatus | None:
        bot = self._bots.get((owner, meeting_id))
        return bot.status() if bot is not None else None

    async def start(self, session: MeetingSession, body: AttendRequest, delegate_url: str, bot_token: str) -> BotStatus:
        if self._public_url is None:
            raise ProtocolError(
                ErrorCode.not_configured,
                "The server has no public URL for the service to call back: set DELEGATE_PUBLIC_URL "
                "(e.g. https://delegate.example.com; docs/meetings.md).",
            )
        service = self._keys.service(body.via, body.listen)
        key = (session.owner, session.meeting_id)
        earlier = self._bots.get(key)
        if earlier is not None and earlier.running:
            raise ProtocolError(ErrorCode.conflict, f"A {earlier.via} bot is already {earlier.status().state} for this meeting.")
        await session.expect_bot(f"{body.via} bot requested")
        bot = HostedBot(session=session, via=body.via)
        self._bots[key] = bot
        self._by_path[bot.path] = bot
        bot.task = asyncio.create_task(self._run(bot, body, service, delegate_url, bot_token), name=f"bot-{session.meeting_id}")
        bot.publish()
        return bot.status()

    async def ask_to_leave(self, owner: str, meeting_id: str) -> BotStatus:
        bot = self._bots.get((owner, meeting_id))
        if bot is None or not bot.running:
            raise ProtocolError(ErrorCode.not_found, "This meeting has no bot of this server's in it.")
        bot.leave.set()
        assert bot.task is not None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(bot.task), 30)
        return bot.status()

    async def stop_all(self) -> None:
        """The server stops: each bot is taken out of its call; its meeting stays open (suspended, as every
        meeting of a stopping server), to send a bot again once the server is back."""
        running = [b.task for b in self._bots.values() if b.task is not None and not b.task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=15)

    async def _run(
        self, bot: HostedBot, body: AttendRequest, service: Callable[[MeetingBridge], BotService], delegate_url: str,
        bot_token: str,
    ) -> None:
        session = bot.session
        bound = log.bind(meeting_id=session.meeting_id, via=bot.via)

        @contextlib.asynccontextmanager
        async def exposed(app: Starlette) -> AsyncIterator[str]:
            bot.app = app
            try:
                yield f"{self._public_url}{MOUNT}/{bot.path}"
            finally:
                bot.app = None

        def started(meeting_id: str, bot_id: str) -> None:
            bot.bot_id = bot_id
            bound.info("bot_requested", bot_id=bot_id)

        def bridged(bridge: MeetingBridge) -> None:
            bot.bridge = bridge

        try:
            done = await run_bot(
                body.meeting_url, service, delegate_url=delegate_url, meeting_id=session.meeting_id,
                bot_token=bot_token, bot_name=f"{session.principal.name} (AI delegate)",
                attendees=session.info().attendees, expose=exposed, on_started=started, on_bridge=bridged,
                leave=bot.leave,
            )
        except Exception as e:  # noqa: BLE001 - whatever stopped the bridge is the bot's one-line failure
            bot.outcome = "failed"
            bot.detail = _one_line(session.core.redact(str(e)) or type(e).__name__)
            bound.warning("bot_failed", error=type(e).__name__)
        else:
            asked = bot.leave.is_set() and done.admission not in ("removed", "ended")
            bot.outcome = "ended" if asked else STATE_OF[done.admission]  # type: ignore[assignment]
            bot.detail = "asked to leave" if asked else bot.detail
            bound.info("bot_done", state=bot.outcome)
        finally:
            self._by_path.pop(bot.path, None)
        bot.publish()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The services' calls: `/v1/bots/{path token}/...` to that bot's bridge, with the rest of the path;
        `/v1/bots/recall/webhook` (Recall's one dashboard endpoint for the workspace) to every Recall bot here."""
        if scope["type"] not in ("http", "websocket"):
            return
        rest = scope["path"].split(MOUNT, 1)[-1].lstrip("/")
        if rest == RECALL_WORKSPACE_HOOK and scope["type"] == "http":
            await self._to_recall_bots(scope, receive, send)
            return
        token, _, tail = rest.partition("/")
        bot = self._by_path.get(token)
        if bot is None or bot.app is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await JSONResponse({"detail": "No such bot here."}, status_code=404)(scope, receive, send)
            return
        await bot.app(_at(scope, f"/{tail}"), receive, send)

    async def _to_recall_bots(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Each Recall bot's bridge checks the signature and skips another bot's events (`recall.RecallListener`):
        the request is answered with the best of their answers (200 with none here: nothing to retry)."""
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        bots = [b for b in self._by_path.values() if b.via == "recall" and b.app is not None]
        answers: list[int] = []
        for bot in bots:

            async def replay() -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            async def keep(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    answers.append(int(message["status"]))

            assert bot.app is not None
            await bot.app(_at(scope, f"/{RECALL_WORKSPACE_HOOK}"), replay, keep)
        status = min(answers, default=200)
        await JSONResponse({"bots": len(bots)}, status_code=status)(scope, receive, send)


def _at(scope: Scope, path: str) -> Scope:
    """The request as a bridge's own app sees it: at `path` under no root."""
    return dict(scope, path=path, raw_path=path.encode(), root_path="")


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"
