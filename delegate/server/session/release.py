"""The one path by which a recorded decision, and so any spoken text, reaches the bot: the decision frame,
then the voice. Used by the decisions (a decision not held) and the approval desk (a held one, once settled)."""

from __future__ import annotations

from delegate.models import Decision
from delegate.server.protocol import ApprovalStatus, DecisionMessage
from delegate.server.session.core import MeetingCore
from delegate.server.session.outbox import Outbox
from delegate.server.session.voice_out import VoiceOut


class Release:
    def __init__(self, core: MeetingCore, outbox: Outbox, voice: VoiceOut) -> None:
        self._core = core
        self._outbox = outbox
        self._voice = voice

    async def __call__(self, decision: Decision, approval: ApprovalStatus = "none", *, resumed: bool = False) -> None:
        """Tell the bot's client a recorded decision it may have.

        `approval`: `none` (not held), `approved`/`edited` (`speak` is the principal's final text), or
        `rejected`/`expired` (silence). A held speech comes here only once settled. `resumed`: sent again
        to a client that came back (said once already, or settled while it was away).
        """
        if decision.spoke and not resumed:
            # What the delegate said for the principal is not said again later in the meeting.
            self._core.state.note_spoken(self._core.principal.speaker_label, decision.used_background)
        await self._outbox.send(
            DecisionMessage(meeting_id=self._core.meeting_id, decision=decision, approval=approval, resumed=resumed)
        )
        if not resumed:
            await self._voice.say(decision)  # and its voice, after the text (said once, not again on resume)
