"""A meeting's decisions: one pending at a time, decided by the engine, guarded, recorded, then released
(or, in a meeting with approval, a spoken one held for the principal: approval_desk)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import overload

from delegate.decide.base import Engine
from delegate.guard import guard_decision
from delegate.models import Decision
from delegate.server.metrics import Metrics
from delegate.server.protocol import DecisionMessage, ErrorCode, ErrorMessage
from delegate.server.session.approval_desk import ApprovalDesk
from delegate.server.session.core import MeetingCore
from delegate.server.session.outbox import Outbox
from delegate.server.session.release import Release
from delegate.store import AuditKind


class Decisions(Sequence[Decision]):
    """A meeting's decisions, in order (a sequence of them), and the one pending.

    One decision is pending at a time; a newer utterance drops it (recorded as `decision_dropped`)
    unless it is already being recorded, so the client only hears decisions on its latest utterance.
    """

    def __init__(
        self,
        core: MeetingCore,
        outbox: Outbox,
        engine: Engine,
        metrics: Metrics,
        desk: ApprovalDesk,
        release: Release,
        made: list[Decision],
        *,
        gate: Callable[[Decision], Decision] = lambda d: d,
    ) -> None:
        self._core = core
        self._outbox = outbox
        self.engine = engine
        self._metrics = metrics
        self._desk = desk
        self._release = release
        self._gate = gate
        """What the bot may act on (silent before it is in the meeting): applied before anything is recorded."""
        self.made = made
        """Every decision recorded, oldest first (the approval desk reads it too)."""
        self._pending: asyncio.Task[None] | None = None
        self._pending_id: int | None = None
        self._committing = False

    @overload
    def __getitem__(self, index: int) -> Decision: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Decision]: ...

    def __getitem__(self, index: int | slice) -> Decision | Sequence[Decision]:
        return self.made[index]

    def __len__(self) -> int:
        return len(self.made)

    @property
    def last(self) -> Decision | None:
        return self.made[-1] if self.made else None

    @property
    def settled(self) -> bool:
        """No decision is under way."""
        return self._pending is None or self._pending.done()

    def start(self, utterance_id: int, received: float | None = None) -> None:
        """Decide on `utterance_id` in a task of its own (the newest utterance: the one pending from now on)."""
        self._pending_id = utterance_id
        self._committing = False
        self._pending = asyncio.create_task(
            self._decide(utterance_id, time.perf_counter() if received is None else received),
            name=f"decide-{self._core.meeting_id}",
        )

    async def _decide(self, utterance_id: int, received: float) -> None:
        try:
            await self._decide_and_tell(utterance_id, received)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Never let a decision task die silently: the session must go on with the next utterance.
            self._core.log.exception("decision_failed", utterance_id=utterance_id)
            self._metrics.error(ErrorCode.internal)

    async def _decide_and_tell(self, utterance_id: int, received: float) -> None:
        ulog = self._core.log.bind(utterance_id=utterance_id)
        try:
            decision = await self.engine.decide(self._core.state, self._core.principal)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            ulog.exception("engine_failed")
            self._committing = True
            self._metrics.error(ErrorCode.engine_error)
            await self._outbox.audit(
                AuditKind.decision_dropped, utterance_id, reason="engine_error", error=repr(e)[:500]
            )
            await self._outbox.send(
                ErrorMessage(
                    code=ErrorCode.engine_error,
                    detail="The engine failed on this utterance; the next one is decided as usual.",
                    utterance_id=utterance_id,
                )
            )
            return
        # From here on the decision is recorded and sent even if a newer utterance arrives meanwhile.
        self._committing = True
        decision, blocked = guard_decision(self._gate(decision), self._core.principal, self._core.state.quotable())
        if blocked:
            ulog.warning("guard_blocked", blocked=[b.model_dump() for b in blocked])
        hold = self._desk.holds(decision)
        expires_at = self._desk.expiry()
        await self._outbox.audit(
            AuditKind.decision,
            utterance_id,
            **decision.model_dump(mode="json", exclude={"utterance_id"}),
            **({"guard_blocked": [b.model_dump() for b in blocked]} if blocked else {}),
            **({"approval": "pending", "expires_at": expires_at} if hold else {}),
        )
        self.made.append(decision)
        self._outbox.publish(
            DecisionMessage(meeting_id=self._core.meeting_id, decision=decision, approval="pending" if hold else "none")
        )
        if hold:
            await self._desk.supersede()
            self._desk.hold(decision, expires_at)  # the bot hears of it once the principal approved, rejected, or it expired
        else:
            await self._release(decision)
        self._metrics.decision(decision, time.perf_counter() - received)
        ulog.info("decision", scenario=str(decision.scenario), spoke=decision.spoke, engine=decision.engine)

    async def settle_pending(self, reason: str, newer: int | None = None) -> None:
        """Drop the pending decision, or wait for it if it is already being recorded."""
        utterance_id = self._pending_id
        if not await self._stop_pending():
            return
        self._metrics.dropped.inc()
        await self._outbox.audit(AuditKind.decision_dropped, utterance_id, reason=reason, newer_utterance_id=newer)
        self._core.log.info("decision_dropped", utterance_id=utterance_id, reason=reason)

    async def abandon(self) -> None:
        """Let the pending decision go unrecorded (the meeting is let go: the process taking over decides it
        again), unless it is being recorded: then it finishes, or it would be decided twice."""
        await self._stop_pending()

    async def _stop_pending(self) -> bool:
        """Cancel the pending decision; True if one was cancelled, False if there was none or it is being
        recorded (then this waits for it to finish)."""
        task, self._pending = self._pending, None
        if task is None or task.done():
            return False
        if self._committing:
            await asyncio.shield(task)
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return True
