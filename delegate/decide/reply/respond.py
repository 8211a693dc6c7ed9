"""The reply to a cue, by what the turn asks (`plan`): the answer from one item, or what a person says instead.

Thanks get nothing; a presence check "Yes, I'm here."; a private matter the line that declines it; a
request its acknowledgement (or the principal's note that they cannot); an invitation the one point that
fits, or "Nothing more from me."; a yes/no question its answer opened with yes or no. The holding line
only for a question the principal cannot answer now, and only when the turn is theirs (named or handed to
them); volunteered, the principal says nothing rather than a fixed line.

The fixed lines live here, with a request's acknowledgement in the request's own words ("Sure, I'll send the
release notes to Lena today."), the principal's note that they cannot do it, and a yes/no answer that starts
with yes or no and the state the question names ("Yes, that's fixed.").
"""

from __future__ import annotations

import re

from delegate.decide.cues import Cue, current_talk
from delegate.decide.relevance import rank_background
from delegate.decide.reply.answers import Answer, Lookup, settle
from delegate.decide.reply.compose import HOLDING_LINES, PRIVATE_LINE, compose, holding_line
from delegate.decide.reply.plan import Plan, TurnKind
from delegate.decide.reply.selector import AnswerSelector
from delegate.decide.reply.spoken import lower_first, spoken, unmask
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario

PRESENT_LINE = "Yes, I'm here."
NOTHING_MORE_LINE = "Nothing more from me."
NO_VIEW_LINE = "I don't have a strong view on that."
ACK_LINE = "Sure, I'll do that."

MAX_ACK_WORDS = 14
"""Longer, the request's words are not repeated back: "Sure, I'll do that."."""
CANT_FIT = 0.25
"""Relevance from which a note of the principal's that they cannot do something is about this request."""

_ASK = re.compile(
    r"\b(?:can|could|would|will)\s+you\s+(?:please\s+|maybe\s+|also\s+|quickly\s+|just\s+|then\s+)*(?P<rest>[^?.!]+)|"
    r"\b(?:would\s+you\s+mind|can\s+i\s+ask\s+you\s+to|i(?:'d|\s+would)\s+like\s+you\s+to|i\s+need\s+you\s+to|please)\s+(?P<rest2>[^?.!]+)",
    re.I,
)
_CUT = re.compile(r"\s*(?:,|;|—|–|\s-\s|\bbecause\b|\bso\s+that\b|\bsince\b|\bbefore\s+we\b|\bif\s+you\b|\bor\s+should\b).*$", re.I)
_SWAP = {
    "your": "my", "yours": "mine", "yourself": "myself", "me": "you", "my": "your", "mine": "yours", "i": "you", "us": "you all",
}
_PRONOUN = re.compile(r"\b(?:your|yours|yourself|me|my|mine|i|us)\b", re.I)
_YOU_OBJECT = re.compile(r"\b(for|to|with|by|from|about)\s+you\b", re.I)
_YOU_DOES = re.compile(r"\byou(?=\s+(?:can|could|will|would|have|are|need|should|get|do)\b)", re.I)
_SUBJECT_MARK, _OBJECT_MARK = "\x00S\x00", "\x00O\x00"
_STUTTER = re.compile(r"\b(\w+)(?:\s+\1\b)+", re.I)
"""A word said twice over in speech ("that we we do it")."""
_CANT = re.compile(r"\b(?:can't|cannot|can\s+not|won't\s+be\s+able|unable\s+to|not\s+able\s+to|no\s+capacity|don't\s+have\s+(?:the\s+)?(?:time|capacity|access))\b", re.I)


def acknowledgement(request: str) -> str:
    """ "Sure, I'll <what was asked>." in the request's words, the pronouns turned round."""
    m = _ASK.search(request)
    rest = (m.group("rest") or m.group("rest2")) if m else ""
    rest = _CUT.sub("", rest or "").strip()
    if m and m.group(0).lower().startswith("would you mind"):
        rest = ""  # "would you mind sending …": the -ing form does not follow "I'll"
    words = rest.split()
    if not words or len(words) > MAX_ACK_WORDS:
        return ACK_LINE
    rest = _STUTTER.sub(r"\1", re.sub(r"\bplease\s+", "", rest, flags=re.I))
    # The principal's "you" said back: "that you can clone it" -> "that I can clone it", "for you" -> "for me".
    # Marked first, so that the swap of the asker's own "me" and "I" leaves them be.
    rest = _YOU_DOES.sub(_SUBJECT_MARK, _YOU_OBJECT.sub(lambda m: f"{m.group(1)} {_OBJECT_MARK}", rest)).replace("you're", f"{_SUBJECT_MARK}'m")
    said = _PRONOUN.sub(lambda w: _SWAP[w.group(0).lower()], rest).replace(_OBJECT_MARK, "me").replace(_SUBJECT_MARK, "I")
    return f"Sure, I'll {said.rstrip(' ,')}."


def cannot(request: str, principal: Profile, names: dict[str, str]) -> tuple[str, int] | None:
    """The principal's own note that they cannot do what is asked, said as they would, and its item."""
    for match in rank_background(request, principal)[:2]:
        item = principal.background[match.index]
        if match.score >= CANT_FIT and item.shareable and _CANT.search(item.information):
            sentence = next((s for s in re.split(r"(?<=[.!?])\s+", item.information) if _CANT.search(s)), item.information)
            return f"Sorry — {spoken([sentence], names)}", match.index
    return None


# States a yes/no question asks about, and whether each says the thing is done or not.
_DONE_STATES = (
    "fixed", "done", "resolved", "closed", "merged", "shipped", "released", "ready", "finished", "complete", "completed",
    "verified", "live", "approved", "signed off", "agreed", "booked", "sent", "deployed", "landed", "on track", "green",
)
_OPEN_STATES = ("open", "blocked", "in progress", "delayed", "late", "slipping", "at risk", "pending", "still open")
_STATE = re.compile(r"\b(" + "|".join(re.escape(s).replace(r"\ ", r"\s+") for s in sorted(_DONE_STATES + _OPEN_STATES, key=len, reverse=True)) + r")\b", re.I)
_SAYS_DONE = re.compile(
    r"\b(?:that's|is|was|are|were|has\s+been|have\s+been|got)\s+(?:now\s+|all\s+)?(?:fixed|done|resolved|closed|merged|shipped|released|ready|"
    r"finished|complete|completed|verified|live|approved|signed\s+off|agreed|booked|sent|deployed|on\s+track)\b|\b(?:merged|shipped|landed|went\s+out|"
    r"signed\s+off|fixed|resolved|passed)\b",
    re.I,
)
_SAYS_NOT = re.compile(
    r"\b(?:not|isn't|aren't|wasn't|hasn't|haven't|won't|didn't|doesn't|still\s+open|in\s+progress|in\s+review|blocked|delayed|slipped|"
    r"at\s+risk|hasn't\s+started|waiting|pending|backlog|moved\s+out|no\s+longer)\b",
    re.I,
)
_STILL = re.compile(r"\bstill\b", re.I)
_CHANGED = re.compile(r"\b(?:moved|changed|change\s+of\s+plan|slipped|postponed|brought\s+forward|no\s+longer|instead)\b", re.I)
_TICKET_TAIL = re.compile(r"^(?P<subject>.+?)\s+—\s+(?P<tail>that(?:'s|\s).+)$")


def yes_or_no(question: str, answer: str) -> str:
    """`answer` opened with yes or no where it says whether the state the question asks about holds, in the
    question's word ("Is MOB-431 fixed?" -> "Yes, that's fixed."); as it is where it does not say."""
    asked = _STATE.search(question)
    if not asked:
        # "Is the ship date still the 16th?" answered by a change: no, and the change.
        if _STILL.search(question) and _CHANGED.search(answer):
            return f"No — {lower_first(answer)}"
        return answer
    word = re.sub(r"\s+", " ", asked.group(1).lower())
    asks_open = word in _OPEN_STATES
    done, not_done = bool(_SAYS_DONE.search(answer)), bool(_SAYS_NOT.search(answer))
    if done == not_done:
        return answer
    holds = done != asks_open
    ticket = _TICKET_TAIL.match(answer.rstrip("."))
    if holds:
        if ticket and not asks_open:
            return f"Yes, that's {word}."
        return f"Yes — {lower_first(answer)}"
    if ticket:
        return f"No, {ticket.group('tail')}."
    return f"No — {lower_first(answer)}"


_FACTS = (TurnKind.question, TurnKind.yes_no)
"""The kinds a holding line may answer: a question for a fact or a state."""


def respond(
    meeting: MeetingState, principal: Profile, cue: Cue, plan: Plan, lookup: Lookup | None, selector: AnswerSelector | None = None
) -> Answer:
    """The reply to the latest turn for `cue` (not `none`), planned as `plan`; an empty text is silence. `selector`:
    which item answers the turn (default: the shipped one; the benchmark passes one fitted without the meeting)."""
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
        return Answer(unmask(acknowledgement(plan.asked), meeting.names), why="a request: acknowledged, its action item proposed")
    talk = current_talk(meeting)
    if kind is TurnKind.invitation:
        # Invited, the principal may raise their own point, as when handed the floor.
        handed = Cue(Scenario.implicit_cue, cue.confidence, cue.reason, cue.floor) if theirs else cue
        words = compose(meeting, principal, handed, talk, selector)
        if words.text:
            return Answer(words.text, words.used_background, words.used_intents, why="invited to add: the point that fits")
        return Answer(NOTHING_MORE_LINE if theirs else "", why="invited to add, and nothing fits")
    words = settle(meeting, principal, cue, compose(meeting, principal, cue, talk, selector), talk, lookup)
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
