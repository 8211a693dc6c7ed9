"""What an integration asks after each final turn: the delegate in this process, or a delegate server.

Both say what they decided as the wire protocol's own messages (`DecisionMessage`, `ActionMessage`), so an
integration handles one format whichever it runs with; both let only guarded text out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from delegate import guard
from delegate.actions import ActionExtractor, Extractor
from delegate.client import DelegateClient, Message
from delegate.decide import build_engine
from delegate.decide.base import Engine
from delegate.meeting import MeetingState
from delegate.models import Profile, Utterance
from delegate.server.protocol import ActionMessage, Approval, DecisionMessage

log = logging.getLogger("delegate.integrations")

Outcome = DecisionMessage | ActionMessage
Emit = Callable[[Outcome], Awaitable[None]]


class MeetingDelegate(Protocol):
    """One meeting's delegate, as an integration drives it."""

    async def start(self, emit: Emit) -> None:
        """Join the meeting; every decision and action item from now on goes to `emit`."""
        ...

    async def hear(self, speaker: str, text: str) -> int:
        """A final turn of the meeting; returns its utterance id (its decision comes through `emit`)."""
        ...

    def may_say(self, text: str) -> bool:
        """Whether the privacy guard lets `text` (not a decision: e.g. the disclosure) be said for the principal."""
        ...

    async def stop(self) -> None:
        """Leave the meeting."""
        ...


class InProcessDelegate:
    """The engine, the meeting state, the action extractor and the guard in this process: no server, no audit.

    Decides inline (milliseconds with the embedded engine); an LLM engine holds the caller for as long as it
    thinks, so put a slow engine behind a server (`ServerDelegate`)."""

    def __init__(
        self,
        principal: Profile | Mapping[str, Any],
        *,
        engine: Engine | None = None,
        extractor: Extractor | None = None,
        meeting_id: str = "meeting",
        attendees: Iterable[str] = (),
        names: Mapping[str, str] | None = None,
    ) -> None:
        self.principal = Profile.model_validate(principal)
        self.engine = engine or build_engine("local")
        self.extractor = extractor or ActionExtractor(principal=self.principal.speaker_label)
        self.state = MeetingState(meeting_id=meeting_id, attendees=list(attendees), names=dict(names or {}))
        self._emit: Emit | None = None
        self._next_id = 0

    async def start(self, emit: Emit) -> None:
        guard.warm_up()  # the word frequencies load now, not inside the first turn
        self._emit = emit

    async def hear(self, speaker: str, text: str) -> int:
        assert self._emit is not None, "start() first"
        utterance = Utterance(id=self._next_id, speaker=speaker, text=text)
        self._next_id += 1
        started = time.perf_counter()
        self.state.add(utterance)
        decision = await self.engine.decide(self.state, self.principal)
        decision, _ = guard.guard_decision(decision, self.principal, self.state.quotable())
        if decision.spoke:
            self.state.note_spoken(self.principal.speaker_label, decision.used_background)
        decision = decision.model_copy(update={"latency_ms": (time.perf_counter() - started) * 1000})
        await self._emit(DecisionMessage(meeting_id=self.state.meeting_id, decision=decision))
        for action in self.extractor.observe(self.state):
            if guard.guard_action(action, self.principal, self.state.quotable()) is None:
                await self._emit(ActionMessage(meeting_id=self.state.meeting_id, action=action))
        return utterance.id

    def may_say(self, text: str) -> bool:
        return guard.check(text, self.principal, self.state.quotable()).allowed

    async def stop(self) -> None:
        self._emit = None


class ServerDelegate:
    """A delegate server over the wire protocol (`DelegateClient`): its audit log, approval and console apply.

    Text only: the pipeline speaks with its own TTS. Decisions come as the server sends them (with approval,
    a held speech comes once the principal settled it), and a dropped connection is resumed.

    `token`: the meeting's bot token (the principal created the meeting: `delegate.client.create_meeting` or the
    console), with no `principal`: the bot then never holds what the principal keeps private. A `principal`
    starts the meeting itself, which takes the principal's own token (a single-user setup)."""

    def __init__(
        self,
        url: str,
        meeting_id: str,
        principal: Profile | Mapping[str, Any] | None = None,
        *,
        token: str | None = None,
        attendees: Iterable[str] = (),
        names: Mapping[str, str] | None = None,
        engine: str | None = None,
        approval: Approval | None = None,
    ) -> None:
        self.principal = Profile.model_validate(principal) if principal is not None else None
        self.client = DelegateClient(
            url, meeting_id, token=token, principal=self.principal, attendees=attendees, names=names,
            engine=engine, approval=approval, voice=False, on_message=self._received,
        )
        self._emit: Emit | None = None
        self._sends: set[asyncio.Task[int]] = set()
        self._next_id = 0

    async def start(self, emit: Emit) -> None:
        self._emit = emit
        await self.client.__aenter__()
        self._next_id = self.client.next_utterance_id  # after what the server holds, when resuming

    async def _received(self, message: Message) -> None:
        if self._emit is not None and isinstance(message, DecisionMessage | ActionMessage):
            await self._emit(message)

    async def hear(self, speaker: str, text: str) -> int:
        uid = self._next_id
        self._next_id += 1
        # The ack comes back over the network: the pipeline does not wait for it. A refused utterance is
        # logged with its error; the meeting goes on.
        task = asyncio.create_task(self.client.send(speaker, text, id=uid))
        self._sends.add(task)
        task.add_done_callback(self._sent)
        return uid

    def _sent(self, task: asyncio.Task[int]) -> None:
        self._sends.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.warning("utterance_refused meeting_id=%s error=%s", self.client.meeting_id, error)

    def may_say(self, text: str) -> bool:
        # The principal's private items live on the server; what this process holds is all it can check.
        return self.principal is None or guard.check(text, self.principal).allowed

    async def stop(self) -> None:
        """Leave once the last turn sent has its decision (or 10 s passed)."""
        if self._sends:
            await asyncio.wait(self._sends, timeout=10)
        if self._next_id > 0:
            with contextlib.suppress(Exception):
                await self.client.decision(self._next_id - 1, timeout=10)
        self._emit = None
        await self.client.__aexit__(None, None, None)
