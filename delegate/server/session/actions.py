"""A meeting's action items: extracted after each utterance, refined off the path, guarded, recorded, sent
(with approval `all`, to the bot only once the principal approved them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from delegate.actions import Extractor, Refiner
from delegate.guard import guard_action
from delegate.meeting import LONG_TEXT_CHARS
from delegate.models import ProposedAction
from delegate.server.protocol import ErrorCode
from delegate.server.session.approval_desk import ApprovalDesk
from delegate.store import AuditKind


class ActionDesk(ApprovalDesk):
    """The action-item side of `MeetingSession`."""

    _extractor: Extractor | None
    _refining: set[asyncio.Task[None]]

    async def propose(self, actions: Iterable[ProposedAction]) -> None:
        """Record and send actions found outside the utterance path (e.g. by a slower extractor)."""
        async with self._inbound:
            for action in actions:
                await self._propose(action)

    async def _extract_actions(self, utterance_id: int) -> None:
        assert self._extractor is not None
        try:
            last = self.state.last
            if last is not None and len(last.text) > LONG_TEXT_CHARS:
                # A very long turn can take the extractor a noticeable time: off the loop, so other
                # meetings go on. The inbound lock is held, so the state does not change meanwhile.
                found = await asyncio.to_thread(self._extractor.observe, self.state)
            else:
                found = self._extractor.observe(self.state)
        except Exception:
            # Actions are a side line: a failing extractor must not cost the utterance, already acked.
            self._log.exception("actions_failed", utterance_id=utterance_id)
            self._metrics.error(ErrorCode.internal)
            return
        for action in found:
            await self._propose(action)
        if found and isinstance(self._extractor, Refiner):
            task = asyncio.create_task(
                self._refine_actions(self._extractor, utterance_id, found),
                name=f"refine-{self.meeting_id}-{utterance_id}",
            )
            self._refining.add(task)
            task.add_done_callback(self._refining.discard)

    async def _refine_actions(self, refiner: Refiner, utterance_id: int, found: list[ProposedAction]) -> None:
        """Send what the extractor's slower pass changed; the utterance and its decision never wait for it."""
        try:
            changed = await refiner.refine(self.state, found)
            async with self._inbound:
                if self.closed:
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
            self._log.exception("actions_refine_failed", utterance_id=utterance_id)
            self._metrics.error(ErrorCode.internal)

    async def _propose(self, action: ProposedAction, **extra: object) -> None:
        """Record and send a new action, or a new version of one proposed before."""
        blocked = guard_action(action, self.principal, self._public_texts())
        if blocked is not None:
            # Recorded without its words: the action itself stays back.
            self._log.warning("guard_blocked", action_id=action.id, blocked=[blocked.model_dump()])
            await self._audit(
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
        await self._audit(
            AuditKind.action,
            action.utterance_ids[-1] if action.utterance_ids else None,
            event=event,
            **extra,
            **action.model_dump(mode="json"),
        )
        self.actions[action.id] = action
        await self._tell_action(action)
