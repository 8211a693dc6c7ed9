"""The reply to a cue, by what the turn asks (`plan`): the answer from one item, or what a person says instead.

Thanks get nothing; a presence check "Yes, I'm here."; a private matter the line that declines it; a
request its acknowledgement (or the principal's note that they cannot); an invitation the one point that
fits, or "Nothing more from me."; a yes/no question its answer opened with yes or no. The holding line
only for a question the principal cannot answer now, and only when the turn is theirs (named or handed to
them); volunteered, the principal says nothing rather than a fixed line.
"""

from __future__ import annotations

from delegate.decide.answers import Answer, Lookup, settle
from delegate.decide.compose import HOLDING_LINES, PRIVATE_LINE, compose, holding_line
from delegate.decide.cues import Cue, current_talk
from delegate.decide.plan import Plan, TurnKind
from delegate.decide.replies import (
    NO_VIEW_LINE,
    NOTHING_MORE_LINE,
    PRESENT_LINE,
    acknowledgement,
    cannot,
    yes_or_no,
)
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario

_FACTS = (TurnKind.question, TurnKind.yes_no)
"""The kinds a holding line may answer: a question for a fact or a state."""


def respond(meeting: MeetingState, principal: Profile, cue: Cue, plan: Plan, lookup: Lookup | None) -> Answer:
    """The reply to the latest turn for `cue` (not `none`), planned as `plan`; an empty text is silence."""
    last = meeting.last
    assert last is not None
    named = cue.scenario is Scenario.explicit_cue
    theirs = named or cue.scenario is Scenario.implicit_cue
    kind = plan.kind
    if kind is TurnKind.thanks:
        return Answer("", why="thanks or an acknowledgement: nothing to say")
    if kind is TurnKind.presence:
        return Answer(PRESENT_LINE, why="a presence check") if theirs else Answer("", why="a presence check for someone else")
    if kind is TurnKind.sensitive:
        return Answer(PRIVATE_LINE, why="a private matter, declined") if theirs else Answer("", why="a private matter")
    if kind is TurnKind.request:
        if not theirs:
            return Answer("", why="a request to someone else")
        no = cannot(plan.asked, principal, meeting.names)
        if no is not None:
            return Answer(no[0], used_background=[no[1]], why="a request their notes say they cannot take on")
        return Answer(acknowledgement(plan.asked), why="a request: acknowledged, its action item proposed")
    talk = current_talk(meeting)
    if kind is TurnKind.invitation:
        # Invited, the principal may raise their own point, as when handed the floor.
        handed = Cue(Scenario.implicit_cue, cue.confidence, cue.reason, cue.floor) if theirs else cue
        words = compose(meeting, principal, handed, talk)
        if words.text:
            return Answer(words.text, words.used_background, words.used_intents, why="invited to add: the point that fits")
        return Answer(NOTHING_MORE_LINE if theirs else "", why="invited to add, and nothing fits")
    words = settle(meeting, principal, cue, compose(meeting, principal, cue, talk), talk, lookup)
    if words.text in HOLDING_LINES:
        if kind in _FACTS:
            return words
        words = Answer("", why=words.why)
    if words.text:
        if kind is TurnKind.yes_no:
            return Answer(yes_or_no(plan.asked, words.text), words.used_background, words.used_intents, words.used_sources, words.why)
        return words
    if kind in _FACTS and named:
        return Answer(holding_line(last.text), why="nothing in the profile answers it, so a holding line")
    if kind is TurnKind.opinion and named:
        return Answer(NO_VIEW_LINE, why="asked for a view, and the notes state none")
    return Answer("", why="nothing in the profile is worth saying")
