"""A meeting's admission: where its bot stands with the meeting itself (joining, waiting to be admitted, in it,
removed, ended). The delegate says nothing before it is in; on entering it first says what it is."""

from __future__ import annotations

from delegate.disclosure import disclosure_for
from delegate.models import Decision
from delegate.server.protocol import ADMISSION_ORDER, AdmissionEvent, AdmissionState, DisclosureMessage
from delegate.server.session.core import MeetingCore
from delegate.server.session.outbox import Outbox
from delegate.server.session.voice_out import VoiceOut
from delegate.store import AuditKind

LEAVING: frozenset[str] = frozenset({"removed", "ended"})
"""States after which the delegate's meeting ends too."""


class AdmissionDesk:
    """The bot's admission state, its changes recorded and told; the gate on speech before the bot is in."""

    def __init__(self, core: MeetingCore, outbox: Outbox, voice: VoiceOut, initial: AdmissionState) -> None:
        self._core = core
        self._outbox = outbox
        self._voice = voice
        self.state: AdmissionState = initial
        self.disclosed = initial == "in_meeting"
        """A meeting that starts in the meeting has a client that discloses on its own (as before)."""
        self.followed = initial != "in_meeting"
        """Whether a service reports the bot's admission here (a meeting that started `joining`, or any change
        since): only then do watchers get it, so a meeting without it replays as it always did."""

    @property
    def admitted(self) -> bool:
        return self.state == "in_meeting"

    async def change(self, state: AdmissionState, detail: str = "") -> bool:
        """Move to `state` (recorded, published to watchers); False when it is no step forward (a service
        repeating itself, or a late event): nothing is recorded then."""
        if ADMISSION_ORDER[state] <= ADMISSION_ORDER[self.state]:
            return False
        previous, self.state = self.state, state
        self.followed = True
        await self._outbox.audit(AuditKind.admission, self._core.state.last_id, state=state, previous=previous, detail=detail)
        self._outbox.publish(AdmissionEvent(meeting_id=self._core.meeting_id, state=state, detail=detail))
        self._core.log.info("admission", state=state, previous=previous)
        if state == "in_meeting" and not self.disclosed:
            await self._disclose()
        return True

    async def expect_bot(self, detail: str) -> None:
        """The principal sent a bot (the server hosts it): back to `joining`, whatever an earlier bot reported, so
        that the delegate keeps silent until this one is in, and then says what it is."""
        if self.state == "joining":
            return
        previous, self.state = self.state, "joining"
        self.followed = True
        self.disclosed = False
        await self._outbox.audit(AuditKind.admission, self._core.state.last_id, state="joining", previous=previous, detail=detail)
        self._outbox.publish(AdmissionEvent(meeting_id=self._core.meeting_id, state="joining", detail=detail))
        self._core.log.info("admission", state="joining", previous=previous)

    async def _disclose(self) -> None:
        self.disclosed = True
        text = disclosure_for(self._core.principal, self._core.state.quotable())
        if text is None:
            await self._outbox.audit(AuditKind.disclosure, self._core.state.last_id, withheld=True)
            self._core.log.warning("disclosure_withheld")
            return
        await self._outbox.audit(AuditKind.disclosure, self._core.state.last_id, text=text)
        message = DisclosureMessage(meeting_id=self._core.meeting_id, text=text)
        self._outbox.publish(message)
        await self._outbox.send(message)
        await self._voice.announce(text)

    def gate(self, decision: Decision) -> Decision:
        """The decision as the bot may act on it: silent while the bot is not in the meeting."""
        if self.admitted or not decision.spoke:
            return decision
        return decision.model_copy(
            update={"speak": "", "reason": f"not in the meeting ({self.state}): {decision.reason}",
                    "used_background": [], "used_intents": [], "used_sources": []}
        )
