"""`attend`: put the delegate into a real meeting through a meeting-bot service (Attendee or Recall.ai).

The principal's side starts the meeting on the delegate server (its brief stays there), the bridge joins it
with the meeting's bot token, serves what the service calls back, asks the service for a bot, and runs until
the bot is removed or the meeting ends (or `minutes` pass), then asks the service to take the bot out.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette

from delegate.client import DelegateClient, create_meeting
from delegate.integrations.bridge import MeetingBridge
from delegate.integrations.speakers import Roster
from delegate.models import Profile
from delegate.server.protocol import AdmissionState, Via

__all__ = ["Attended", "BotService", "Via", "attend", "run_bot", "serving"]


class BotService(Protocol):
    """One service's side of a bridge (`attendee.AttendeeService`, `recall.RecallService`)."""

    def app(self) -> Starlette:
        """The routes the service calls back (webhooks, real-time streams)."""
        ...

    async def start(self, meeting_url: str, bot_name: str, public_url: str) -> str:
        """Ask for the bot; its id."""
        ...

    async def leave(self) -> None: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Attended:
    """What came of it: the delegate's meeting, the service's bot, how far the bot got."""

    meeting_id: str
    bot_id: str
    admission: AdmissionState
    utterances: int
    """Turns of the meeting: from the service's transcript, or made by the server's recogniser of its audio."""


@contextlib.asynccontextmanager
async def serving(app: Starlette, host: str, port: int) -> Any:
    """The bridge's own small HTTP server (what the service calls back), in this event loop; yields its port."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", ws_per_message_deflate=False))
    task = asyncio.create_task(server.serve(sockets=[sock]), name="bridge-listener")
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task


async def attend(
    meeting_url: str,
    brief: Profile | Mapping[str, Any],
    service: Callable[[MeetingBridge], BotService],
    *,
    delegate_url: str,
    token: str | None = None,
    public_url: str | Callable[[int], str],
    host: str = "127.0.0.1",
    port: int = 0,
    attendees: Iterable[str] = (),
    meeting_id: str | None = None,
    minutes: float | None = None,
    on_started: Callable[[str, str], Awaitable[None] | None] | None = None,
) -> Attended:
    """Run one meeting through a service's bot. `service` makes the service's side for the bridge
    (`attendee.service(...)`, `recall.service(...)`); `token`: the principal's, when the server has tokens;
    `public_url`: where the service reaches this process (or a function of the port it listens on);
    `on_started(meeting_id, bot_id)` once the bot was asked for."""
    principal = Profile.model_validate(brief)
    listed = list(attendees)
    created = await create_meeting(
        delegate_url, principal, token=token, meeting_id=meeting_id, attendees=listed, admission="joining"
    )

    @contextlib.asynccontextmanager
    async def exposed(app: Starlette) -> AsyncIterator[str]:
        async with serving(app, host, port) as bound:
            yield public_url(bound) if callable(public_url) else public_url

    return await run_bot(
        meeting_url, service, delegate_url=delegate_url, meeting_id=created.meeting_id, bot_token=created.bot_token,
        bot_name=f"{principal.name} (AI delegate)", attendees=listed, expose=exposed, minutes=minutes,
        on_started=on_started, end_on_failure=True,
    )


async def run_bot(
    meeting_url: str,
    service: Callable[[MeetingBridge], BotService],
    *,
    delegate_url: str,
    meeting_id: str,
    bot_token: str | None,
    bot_name: str,
    expose: Callable[[Starlette], contextlib.AbstractAsyncContextManager[str]],
    attendees: Iterable[str] = (),
    minutes: float | None = None,
    on_started: Callable[[str, str], Awaitable[None] | None] | None = None,
    on_bridge: Callable[[MeetingBridge], None] | None = None,
    leave: asyncio.Event | None = None,
    end_on_failure: bool = False,
) -> Attended:
    """The bridge of a meeting already open on the delegate server (`attend` from here, or the server itself for
    the console): joins it with its `bot_token`, serves the service's routes where `expose(app)` puts them (it
    yields their public base URL), asks for the bot and runs until the bot is removed, the meeting ends, `leave`
    is set or `minutes` pass; then asks the service to take the bot out. `end_on_failure`: a bot the service
    would not send ends the delegate's meeting too (else the meeting stays open for another try)."""
    bridge: MeetingBridge
    stream_url = "ws" + delegate_url.removeprefix("http") if delegate_url.startswith("http") else delegate_url
    client = DelegateClient(
        stream_url, meeting_id, token=bot_token, voice=None,  # spoken replies where the server can speak
        on_message=lambda m: bridge.on_message(m),
    )
    bridge = MeetingBridge(link=client, roster=Roster(list(attendees), own_name=bot_name))
    if on_bridge is not None:
        on_bridge(bridge)
    side = service(bridge)
    try:
        async with expose(side.app()) as base, client:
            try:
                bot_id = await side.start(meeting_url, bot_name, base.rstrip("/"))
            except Exception:
                if end_on_failure:
                    await client.leave("the service did not send its bot")  # the meeting does not wait for a bot
                raise
            if on_started is not None:
                outcome = on_started(meeting_id, bot_id)
                if asyncio.iscoroutine(outcome):
                    await outcome
            try:
                await asyncio.wait_for(_first(bridge.ended, leave), minutes * 60 if minutes else None)
            except TimeoutError:
                pass
            finally:
                await side.leave()
    finally:
        await side.aclose()
    return Attended(meeting_id, bot_id, bridge.admission_state, len(bridge.heard_ids) + bridge.transcribed)


async def _first(*events: asyncio.Event | None) -> None:
    """Until one of `events` is set."""
    waits = [asyncio.ensure_future(e.wait()) for e in events if e is not None]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
