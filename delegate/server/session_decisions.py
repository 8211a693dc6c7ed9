"""A meeting's decisions: one pending at a time, decided by the engine, guarded, recorded, then released
(or, in a meeting with approval, a spoken one held for the principal: session_approval)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from delegate.guard import guard_decision
from delegate.models import Decision
from delegate.server.protocol import ApprovalStatus, DecisionMessage, ErrorCode, ErrorMessage
from delegate.server.session_approval import ApprovalDesk
from delegate.store import AuditKind


class Decisions(ApprovalDesk):
    """The decision side of `MeetingSession`.

    One decision is pending at a time; a newer utterance drops it (recorded as `decision_dropped`)
    unless it is already being recorded, so the client only hears decisions on its latest utterance.
    """

    _pending: asyncio.Task[None] | None
    _pending_id: int | None
    _committing: bool
    # Implemented by the voice side (VoiceOut): declared, not defined, so the mixin order cannot shadow it.
    _say: Callable[[Decision], Awaitable[None]]

    def resume_decision(self, utterance_id: int) -> None:
        self._pending_id = utterance_id
        self._committing = False
        self._pending = asyncio.create_task(
            self._decide(utterance_id, time.perf_counter()), name=f"decide-{self.meeting_id}"
        )

    async def _decide(self, utterance_id: int, received: float) -> None:
        try:
            await self._decide_and_tell(utterance_id, received)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Never let a decision task die silently: the session must go on with the next utterance.
            self._log.exception("decision_failed", utterance_id=utterance_id)
            self._metrics.error(ErrorCode.internal)

    async def _decide_and_tell(self, utterance_id: int, received: float) -> None:
        ulog = self._log.bind(utterance_id=utterance_id)
        try:
            decision = await self.engine.decide(self.state, self.principal)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            ulog.exception("engine_failed")
            self._committing = True
            self._metrics.error(ErrorCode.engine_error)
            await self._audit(
                AuditKind.decision_dropped, utterance_id, reason="engine_error", error=repr(e)[:500]
            )
            await self._send(
                ErrorMessage(
                    code=ErrorCode.engine_error,
                    detail="The engine failed on this utterance; the next one is decided as usual.",
                    utterance_id=utterance_id,
                )
            )
            return
        # From here on the decision is recorded and sent even if a newer utterance arrives meanwhile.
        self._committing = True
        decision, blocked = guard_decision(decision, self.principal, self._public_texts())
        if blocked:
            ulog.warning("guard_blocked", blocked=[b.model_dump() for b in blocked])
        hold = self._holds(decision)
        expires_at = time.time() + self._approval_timeout_s
        await self._audit(
            AuditKind.decision,
            utterance_id,
            **decision.model_dump(mode="json", exclude={"utterance_id"}),
            **({"guard_blocked": [b.model_dump() for b in blocked]} if blocked else {}),
            **({"approval": "pending", "expires_at": expires_at} if hold else {}),
        )
        self.decisions.append(decision)
        self._publish(
            DecisionMessage(meeting_id=self.meeting_id, decision=decision, approval="pending" if hold else "none")
        )
        if hold:
            await self._supersede()
            self._hold(decision, expires_at)  # the bot hears of it once the principal approved, rejected, or it expired
        else:
            await self._release(decision)
        self._metrics.decision(decision, time.perf_counter() - received)
        ulog.info("decision", scenario=str(decision.scenario), spoke=decision.spoke, engine=decision.engine)

    async def _settle_pending(self, reason: str, newer: int | None = None) -> None:
        """Drop the pending decision, or wait for it if it is already being recorded."""
        task, utterance_id = self._pending, self._pending_id
        self._pending = None
        if task is None or task.done():
            return
        if self._committing:
            await asyncio.shield(task)
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._metrics.dropped.inc()
        await self._audit(AuditKind.decision_dropped, utterance_id, reason=reason, newer_utterance_id=newer)
        self._log.info("decision_dropped", utterance_id=utterance_id, reason=reason)

    async def _release(
        self, decision: Decision, approval: ApprovalStatus = "none", *, resumed: bool = False
    ) -> None:
        """Tell the bot's client a recorded decision it may have: the one path by which spoken text reaches it.

        `approval`: `none` (not held), `approved`/`edited` (`speak` is the principal's final text), or
        `rejected`/`expired` (silence). A held speech comes here only once settled. `resumed`: sent again
        to a client that came back (said once already, or settled while it was away).
        """
        if decision.spoke and not resumed:
            # What the delegate said for the principal is not said again later in the meeting.
            self.state.note_spoken(self.principal.speaker_label, decision.used_background)
        await self._send(
            DecisionMessage(meeting_id=self.meeting_id, decision=decision, approval=approval, resumed=resumed)
        )
        if not resumed:
            await self._say(decision)  # and its voice, after the text (said once, not again on resume)
