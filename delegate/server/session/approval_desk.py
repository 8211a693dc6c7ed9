"""A meeting's approval desk: speech held for the principal, its timer, and the principal's verdicts.

The rules (what is held, what the bot may have) are in `approval`; here they meet the session: each
change is recorded, published to the watchers, and whatever the bot may now have goes out through
the release (speech). Action items held with `all` are the action desk's.
"""

from __future__ import annotations

import asyncio
import time

from delegate.models import Decision
from delegate.server.approval import HeldSpeech, check_edit, expire, for_bot, holds_speech, resolve
from delegate.server.protocol import Ack, Approval, ErrorCode, ProtocolError
from delegate.server.session.core import MeetingCore
from delegate.server.session.outbox import Outbox
from delegate.server.session.release import Release
from delegate.server.watch import speech_event
from delegate.store import AuditKind


class ApprovalDesk:
    """Speech held for the principal's verdict, by utterance id, and the timer of the pending one."""

    def __init__(
        self,
        core: MeetingCore,
        outbox: Outbox,
        approval: Approval,
        timeout_s: float,
        decisions: list[Decision],
        release: Release,
    ) -> None:
        self._core = core
        self._outbox = outbox
        self.approval = approval
        self._timeout_s = timeout_s
        self._decisions = decisions
        self._release = release
        self.speech: dict[int, HeldSpeech] = {}
        self._timer: asyncio.Task[None] | None = None

    # --- holding ------------------------------------------------------------------------------------

    def holds(self, decision: Decision) -> bool:
        return decision.spoke and holds_speech(self.approval)

    def expiry(self) -> float:
        """When a speech held now expires (wall-clock seconds)."""
        return time.time() + self._timeout_s

    def hold(self, decision: Decision, expires_at: float) -> HeldSpeech:
        """Keep a recorded speech back for the principal, until their verdict, a newer utterance or the timeout."""
        held = HeldSpeech(
            utterance_id=decision.utterance_id,
            proposed=decision.speak,
            expires_at=expires_at,
        )
        self.speech[held.utterance_id] = held
        self._outbox.publish(speech_event(self._core.meeting_id, held))
        self.cancel_timer()
        self._timer = asyncio.create_task(
            self._expire_later(held.utterance_id), name=f"approval-{self._core.meeting_id}-{held.utterance_id}"
        )
        self._core.log.info("speech_held", utterance_id=held.utterance_id)
        return held

    async def _expire_later(self, utterance_id: int) -> None:
        held = self.speech[utterance_id]
        await asyncio.sleep(max(0.0, held.expires_at - time.time()))
        async with self._core.inbound:
            held = self.speech.get(utterance_id)
            if held is not None and held.pending and not self._core.closed:
                self._timer = None  # this task: not to be cancelled by the settling below
                await self._settle_speech(expire(held, "timeout"))

    def cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    async def expire_all(self, reason: str) -> None:
        """The conversation moved on (or the meeting ends): a pending speech will never be said."""
        for held in [h for h in self.speech.values() if h.pending]:
            await self._settle_speech(expire(held, reason))

    async def _settle_speech(self, settled: HeldSpeech, **extra: object) -> None:
        """Record a held speech's outcome, show it to the watchers, and tell the bot what it may now have."""
        self.cancel_timer()
        await self._outbox.audit(
            AuditKind.speech_resolved,
            settled.utterance_id,
            status=settled.status,
            text=settled.shown,
            reason=settled.reason,
            **extra,
        )
        self.speech[settled.utterance_id] = settled
        self._outbox.publish(speech_event(self._core.meeting_id, settled))
        self._core.log.info("speech_resolved", utterance_id=settled.utterance_id, status=settled.status, reason=settled.reason)
        decision = self._decision_on(settled.utterance_id)
        view = for_bot(decision, settled) if decision is not None else None
        if view is not None:
            await self._release(*view)

    def _decision_on(self, utterance_id: int) -> Decision | None:
        return next((d for d in reversed(self._decisions) if d.utterance_id == utterance_id), None)

    # --- the principal's verdicts -------------------------------------------------------------------

    async def resolve_speech(
        self, utterance_id: int, verdict: str, text: str | None = None, comment: str = "", *, ack: bool = False
    ) -> HeldSpeech:
        """Approve (with `text`: edit) or reject a held speech; `ack` answers a `feedback` frame first.

        Raises ProtocolError: `not_found` (never held), `not_pending` (settled already), `private_text`
        (the edit gives a private item away; it stays pending).
        """
        async with self._core.inbound:
            self._core.still_open()
            held = self.speech.get(utterance_id)
            if held is None:
                raise ProtocolError(
                    ErrorCode.not_found, f"No speech held for approval on utterance {utterance_id}.", utterance_id
                )
            if text is not None and held.pending:
                try:
                    check_edit(text, utterance_id, self._core.principal, self._core.state.quotable())
                except ProtocolError as refused:
                    await self._outbox.audit(AuditKind.edit_refused, utterance_id, detail=refused.detail, comment=comment)
                    raise
            settled = resolve(held, verdict, text)
            if ack:
                await self._outbox.send(Ack(of="feedback", meeting_id=self._core.meeting_id, utterance_id=utterance_id))
            await self._settle_speech(settled, verdict=verdict, comment=comment)
        return settled
