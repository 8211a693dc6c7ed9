"""A meeting's approval desk: speech held for the principal, its timer, the principal's verdicts, and the watchers.

The rules (what is held, what the bot may have) are in `approval`; here they meet the session: each
change is recorded, published to the watchers, and whatever the bot may now have goes out through
`_release` (speech) or `_tell_action` (action items).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from delegate.models import Decision, ProposedAction, Utterance
from delegate.server.approval import (
    HeldSpeech,
    bot_may_see,
    check_edit,
    expire,
    floor_moved,
    for_bot,
    holds_speech,
    resolve,
)
from delegate.server.protocol import (
    Ack,
    ActionMessage,
    Approval,
    ErrorCode,
    ProtocolError,
    WatchEvent,
)
from delegate.server.session_base import SessionBase
from delegate.server.watch import Watcher, Watchers, replay, speech_event
from delegate.store import AuditKind


class ApprovalDesk(SessionBase):
    """The approval side of `MeetingSession` (and its watchers, who see everything held or not)."""

    approval: Approval
    speech: dict[int, HeldSpeech]
    watchers: Watchers
    _approval_timeout_s: float
    _speech_timer: asyncio.Task[None] | None
    _ended_reason: str | None
    _inbound: asyncio.Lock

    # Implemented by the other sides of the session (Decisions, MeetingSession): declared, not defined,
    # so that the mixin order cannot let a stub shadow them.
    _release: Callable[..., Awaitable[None]]
    _still_open: Callable[[], None]

    # --- watching -----------------------------------------------------------------------------------

    def watch(self) -> Watcher:
        """A new watcher: the meeting so far, then live. Built and subscribed with no await in between."""
        return self.watchers.subscribe(
            replay(
                self.meeting_id, self.state.utterances, self.decisions, self.speech, self.actions.values(),
                ended=self._ended_reason,
            )
        )

    def _publish(self, event: WatchEvent) -> None:
        self.watchers.publish(event)

    # --- holding ------------------------------------------------------------------------------------

    def _holds(self, decision: Decision) -> bool:
        return decision.spoke and holds_speech(self.approval)

    def _hold(self, decision: Decision, expires_at: float) -> HeldSpeech:
        """Keep a recorded speech back for the principal, until their verdict, the floor moving on or the timeout.

        An older speech still pending must have been settled first (`_supersede`): one is held at a time.
        """
        held = HeldSpeech(
            utterance_id=decision.utterance_id,
            proposed=decision.speak,
            expires_at=expires_at,
        )
        self.speech[held.utterance_id] = held
        self._publish(speech_event(self.meeting_id, held))
        self._cancel_timer()
        self._speech_timer = asyncio.create_task(
            self._expire_later(held.utterance_id), name=f"approval-{self.meeting_id}-{held.utterance_id}"
        )
        self._log.info("speech_held", utterance_id=held.utterance_id)
        return held

    async def _expire_later(self, utterance_id: int) -> None:
        held = self.speech[utterance_id]
        await asyncio.sleep(max(0.0, held.expires_at - time.time()))
        async with self._inbound:
            held = self.speech.get(utterance_id)
            if held is not None and held.pending and not self.closed:
                self._speech_timer = None  # this task: not to be cancelled by the settling below
                await self._settle_speech(expire(held, "timeout"))

    def _cancel_timer(self) -> None:
        timer, self._speech_timer = self._speech_timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()

    async def _expire_speech(self, reason: str) -> None:
        """The meeting ends or another process has it: a pending speech will never be said."""
        for held in [h for h in self.speech.values() if h.pending]:
            await self._settle_speech(expire(held, reason))

    async def _supersede(self) -> None:
        """The delegate would now say something newer: what it held before will not be said."""
        await self._expire_speech("superseded")

    async def _floor_check(self, newer: Utterance) -> None:
        """Expire a pending speech that `newer` takes the floor from; keep it through backchannels and the
        asker's own follow-up, so that the principal has time to decide."""
        for held in [h for h in self.speech.values() if h.pending]:
            cued_by = self._utterance(held.utterance_id)
            reason = "floor_moved" if cued_by is None else floor_moved(cued_by, newer, self.principal)
            if reason is not None:
                await self._settle_speech(expire(held, reason))

    def _utterance(self, utterance_id: int) -> Utterance | None:
        return next((u for u in reversed(self.state.utterances) if u.id == utterance_id), None)

    def _still_held(self) -> HeldSpeech | None:
        """The latest held speech if no utterance since took the floor from it (settled or not): a client
        that comes back may have missed its frame, sent after newer silent decisions."""
        held = max(self.speech.values(), key=lambda h: h.utterance_id, default=None)
        cued_by = self._utterance(held.utterance_id) if held is not None else None
        if held is None or cued_by is None:
            return None
        for newer in reversed(self.state.utterances):
            if newer.id <= held.utterance_id:
                return held
            if floor_moved(cued_by, newer, self.principal) is not None:
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
        self._cancel_timer()
        await self._audit(
            AuditKind.speech_resolved,
            settled.utterance_id,
            status=settled.status,
            text=settled.shown,
            reason=settled.reason,
            **extra,
        )
        self._publish(speech_event(self.meeting_id, settled))
        self._log.info("speech_resolved", utterance_id=settled.utterance_id, status=settled.status, reason=settled.reason)
        decision = self._decision_on(settled.utterance_id)
        view = for_bot(decision, settled) if decision is not None else None
        if view is not None:
            await self._release(*view)

    def _decision_on(self, utterance_id: int) -> Decision | None:
        return next((d for d in reversed(self.decisions) if d.utterance_id == utterance_id), None)

    # --- the principal's verdicts -------------------------------------------------------------------

    async def resolve_speech(
        self, utterance_id: int, verdict: str, text: str | None = None, comment: str = "", *, ack: bool = False
    ) -> HeldSpeech:
        """Approve (with `text`: edit) or reject a held speech; `ack` answers a `feedback` frame first.

        Raises ProtocolError: `not_found` (never held), `not_pending` (settled already), `private_text`
        (the edit gives a private item away; it stays pending).
        """
        async with self._inbound:
            self._still_open()
            held = self.speech.get(utterance_id)
            if held is None:
                raise ProtocolError(
                    ErrorCode.not_found, f"No speech held for approval on utterance {utterance_id}.", utterance_id
                )
            if text is not None and held.pending:
                try:
                    check_edit(text, utterance_id, self.principal, self._public_texts())
                except ProtocolError as refused:
                    await self._audit(AuditKind.edit_refused, utterance_id, detail=refused.detail, comment=comment)
                    raise
            settled = resolve(held, verdict, text)
            if not self._claim(settled):  # settled since it was read: `resolve` says how (not_pending)
                resolve(self.speech[utterance_id], verdict, text)
            if ack:
                await self._send(Ack(of="feedback", meeting_id=self.meeting_id, utterance_id=utterance_id))
            await self._tell_settled(settled, verdict=verdict, comment=comment)
        return settled

    async def resolve_action(
        self, action_id: str, verdict: str, comment: str = "", *, ack: bool = False
    ) -> ProposedAction:
        """Approve or reject a proposed action; `ack` answers a `feedback` frame before the action goes out."""
        async with self._inbound:
            self._still_open()
            action = self.actions.get(action_id)
            if action is None:
                raise ProtocolError(ErrorCode.not_found, f"No action {action_id!r} in this meeting.")
            approve = verdict == "approve"
            extractor = getattr(self, "_extractor", None)
            updated = (
                extractor.apply_feedback(action.id, approve)
                if extractor is not None
                else action.model_copy(update={"status": "approved" if approve else "rejected"})
            )
            await self._audit(
                AuditKind.feedback,
                action.utterance_ids[-1] if action.utterance_ids else None,
                action_id=action.id,
                verdict=verdict,
                status=updated.status,
                comment=comment,
            )
            self.actions[action.id] = updated
            if ack:
                await self._send(Ack(of="feedback", meeting_id=self.meeting_id, action_id=action.id))
            await self._tell_action(updated)
        return updated

    async def _tell_action(self, action: ProposedAction) -> None:
        """Show an action to the watchers, and to the bot if it may have it (with `all`: once approved)."""
        message = ActionMessage(meeting_id=self.meeting_id, action=action)
        self._publish(message)
        if bot_may_see(action, self.approval):
            await self._send(message)
