"""A meeting's approval desk: speech held for the principal, its timer, and the principal's verdicts.

The rules (what is held, what the bot may have) are in `approval`; here they meet the session: each
change is recorded, published to the watchers, and whatever the bot may now have goes out through
the release (speech). Action items held with `all` are the action desk's.
"""

from __future__ import annotations

import asyncio
import time

from delegate.models import Decision, Utterance
from delegate.server.approval import (
    HeldSpeech,
    check_edit,
    expire,
    floor_moved,
    for_bot,
    holds_speech,
    resolve,
)
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
        """Keep a recorded speech back for the principal, until their verdict, the floor moving on or the timeout.

        An older speech still pending must have been settled first (`supersede`): one is held at a time.
        """
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
        """The meeting ends or another process has it: a pending speech will never be said."""
        for held in [h for h in self.speech.values() if h.pending]:
            await self._settle_speech(expire(held, reason))

    async def supersede(self) -> None:
        """The delegate would now say something newer: what it held before will not be said."""
        await self.expire_all("superseded")

    async def floor_check(self, newer: Utterance) -> None:
        """Expire a pending speech that `newer` takes the floor from; keep it through backchannels and the
        asker's own follow-up, so that the principal has time to decide."""
        for held in [h for h in self.speech.values() if h.pending]:
            cued_by = self._utterance(held.utterance_id)
            reason = "floor_moved" if cued_by is None else floor_moved(cued_by, newer, self._core.principal)
            if reason is not None:
                await self._settle_speech(expire(held, reason))

    def _utterance(self, utterance_id: int) -> Utterance | None:
        return next((u for u in reversed(self._core.state.utterances) if u.id == utterance_id), None)

    def still_held(self) -> HeldSpeech | None:
        """The latest held speech if no utterance since took the floor from it (settled or not): a client
        that comes back may have missed its frame, sent after newer silent decisions."""
        held = max(self.speech.values(), key=lambda h: h.utterance_id, default=None)
        cued_by = self._utterance(held.utterance_id) if held is not None else None
        if held is None or cued_by is None:
            return None
        for newer in reversed(self._core.state.utterances):
            if newer.id <= held.utterance_id:
                return held
            if floor_moved(cued_by, newer, self._core.principal) is not None:
                return None
        return held

    def _claim(self, settled: HeldSpeech) -> bool:
        """Settle a speech in memory, with no await before: a verdict, the timer and a newer speech may race
        for the same pending speech, and only the first settles it."""
        current = self.speech.get(settled.utterance_id)
        if current is None or not current.pending:
            return False
        self.speech[settled.utterance_id] = settled
        return True

    async def _settle_speech(self, settled: HeldSpeech, **extra: object) -> None:
        """Settle a pending speech (unless something else settled it first), then `_tell_settled`."""
        if self._claim(settled):
            await self._tell_settled(settled, **extra)

    async def _tell_settled(self, settled: HeldSpeech, **extra: object) -> None:
        """Record a claimed speech's outcome, show it to the watchers, and tell the bot what it may now have."""
        self.cancel_timer()
        await self._outbox.audit(
            AuditKind.speech_resolved,
            settled.utterance_id,
            status=settled.status,
            text=settled.shown,
            reason=settled.reason,
            **extra,
        )
        self._outbox.publish(speech_event(self._core.meeting_id, settled))
        self._core.log.info("speech_resolved", utterance_id=settled.utterance_id, status=settled.status, reason=settled.reason)
        decision = self.decision_on(settled.utterance_id)
        view = for_bot(decision, settled) if decision is not None else None
        if view is not None:
            await self._release(*view)

    def decision_on(self, utterance_id: int) -> Decision | None:
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
                    await self._outbox.audit(
                        AuditKind.edit_refused, utterance_id, detail=refused.detail, comment=self._core.redact(comment)
                    )
                    raise
            settled = resolve(held, verdict, text)
            if not self._claim(settled):  # settled since it was read: `resolve` says how (not_pending)
                resolve(self.speech[utterance_id], verdict, text)
            if ack:
                await self._outbox.send(Ack(of="feedback", meeting_id=self._core.meeting_id, utterance_id=utterance_id))
            await self._tell_settled(settled, verdict=verdict, comment=self._core.redact(comment))
        return settled
