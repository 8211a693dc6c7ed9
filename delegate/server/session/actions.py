"""A meeting's action items: extracted after each utterance, a beat later and off its path (`Later`), refined
later still, guarded, recorded, sent (with approval `all`, to the bot only once the principal approved them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from delegate.actions import Extractor, Refiner
from delegate.guard import guard_action
from delegate.meeting import LONG_TEXT_CHARS
from delegate.models import ProposedAction
from delegate.server.approval import bot_may_see
from delegate.server.metrics import Metrics
from delegate.server.protocol import Ack, ActionMessage, Approval, ErrorCode, ProtocolError
from delegate.server.session.core import MeetingCore
from delegate.server.session.later import Later
from delegate.server.session.outbox import Outbox
from delegate.store import AuditKind


class ActionDesk:
    """A meeting's action items, by id, as last proposed or resolved."""

    def __init__(
        self,
        core: MeetingCore,
        outbox: Outbox,
        extractor: Extractor | None,
        approval: Approval,
        metrics: Metrics,
        later: Later | None = None,
    ) -> None:
        self._core = core
        self._later = later or Later()
        self._due: int | None = None
        """The utterance whose actions are still to be extracted: always the meeting's latest."""
        self._outbox = outbox
        self._extractor = extractor
        self._approval = approval
        self._metrics = metrics
        self.actions: dict[str, ProposedAction] = {}
        self._refining: set[asyncio.Task[None]] = set()

    @property
    def refining(self) -> bool:
        """A slower pass over some utterance's actions is under way."""
        return any(not t.done() for t in self._refining)

    async def propose(self, actions: Iterable[ProposedAction]) -> None:
        """Record and send actions found outside the utterance path (e.g. by a slower extractor)."""
        async with self._core.inbound:
            for action in actions:
                await self._propose(action)

    def extract_later(self, utterance_id: int) -> None:
        """Extract the actions of `utterance_id`, the meeting's latest, a beat later (or when the next
        utterance comes, or the meeting ends: whichever is first)."""
        if self._extractor is None:
            return
        self._due = utterance_id
        self._later.add(self)

    @property
    def due(self) -> bool:
        """An utterance's actions are still to be extracted, or being recorded."""
        return self._due is not None

    @property
    def busy(self) -> bool:
        return self._core.inbound.locked()

    async def run_due(self) -> None:
        async with self._core.inbound:
            await self.flush()

    async def flush(self) -> None:
        """Extract what is due now; the caller holds the inbound lock, and the utterance is still the latest."""
        utterance_id = self._due
        if utterance_id is None:
            return
        try:
            if not self._core.closed:
                await self.extract(utterance_id)
        finally:
            self._due = None  # only now: until its actions are recorded and sent, they are still due

    async def extract(self, utterance_id: int) -> None:
        assert self._extractor is not None
        try:
            last = self._core.state.last
            if last is not None and len(last.text) > LONG_TEXT_CHARS:
                # A very long turn can take the extractor a noticeable time: off the loop, so other
                # meetings go on. The inbound lock is held, so the state does not change meanwhile.
                found = await asyncio.to_thread(self._extractor.observe, self._core.state)
            else:
                found = self._extractor.observe(self._core.state)
        except Exception:
            # Actions are a side line: a failing extractor must not cost the utterance, already acked.
            self._core.log.exception("actions_failed", utterance_id=utterance_id)
            self._metrics.error(ErrorCode.internal)
            return
        for action in found:
            await self._propose(action)
        if found and isinstance(self._extractor, Refiner):
            task = asyncio.create_task(
                self._refine_actions(self._extractor, utterance_id, found),
                name=f"refine-{self._core.meeting_id}-{utterance_id}",
            )
            self._refining.add(task)
            task.add_done_callback(self._refining.discard)

    async def _refine_actions(self, refiner: Refiner, utterance_id: int, found: list[ProposedAction]) -> None:
        """Send what the extractor's slower pass changed; the utterance and its decision never wait for it."""
        try:
            changed = await refiner.refine(self._core.state, found)
            async with self._core.inbound:
                if self._core.closed:
                    return
                latest = {a.id: a for a in refiner.actions}
                for action in changed:
                    # A newer utterance may have changed it again meanwhile; that version went out already.
                    current = latest.get(action.id, action)
                    if current != self.actions.get(current.id):
                        await self._propose(current, source="refiner")
        except asyncio.CancelledError:
            raise
        except Exception:
            self._core.log.exception("actions_refine_failed", utterance_id=utterance_id)
            self._metrics.error(ErrorCode.internal)

    async def _propose(self, action: ProposedAction, **extra: object) -> None:
        """Record and send a new action, or a new version of one proposed before."""
        blocked = guard_action(action, self._core.principal, self._core.state.quotable())
        if blocked is not None:
            # Recorded without its words: the action itself stays back.
            self._core.log.warning("guard_blocked", action_id=action.id, blocked=[blocked.model_dump()])
            await self._outbox.audit(
                AuditKind.action,
                action.utterance_ids[-1] if action.utterance_ids else None,
                event="withheld",
                id=action.id,
                guard_blocked=[blocked.model_dump()],
            )
            return
        known = self.actions.get(action.id)
        if known is None:
            event = "proposed"
        elif action.status != known.status:
            event = action.status
        else:
            event = "updated"
        await self._outbox.audit(
            AuditKind.action,
            action.utterance_ids[-1] if action.utterance_ids else None,
            event=event,
            **extra,
            **action.model_dump(mode="json"),
        )
        self.actions[action.id] = action
        await self._tell(action)

    async def resolve_action(
        self, action_id: str, verdict: str, comment: str = "", *, ack: bool = False
    ) -> ProposedAction:
        """Approve or reject a proposed action; `ack` answers a `feedback` frame before the action goes out."""
        async with self._core.inbound:
            self._core.still_open()
            action = self.actions.get(action_id)
            if action is None:
                raise ProtocolError(ErrorCode.not_found, f"No action {action_id!r} in this meeting.")
            approve = verdict == "approve"
            extractor = self._extractor
            updated = (
                extractor.apply_feedback(action.id, approve)
                if extractor is not None
                else action.model_copy(update={"status": "approved" if approve else "rejected"})
            )
            await self._outbox.audit(
                AuditKind.feedback,
                action.utterance_ids[-1] if action.utterance_ids else None,
                action_id=action.id,
                verdict=verdict,
                status=updated.status,
                comment=self._core.redact(comment),
            )
            self.actions[action.id] = updated
            if ack:
                await self._outbox.send(Ack(of="feedback", meeting_id=self._core.meeting_id, action_id=action.id))
            await self._tell(updated)
        return updated

    async def _tell(self, action: ProposedAction) -> None:
        """Show an action to the watchers, and to the bot if it may have it (with `all`: once approved)."""
        message = ActionMessage(meeting_id=self._core.meeting_id, action=action)
        self._outbox.publish(message)
        if bot_may_see(action, self._approval):
            await self._outbox.send(message)

    def cancel_refining(self) -> list[asyncio.Task[None]]:
        """Stop the slower passes under way; returns them, to be awaited by whoever lets the meeting go."""
        tasks = [t for t in self._refining if not t.done()]
        for task in tasks:
            task.cancel()
        return tasks
