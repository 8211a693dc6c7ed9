"""Approval: what a meeting holds for its principal (speech, and with `all` action items) and what the bot may have.

Pure rules, no I/O: the session keeps the held speeches, records each change, and sends what these rules
allow. A held speech is `pending` until the principal approves it (`approved`, or `edited` with their own
text), rejects it, or the floor moves on (`expired`); only approved or edited text reaches the bot.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from delegate import guard
from delegate.meeting import is_backchannel
from delegate.models import UNKNOWN_SPEAKER, Decision, Profile, ProposedAction, Utterance
from delegate.server.protocol import Approval, ApprovalStatus, ErrorCode, ProtocolError, SpeechStatus

EXPIRY_REASONS = (
    "floor_moved", "principal_spoke", "superseded", "timeout", "taken_over", "meeting_ended",
    "newer_utterance",  # before issue 27.7 any newer utterance expired a held speech: still in older logs
)


class HeldSpeech(BaseModel):
    """One speech held for the principal: what the delegate proposed, and where it stands."""

    model_config = ConfigDict(frozen=True)

    utterance_id: int
    proposed: str
    expires_at: float
    """Epoch seconds."""
    status: SpeechStatus = "pending"
    text: str = ""
    """Approved or edited: the text the bot was sent; otherwise the proposed text."""
    reason: str | None = None
    """Why it expired (one of `EXPIRY_REASONS`)."""

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @property
    def shown(self) -> str:
        return self.text or self.proposed


def holds_speech(approval: Approval) -> bool:
    return approval != "none"


def holds_actions(approval: Approval) -> bool:
    return approval == "all"


def bot_may_see(action: ProposedAction, approval: Approval) -> bool:
    """With `all`, the bot hears of an action only once the principal approved it."""
    return not holds_actions(approval) or action.status == "approved"


_WITHHELD_REASON: dict[SpeechStatus, str] = {
    "rejected": "stays silent: the principal rejected the speech",
    "expired": "stays silent: the speech was not approved in time",
}


def for_bot(decision: Decision, held: HeldSpeech | None) -> tuple[Decision, ApprovalStatus] | None:
    """The decision as the bot's client may have it, and its approval; None while its speech is pending.

    Rejected or expired speech goes out as silence: the bot gets one decision per utterance either way,
    and never the words the principal did not approve.
    """
    if held is None:
        return decision, "none"
    match held.status:
        case "pending":
            return None
        case "approved" | "edited":
            return decision.model_copy(update={"speak": held.text}), held.status
        case status:
            silent = {"speak": "", "used_background": [], "used_intents": [], "used_sources": [], "reason": _WITHHELD_REASON[status]}
            return decision.model_copy(update=silent), status


def floor_moved(cued_by: Utterance, newer: Utterance, principal: Profile) -> str | None:
    """Why `newer` ends a speech held on `cued_by` (an expiry reason), or None while the floor is still the principal's.

    In a live meeting the next utterance comes within a second, long before the principal can decide: a
    backchannel ("Mm-hmm.", "Okay.") or the asker going on ("I mean for the Berlin site.") leaves the
    question with the principal. Another speaker's substantive turn takes the floor, and the principal
    speaking answers for themselves.
    """
    if principal.is_speaker(newer.speaker):
        return "principal_spoke"
    if is_backchannel(newer.text):
        return None
    # Unlabelled speech may be anyone's: it cannot be told to be the asker's.
    if newer.speaker == cued_by.speaker and newer.speaker != UNKNOWN_SPEAKER:
        return None
    return "floor_moved"


def approval_of(held: HeldSpeech | None) -> ApprovalStatus:
    return "none" if held is None else held.status


def resolve(held: HeldSpeech, verdict: str, text: str | None = None) -> HeldSpeech:
    """The principal's verdict on a pending speech; ProtocolError(not_pending) when it is settled already.

    An edit must have passed `check_edit` first.
    """
    if not held.pending:
        raise ProtocolError(
            ErrorCode.not_pending,
            f"The speech on utterance {held.utterance_id} is no longer pending: it was {held.status}.",
            utterance_id=held.utterance_id,
        )
    if verdict == "reject":
        return held.model_copy(update={"status": "rejected", "text": held.proposed})
    if text is not None and text.strip() != held.proposed.strip():
        return held.model_copy(update={"status": "edited", "text": text.strip()})
    return held.model_copy(update={"status": "approved", "text": held.proposed})


def expire(held: HeldSpeech, reason: str) -> HeldSpeech:
    return held.model_copy(update={"status": "expired", "text": held.proposed, "reason": reason})


def check_edit(text: str, utterance_id: int, principal: Profile, public_texts: Sequence[str]) -> None:
    """An edit is outbound text like any other: the privacy guard must let it leave."""
    verdict = guard.check(text, principal, public_texts)
    if not verdict.allowed:
        raise ProtocolError(
            ErrorCode.private_text,
            f"The edited text gives away background item {verdict.item}, which is marked private "
            f"(rule {verdict.rule}); nothing was sent and the speech is still pending: edit it again or reject it.",
            utterance_id=utterance_id,
        )
