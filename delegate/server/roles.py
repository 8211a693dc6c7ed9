"""What each credential may do: the principal everything with their meetings; the meeting's bot only what a
participant relaying the delegate needs.

The bot streams its one meeting (utterances, audio, resume, leave), receives the delegate's decisions, speech
and action items as the bot may have them (after approval), and asks with the meeting as the audience. It never
reads the principal's private notes back, never watches the principal's console view (held speech before
approval), never downloads the audit, never approves, rejects or edits, and never names a profile on `join`
(which would test guesses of the private notes against the meeting's). Pure rules, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from delegate.ask.base import Audience
from delegate.models import Decision, ProposedAction
from delegate.server.approval import HeldSpeech, bot_may_see, for_bot
from delegate.server.auth import Credential
from delegate.server.protocol import Approval, Ask, ClientMessage, ErrorCode, Feedback, Join, ProtocolError


def forbidden(what: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.forbidden,
        f"{what} takes the principal's credential; this is the meeting bot's token (it streams the meeting "
        "and asks for the meeting's ears only).",
    )


def require_principal(credential: Credential, what: str) -> None:
    if not credential.is_principal:
        raise forbidden(what)


def check_meeting(credential: Credential, meeting_id: str) -> None:
    """A bot token reaches its own meeting only."""
    if credential.meeting_id is not None and credential.meeting_id != meeting_id:
        raise ProtocolError(ErrorCode.forbidden, "This bot token is for another meeting (the principal's token reaches all of theirs).")


def check_ask(credential: Credential, audience: Audience) -> None:
    if audience == "principal":
        require_principal(credential, 'Asking with `audience: "principal"` (the private notes)')


def check_message(credential: Credential, message: ClientMessage) -> None:
    """A stream frame the credential may not send raises `forbidden`; the connection and the meeting go on."""
    if credential.is_principal:
        return
    match message:
        case Join(principal=profile) if profile is not None:
            raise forbidden("Starting a meeting or naming its principal on `join`")
        case Feedback():
            raise forbidden("Approving, rejecting or editing")
        case Ask():
            check_ask(credential, message.audience)


def decisions_for(
    credential: Credential, decisions: Iterable[Decision], speech: Mapping[int, HeldSpeech]
) -> list[Decision]:
    """The decisions as the caller may read them: the bot's as it was sent them (a held speech only once settled,
    as approved or edited, else silence)."""
    if credential.is_principal:
        return list(decisions)
    return [view[0] for d in decisions if (view := for_bot(d, speech.get(d.utterance_id))) is not None]


def actions_for(
    credential: Credential, actions: Iterable[ProposedAction], approval: Approval
) -> list[ProposedAction]:
    """The action items as the caller may read them: the bot's only once it may have them."""
    return [a for a in actions if credential.is_principal or bot_may_see(a, approval)]
