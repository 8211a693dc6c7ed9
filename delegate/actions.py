"""Action items from the utterance stream: who committed to, was asked for, or was assigned what work.

The embedded extractor reads one final utterance at a time and proposes `ProposedAction`s:

- a *commitment* ("I will send you the link by Friday"): the speaker is the assignee;
- a *request* ("[PERSON5], could you prepare a poll?", "Marcus, can you write it up?", "please e-mail
  [PERSON14]"): the addressee is the assignee — a vocative name or mask (`delegate.names`) in the sentence
  or a few sentences earlier in the turn, else the person the speaker was answering; a request that names
  nobody inside a long turn (an announcement to the room) is the speaker's too, who asked and chases it;
- an *assignment* ("[PERSON5] and [PERSON11] should select the video", "everybody please fill the table",
  "we need to book a slot. [PERSON7] is responsible for that"): the named people, or everyone with the
  speaker; "I was asked by [PERSON9] to give the talk" is the speaker's;
- an *acceptance* ("Sure, I can do it.", "Will do.") or an *anaphoric commitment* ("Yeah, I'll draft
  something by Wednesday") right after a request, a "who can ...?" or one's own "we can ...": the
  speaker takes that work over, with its description and any new due date; so does "Would do that." after
  one's own "maybe we should ...?" in the same turn.

Only future work counts: a clause is an action when a commitment/request trigger is followed by a work
verb ("send", "review", "set up", ...), not a meeting-room verb ("see", "explain", "share my screen"),
and not negated, conditional or reported as done ("I already sent it"; only the clause itself counts, not
"... - I already talked with him" after it). A description naming no work beyond its verb ("Register
today.", "Schedule accordingly.") is dropped. Each candidate gets a confidence from its trigger and cues (a
verb naming a deliverable, a due date, a named addressee, an answer to a question, hedges; less for ongoing
activity such as "work with", broken-off clauses and a plain "get"); only candidates at or above `threshold`
are proposed, which keeps the rate near what a person will review live (about a dozen an hour, 14 on the
ELITR dev meetings).

A candidate that restates an open action (overlapping assignees, similar description, within a
bounded window) updates it instead of proposing it twice; the update is emitted only when a detail
changed (due date, assignees, a sharper description). All state is bounded (recent candidates and open
actions are deques), so an utterance costs the same at minute 1 and minute 90.

`ActionBook` keeps the actions and every state change (proposed, updated, approved, rejected) for the
audit log; the server turns its events into frames and rows. `Extractor` is the protocol every extractor
implements; `Refiner`, the one of an extractor with a slower second pass (`delegate.action_refiner`, an LLM
with the prompt `prompts/extract_actions.md.j2`, around this one).
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from delegate.meeting import MeetingState
from delegate.models import ActionStatus, ActionType, Profile, ProposedAction, Utterance
from delegate.names import Reference, find
from delegate.similarity import similarity, warm_up
from delegate.text import content_words, tokens

# --- vocabulary -----------------------------------------------------------------------------------


_BASE_FORM: dict[str, str] = {}
"""Inflected form -> base form of the verbs below ("regenerated" -> "regenerate"), for descriptions."""


def _forms(*bases: str) -> set[str]:
    """Base, third person, -ing and -ed forms of regular verbs (irregular ones are listed by hand)."""
    out: set[str] = set()
    for b in bases:
        forms = {b, b + "s", b + "es", b + "ing", b + "ed", b + "d"}
        if b.endswith("e"):
            forms |= {b[:-1] + "ing"}
        if b.endswith("y"):
            forms |= {b[:-1] + "ies", b[:-1] + "ied"}
        if re.fullmatch(r"[^aeiou]*[aeiou][bdgmnprt]", b):  # set -> setting, plan -> planned
            forms |= {b + b[-1] + "ing", b + b[-1] + "ed"}
        for f in forms:
            _BASE_FORM.setdefault(f, b)
        out |= forms
    return out


# Verbs of work that outlives the meeting. Ambiguous meeting-room verbs (see, show, explain, present,
# open, talk about, go back) are left out on purpose: "can you show me" is not an action item.
WORK_VERBS = _forms(
    "send", "email", "e-mail", "mail", "write", "share", "prepare", "draft", "check", "review", "read",
    "schedule", "organize", "organise", "fix", "finish", "complete", "update", "upload", "download",
    "create", "add", "test", "ask", "contact", "register", "propose", "book", "invite", "remind",
    "evaluate", "implement", "install", "clean", "compute", "process", "reorganize", "continue",
    "provide", "deliver", "submit", "publish", "deploy", "integrate", "rewrite", "regenerate", "change",
    "align", "annotate", "translate", "collect", "convert", "analyse", "analyze", "compare", "measure",
    "investigate", "merge", "document", "coordinate", "confirm", "verify", "forward", "post", "connect",
    "meet", "call", "decide", "fill", "enter", "distribute", "circulate", "arrange", "plan", "handle",
    "package", "restart", "train", "build", "design", "extend", "improve", "respond", "reply", "comment",
    "sign", "print", "order", "reserve", "watch", "look", "discuss", "talk", "follow", "inform",
    "notify", "clarify", "summarize", "summarise", "transcribe", "record", "apply", "pay", "start",
    "work", "try", "rerun", "retrain", "select", "pick", "choose", "set", "setup", "run", "make", "get",
    "give", "find", "put", "do", "let", "take", "bring", "keep", "move", "remove", "delete", "correct",
    "edit", "report", "include", "attach", "link", "note", "list", "research", "study", "assign",
    "renew", "point", "swap", "route", "flag", "brief", "close", "migrate", "rename", "tag", "release", "ship",
    "backport", "rotate", "raise", "file", "escalate", "approve", "reach", "loop", "chase", "ping", "sync",
    "cover", "host", "compile", "benchmark", "debug", "dig", "draft", "reconstruct", "replay", "export",
    "import", "estimate", "calculate", "double-check", "doublecheck", "recheck", "re-run", "revise",
    "finalize", "finalise", "prioritize", "prioritise", "split", "own", "lend", "borrow",
)
WORK_VERBS |= {"wrote", "written", "sent", "made", "got", "gave", "given", "found", "put", "did", "done",
               "took", "taken", "brought", "kept", "ran", "set", "chose", "chosen", "paid", "read"}

# Verbs that name a concrete deliverable: a commitment built on one of these is very likely real.
STRONG_VERBS = _forms(
    "send", "email", "e-mail", "mail", "write", "share", "prepare", "draft", "schedule", "review",
    "register", "propose", "book", "invite", "upload", "submit", "fix", "finish", "contact", "ask",
    "check", "fill", "enter", "package", "forward", "circulate", "organize", "reorganize", "evaluate",
    "test", "implement", "update", "regenerate", "rewrite", "annotate", "remind", "read", "watch",
)

# These need an object that is work to be actions ("do it", "make sure", "get started" are not).
_WEAK_VERBS = _forms("do", "make", "get", "give", "take", "put", "keep", "let", "start", "work", "try",
                     "run", "set", "look", "talk", "follow", "find", "call", "meet", "move")

# A clause about the meeting itself, happening right now, is not an action item.
_IN_MEETING = re.compile(
    r"\b((?:share|sharing|see|show|showing|stop)\w*(?: \w+){0,2} screen|screen ?shar\w*|hear me|hear you|see me|mute|unmute|microphone|camera|the chat|in the chat|"
    r"(?:open|show|share|go through) the agenda|next point|next item|slide|go back|scroll|zoom in|share my|"
    r"wait a (second|moment|minute)|a second|a moment|a minute|right now|now$|at the moment|"
    r"ask (you|everybody|everyone|all of you) (now|to (say|tell|introduce|present|explain|report)))\b",
    re.I,
)
_INTERRUPTION = re.compile(r"\b(just a (second|moment|minute)|one (second|moment|minute)|(?:my|your) screen)\b", re.I)
_UNOWNED = re.compile(r"\b(someone|somebody|anyone|anybody)\b", re.I)
_GENERIC_YOU = re.compile(r"\b(usual(ly)?|typical(ly)?|normal(ly)?|general(ly)?|in principle|the reason)\b", re.I)
_CONDITION = re.compile(r"\b(if|whether|unless)\b", re.I)
_SUBORDINATE = re.compile(r"\b(?:so that|in order that|which|where)\W*(?:(?:at least|then|also)\W+)*$", re.I)
_AGENDA_VERBS = frozenset({"start", "starting", "begin", "continue", "move", "go", "finish", "stop", "wrap", "close"})
_DONE = re.compile(r"\b(already|just (sent|did|shared|wrote|e-?mailed|uploaded)|yesterday|last (week|time))\b", re.I)
_CLAUSE_BREAK = re.compile(r"\s[-–—]\s|[,;]\s*(?:and\s+|but\s+|so\s+)?(?:I|we|he|she|they)\b|\b(?:but|because|since)\b", re.I)
_NEGATED = re.compile(r"^\s*(not|n't|never|no longer)\b", re.I)
_HEDGE = re.compile(r"\b(maybe|perhaps|probably|possibly|might|i think|i guess|i don't know|not sure)\b", re.I)

_FILLERS = re.compile(
    r"<[^>]*>|\b(uh|um|uhm|ehm|eh|er|erm|hm|hmm|mm|mhm|(?<!let )you know|I mean|kind of|sort of)\b[,.]?\s*", re.I
)
_SPACE = re.compile(r"\s+")
_SENTENCE = re.compile(r"[^.?!…]+(?:[.?!…]+|$)")
_MENTION = re.compile(r"\[(PERSON\d+)\]")
_APOS = "['’]"
# "If you haven't done so yet, please enter ...": a reminder, not a condition on the work.
_NOT_YET = re.compile(
    rf"\bif (?:you|they|we|not)(?:\s+(?:have|haven{_APOS}t|have not|did|didn{_APOS}t|did not|already))*"
    rf"(?:\s+(?:done|do)\s+(?:so|it|that))?\s+(?:yet|already)\b", re.I)
_ASKED_BY = re.compile(
    rf"\b(?:I|we)\s*(?:was|were|am|are|have been|{_APOS}ve been|{_APOS}m|{_APOS}re|got)\s+(?:\w+\s+)?"
    rf"(?:asked|requested|told|invited|tasked|nominated|appointed)\s+by\s*$", re.I)

# Words skipped between a trigger and its verb ("I will also probably try to send ..."). Every repetition
# consumes a word, so the pattern stays linear on runs of commas and fillers.
_SKIP = (
    r"(?:(?:also|just|then|definitely|certainly|surely|probably|maybe|actually|really|quickly|still|"
    r"first|again|gladly|immediately|soon|later|please|kindly|now|today|tomorrow|simply|both|all|directly|"
    r"personally|hopefully|ideally|eventually|finally|briefly|together|"
    r"[A-Za-z]+-(?=[\s,])|"  # a false start: "I could also sen-, um, let you know"
    r"try\s+to|try\s+and|be\s+able\s+to|have\s+to|need\s+to|be\s+happy\s+to|be\s+glad\s+to|like\s+to|"
    r"go\s+ahead\s+and|"
    r"uh|um|ehm|eh|so|and)[\s,]+)*"
)
# An adverb between subject and modal: "we actually need to book", "I also will send".
_ADV = r"(?:(?:actually|really|also|just|still|definitely|certainly|probably|then|all|both|surely)\s+)?"
_VERB = r"(?P<verb>[A-Za-z][A-Za-z-]*)"
# A mask or a capitalised name, case-sensitive even inside IGNORECASE patterns (else every word is a name).
_NAME = r"(?-i:\[PERSON\d+\]|\b[A-Z][a-zà-ÿ]+(?:\s[A-Z][a-zà-ÿ]+)?)"

Trigger = Literal["self", "self_weak", "we", "we_weak", "let_me", "lets", "request", "please", "you_modal",
                  "assign", "everyone", "nominate", "who", "imperative"]

_SELF_TRIGGERS = frozenset({"self", "self_weak", "we", "we_weak", "let_me", "lets"})
_REQUEST_TRIGGERS = frozenset({"request", "please", "you_modal", "assign", "nominate", "everyone", "who", "imperative"})
_ADDRESSED_TRIGGERS = frozenset({"request", "please", "you_modal", "imperative"})
"""Requests whose doer is whoever they are spoken to."""
_TENTATIVE_TRIGGERS = frozenset({"self_weak", "we", "we_weak", "lets"})
# "send it", "do that today", "draft something" -- but not "write that copy" (a determiner).
_PRONOUN_OBJECT = re.compile(
    r"^\S+(?:\s+(?:up|out|over|on))?\s+(?:(?:it|them|something|one|so)\b|(?:this|that|these|those)"
    r"(?=\s*(?:[,.;!?]|$)|\s+(?:to|for|by|on|in|at|with|today|tomorrow|tonight|now|later|first|again|as|and|if|"
    r"when|before|after|this|next)\b))",
    re.I,
)

# Base confidence per trigger: how often such a clause is a real action item in meeting talk.
_BASE: dict[Trigger, float] = {
    "self": 0.55, "self_weak": 0.35, "we": 0.3, "we_weak": 0.15, "let_me": 0.35, "lets": 0.2,
    "request": 0.45, "please": 0.55, "you_modal": 0.3, "assign": 0.5, "everyone": 0.45, "nominate": 0.25, "who": 0.4,
    "imperative": 0.35,
}

_PATTERNS: list[tuple[Trigger, re.Pattern[str]]] = [
    ("self", re.compile(
        rf"\bI\s*{_ADV}(?:will|{_APOS}ll|shall|am going to|{_APOS}m going to|am gonna|{_APOS}m gonna|"
        rf"will try to|{_APOS}ll try to|am planning to|{_APOS}m planning to|was planning to|plan to|"
        rf"promise to|{_APOS}m happy to|am happy to|{_APOS}m going to try to|expect to|hope to|intend to|aim to)[\s,]+{_SKIP}{_VERB}", re.I)),
    ("self_weak", re.compile(
        rf"\bI\s*{_ADV}(?:can|could|should|would|{_APOS}d|need to|have to|must|want to|would like to|{_APOS}d like to|"
        rf"may)[\s,]+{_SKIP}{_VERB}", re.I)),
    ("we", re.compile(
        rf"\bwe\s*{_ADV}(?:will|{_APOS}ll|shall|are going to|{_APOS}re going to|are gonna|{_APOS}re gonna)[\s,]+{_SKIP}{_VERB}",
        re.I)),
    ("we_weak", re.compile(rf"\bwe\s*{_ADV}(?:should|need to|have to|must|can|could)[\s,]+{_SKIP}{_VERB}", re.I)),
    ("let_me", re.compile(rf"\blet me[\s,]+{_SKIP}{_VERB}", re.I)),
    ("lets", re.compile(rf"\blet{_APOS}?s[\s,]+{_SKIP}{_VERB}", re.I)),
    ("request", re.compile(
        rf"(?:\b(?:can|could|would|will)\s+you|\bI\s*(?:would|{_APOS}d) like (?:you|to ask you) to|"
        rf"\b(?:make sure|don{_APOS}t forget|do not forget|remember) to)[\s,]+{_SKIP}{_VERB}", re.I)),
    ("please", re.compile(rf"\bplease[\s,]+{_SKIP}{_VERB}", re.I)),
    ("you_modal", re.compile(
        rf"\byou\s*(?:should|need to|have to|must|will|{_APOS}ll|are going to|{_APOS}re going to|can|could)[\s,]+"
        rf"{_SKIP}{_VERB}", re.I)),
    ("assign", re.compile(
        rf"(?P<who>{_NAME}(?:\s*(?:,|and|or)\s*{_NAME}){{0,5}})\s*,?\s*(?:will|{_APOS}ll|should|could|can|"
        rf"is going to|has to|needs to|must|shall|would|please|is responsible for)[\s,]+{_SKIP}{_VERB}", re.I)),
    ("nominate", re.compile(
        rf"(?P<who>{_NAME})(?:[\s,]+(?:uh|um|ehm|eh)\b)*[\s,]*(?:to|for|who could|who can|who will)[\s,]+"
        rf"{_SKIP}{_VERB}", re.I)),
    ("who", re.compile(rf"\bwho(?:{_APOS}s| is)?\s+(?:can|could|will|would|wants to|going to|able to)[\s,]+{_SKIP}{_VERB}", re.I)),
    ("imperative", re.compile(
        r"^(?:(?:okay|ok|so|then|and|yes|yeah|right|good|great|alright|now|fine)\b[\s,.]*)*(?P<verb>[A-Za-z][A-Za-z-]*)\b",
        re.I)),
    ("everyone", re.compile(
        rf"(?:\b(?:everyone|everybody|all of you|each of you|all (?:the )?partners|you all|you guys)\s*,?\s*"
        rf"(?:should|needs to|need to|has to|have to|must|will|please)|\bask (?:all|every)\w* (?:the )?\w+ to|"
        rf"\bplease,? (?:everyone|everybody),?)[\s,]+{_SKIP}{_VERB}", re.I)),
]

# "Sure, I can do it", "I would do this", "I'll find it", "will do": taking over the last request.
_ACCEPT = re.compile(
    rf"^\W*(?:(?:yes|yeah|yep|sure|ok|okay|alright|of course|no problem|fine|good|so|then|well)\W+)*"
    rf"(?:(?:I|we)\s*(?:can|could|will|{_APOS}ll|would|{_APOS}d|am going to|{_APOS}m going to|shall)\s+"
    rf"(?:(?:also|definitely|certainly|gladly|surely|try to|try and)\s+)*(?:do|take|handle|check|find|manage|"
    rf"prepare|send|look into|look at|write|arrange)\s+(?:it|this|that|them|so|the \w+)?|will do|I can try|"
    rf"I(?:{_APOS}ll| will) try|(?:I|we) (?:will|can|shall)(?=\s*[.!]?\s*$))\b",
    re.I,
)
# "Would do that.", "I can do it." after one's own "maybe we should ...?" in the same turn.
_SELF_ACCEPT = re.compile(
    rf"^\W*(?:(?:yes|yeah|ok|okay|so|and|sure)\W+)*(?:I\s*)?(?:would|will|can|could|{_APOS}ll|{_APOS}d)\s+"
    rf"(?:(?:gladly|happily|also)\s+)?(?:do|take|handle|prepare)\s+(?:that|it|this)\W*$", re.I)
# "[PERSON7] is responsible for that": someone named owns the work just mentioned.
_OWNER = re.compile(
    rf"(?P<who>{_NAME})\s+(?:is|will be|would be)\s+(?:the one\s+)?(?:responsible for|in charge of|taking care of|"
    rf"going to (?:take care of|handle|do))\s+(?:that|this|it)\b", re.I)
_ASKS = re.compile(r"\?|\b(can you|could you|would you|will you|please|who can|who could|who will)\b", re.I)

_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_DUE = re.compile(
    rf"\b(?:(?:by|before|until|till|on|at|in|from|after|around|for|within)\s+)?(?:the\s+)?(?:"
    rf"end of (?:the |this |next )?(?:week|month|day)|(?:this|next|coming) (?:{_DAY}|week|month|weekend|morning|"
    rf"afternoon|evening)|mid next week|later today|today|tonight|tomorrow(?: morning| afternoon| evening)?|"
    rf"{_DAY}(?: morning| afternoon)?|\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {_MONTH}|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?|"
    rf"as soon as possible|asap|in (?:a|one|two|three|\d+) (?:days?|weeks?|months?)(?: or (?:\d+|two|three))?|"
    rf"after (?:the )?(?:weekend|lunch|holidays?)|this afternoon|this morning|(?:the )?\d{{1,2}}(?:st|nd|rd|th))\b",
    re.I,
)

_TYPE_RULES: list[tuple[ActionType, re.Pattern[str]]] = [
    ("schedule_meeting", re.compile(
        r"\b(schedul\w*|meet|doodle|poll|pole|slot|calendar|appointment|invite|invitation|dry[- ]run|dates|"
        r"(?<!after )(?<!before )(?<!during )(?<!in )(?<!after the )(?<!before the )(?<!during the )(?<!in the )"
        r"(?:meeting|call|session))\b",
        re.I)),
    ("send_email", re.compile(r"\b(e-?mail\w*|mail|write (to|him|her|them|\[)|respond|reply|letter)\b", re.I)),
    ("share_document", re.compile(
        r"\b(send|share|upload|forward|circulate|post|distribute|attach)\w*\b.*\b(link|pdf|document|doc|file|"
        r"slides?|paper|draft|data|script|command|code|overleaf|table|sheet|presentation|report|text|version|"
        r"minutes|results?|something|it|this|that)\b", re.I)),
    ("review", re.compile(r"\b(review\w*|read|reading|proofread\w*|check\w*|look (at|into|over)|comment\w*|"
                          r"watch\w*|go (through|over)|verify\w*)\b", re.I)),
    ("follow_up", re.compile(
        r"\b(ask\w*|contact\w*|talk\w* (to|with)|discuss\w*|get (back|in touch)|in touch|follow\w* up|remind\w*|"
        r"let \S+ know|confirm\w*|find out|tell|inform\w*|clarify\w*|coordinat\w*|connect\w*|write (to|him|her))\b",
        re.I)),
]

_OFFERS: dict[ActionType, str] = {
    "send_email": "I can draft this email for you.",
    "schedule_meeting": "I can propose times and draft the invitation for you.",
    "share_document": "I can find the document and draft the message to share it.",
    "review": "I can summarise it and list the points to check for you.",
    "follow_up": "I can draft the follow-up message for you.",
    "create_task": "I can add this to your task list.",
    "other": "I can add this to your task list and remind you.",
}

# Prepositions and verbs before a mask that make it an object, not the person spoken to.
_NOT_VOCATIVE = frozenset({
    "to", "with", "from", "about", "ask", "asked", "email", "e-mail", "mail", "write", "contact", "tell", "told",
    "and", "or", "of", "for", "by", "like", "than", "as", "invite", "remind", "call", "meet", "inform", "cc",
})
_DASH = re.compile(r"\s[-–—]+(?:\s|$)")
"""A dash between words: the speaker breaks off ("write to [PERSON7] to - I already talked with him")."""
_CLAUSE_END = re.compile(
    r",?\s+\b(because|since|so that|as i said|as you know|which|but|otherwise|don't worry|and yeah|"
    r"and (?:I|we|you|he|she|they|it|then|should|so|maybe)|maybe (?:we|I)|if (?:you|we|I|it))\b",
    re.I,
)


# --- pieces ---------------------------------------------------------------------------------------


class Candidate(BaseModel):
    """One clause that may be an action item, before it is proposed or merged."""

    model_config = ConfigDict(frozen=True)

    utterance_id: int
    """The utterance that made this a candidate (for an acceptance, the "I can do it")."""
    excerpt_utterance_id: int
    """The utterance `excerpt` is a verbatim substring of."""
    speaker: str
    trigger: Trigger
    assignees: tuple[str, ...]
    description: str
    excerpt: str
    action_type: ActionType
    due: str | None
    confidence: float
    anaphoric: bool = False
    """Its object is a pronoun ("I'll send it"): what it is comes from an earlier candidate."""
    accepted: bool = False
    """It takes over an earlier candidate: its assignees replace those of the action proposed from it."""
    antecedent_excerpt: str | None = None


class ActionEvent(BaseModel):
    """One state change of an action, for the audit log and the `action` frame."""

    model_config = ConfigDict(frozen=True)

    action_id: str
    event: Literal["proposed", "updated", "approved", "rejected"]
    utterance_id: int | None = None
    action: ProposedAction


@runtime_checkable
class Extractor(Protocol):
    """Anything that turns the meeting so far into new or updated action proposals (embedded, LLM-refined)."""

    def observe(self, meeting: MeetingState) -> list[ProposedAction]:
        """Read `meeting.last` (the newest final utterance); return the actions it proposed or updated."""
        ...

    def apply_feedback(self, action_id: str, approve: bool) -> ProposedAction:
        """The principal approved or rejected an action; returns it with its new status."""
        ...

    @property
    def actions(self) -> list[ProposedAction]:
        """Every action proposed so far, in order, with its current state."""
        ...


@runtime_checkable
class Refiner(Extractor, Protocol):
    """An extractor with a slower second pass (an LLM) that revises what `observe` proposed after it went out."""

    async def refine(self, meeting: MeetingState, found: list[ProposedAction]) -> list[ProposedAction]:
        """Revise `found`, as `observe` just returned it; returns the actions this changed, in their new state.

        Never raises for the slow pass's own failures: the actions then stay as they are."""
        ...


class UnknownAction(KeyError):
    """Feedback named an action id this meeting never proposed."""


@dataclass
class ActionBook:
    """The actions of one meeting and the history of their states."""

    principal: str | None = None
    _actions: dict[str, ProposedAction] = field(default_factory=dict, init=False)
    events: list[ActionEvent] = field(default_factory=list, init=False)
    """Every state change in order: what the audit log and the `action` frames are made of."""

    @property
    def actions(self) -> list[ProposedAction]:
        return list(self._actions.values())

    def get(self, action_id: str) -> ProposedAction:
        try:
            return self._actions[action_id]
        except KeyError:
            raise UnknownAction(action_id) from None

    def next_id(self) -> str:
        return f"a{len(self._actions) + 1}"

    def put(self, action: ProposedAction, utterance_id: int | None) -> ProposedAction:
        """Record a new or changed action (sets `for_principal` and `offer`)."""
        mine = self.principal is not None and self.principal in action.assignees
        action = action.model_copy(update={"for_principal": mine, "offer": _OFFERS[action.action_type] if mine else None})
        event: Literal["proposed", "updated"] = "updated" if action.id in self._actions else "proposed"
        self._actions[action.id] = action
        self.events.append(ActionEvent(action_id=action.id, event=event, utterance_id=utterance_id, action=action))
        return action

    def replace(self, action: ProposedAction) -> None:
        """Keep a detail that is not worth an event (one more utterance id for a bare restatement)."""
        self._actions[action.id] = action

    def apply_feedback(self, action_id: str, approve: bool) -> ProposedAction:
        status: ActionStatus = "approved" if approve else "rejected"
        action = self.get(action_id).model_copy(update={"status": status})
        self._actions[action_id] = action
        self.events.append(ActionEvent(action_id=action_id, event=status, action=action))
        return action


MAX_SENTENCE = 300
"""Characters: longer runs (unpunctuated speech recognition) are cut at a comma or a space, which keeps
the work per utterance linear in its length."""


def sentences(text: str) -> Iterable[tuple[int, int]]:
    """Spans of the sentences of `text`, without surrounding spaces, none longer than `MAX_SENTENCE`."""
    for m in _SENTENCE.finditer(text):
        start, end = m.start(), m.end()
        while start < end:
            while start < end and text[start].isspace():
                start += 1
            stop = end
            if stop - start > MAX_SENTENCE:
                cut = text.rfind(", ", start, start + MAX_SENTENCE)
                if cut <= start:
                    cut = text.rfind(" ", start, start + MAX_SENTENCE)
                stop = cut + 1 if cut > start else start + MAX_SENTENCE
            piece_end = stop
            while piece_end > start and text[piece_end - 1].isspace():
                piece_end -= 1
            if piece_end > start:
                yield start, piece_end
            start = stop


def _overlapping(pattern: re.Pattern[str], text: str) -> Iterable[re.Match[str]]:
    """Every match, overlaps included: in "I will, I will ask [PERSON9]" the first "I will" must not
    swallow the second one's "I"."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        yield m
        pos = m.start() + 1


def _anaphoric(clause: str) -> bool:
    """The work is named only by a pronoun: "do it", "send it to him", "draft something"."""
    return bool(_PRONOUN_OBJECT.match(clause))


_ONGOING_VERBS = frozenset({"work", "start", "do"})
_DANGLING = re.compile(r"\b(?:if|to|and|or|the|a|an|with|for|of|that|whether)\W*$", re.I)
_GET_WORK = re.compile(r"\S+\s+(?:back|in touch|started|ready|done|finished|feedback|access|approval)\b", re.I)
_PERSON_PRONOUNS = frozenset({"him", "her"})
_VAGUE = frozenset({"today", "tomorrow", "tonight", "soon", "later", "according", "whenever", "anyway", "again",
                    "first", "somehow", "asap", "possible", "afterward", "afterwards", "meantime", "too", "either"})
"""Stems that say when or how, not what: a description made of a verb and these names no work."""


def _informative(description: str) -> frozenset[str]:
    """The words that say what the work is; "him"/"her" count (a person to write to or call is a detail)."""
    return (content_words(description) - _VAGUE) | (_PERSON_PRONOUNS & set(tokens(description)))


def find_due(text: str) -> str | None:
    m = _DUE.search(text)
    return m.group(0) if m else None


def action_type(description: str) -> ActionType:
    """The kind of work, from the description; plain work to do is a task (`create_task`)."""
    for kind, pattern in _TYPE_RULES:
        if pattern.search(description):
            return kind
    return "create_task"


def _dedupe_words(text: str) -> str:
    """Drop stutters: "I will, I will write to, to [PERSON7]" -> "I will write to [PERSON7]"."""

    def norm(w: str) -> str:
        return w.strip(",.-").lower()

    out: list[str] = []
    for w in text.split():
        if out and norm(w) and norm(out[-1]) == norm(w):
            out[-1] = w
            continue
        out.append(w)
        if len(out) >= 4 and [norm(x) for x in out[-2:]] == [norm(x) for x in out[-4:-2]]:
            out[-4:-2] = out[-2:]
            del out[-2:]
    return " ".join(out)


def _clip_clause(text: str, max_words: int = 22) -> str:
    for pattern in (_CLAUSE_END, _DASH):
        m = pattern.search(text)
        if m and len(text[: m.start()].split()) >= 2:
            text = text[: m.start()]
    words = text.split()
    if len(words) > max_words:
        text = " ".join(words[:max_words])
    return text.strip(" ,;:-–—")


def mask(label: str) -> str:
    return f"[{label}]"


def imperative(clause: str, speaker: str, assignees: tuple[str, ...], addressee: str | None,
               spoken: Callable[[str], str] = mask) -> str:
    """A clean imperative sentence from the words after the trigger; "you" and "me" become the people
    meant, written by `spoken` (masks stay masks: `[PERSON5]`)."""
    text = _FILLERS.sub(" ", clause)
    text = _SPACE.sub(" ", text).strip()
    text = _dedupe_words(text)
    text = _clip_clause(text)
    by_speaker = speaker in assignees
    if by_speaker and addressee:
        text = re.sub(r"\byou\b", spoken(addressee), text, flags=re.I)
        text = re.sub(r"\byour\b", f"{spoken(addressee)}'s", text, flags=re.I)
    if not by_speaker:
        text = re.sub(r"\b(me|us)\b", spoken(speaker), text, flags=re.I)
        text = re.sub(r"\bmy\b", f"{spoken(speaker)}'s", text, flags=re.I)
    text = _dedupe_words(text).rstrip(" ,;:-–—?.!")
    if not text:
        return ""
    first, _, rest = text.partition(" ")
    first = _BASE_FORM.get(first.lower(), first)  # "I will regenerated it" -> "Regenerate it."
    text = f"{first} {rest}" if rest else first
    return text[0].upper() + text[1:] + "."


_ANNOUNCEMENT_WORDS = 40
"""A turn at least this long, with nobody named, speaks to the room: its requests are for everyone."""
_VOCATIVE_REACH = 4
"""Sentences back within a turn that a vocative still names who a request is for."""
_VOCATIVE_OPENERS = frozenset({"so", "ok", "okay", "and", "yes", "yeah", "well", "now", "then", "great"})


@dataclass
class People:
    """The attendees as they can be named in speech: `[PERSONk]` masks, display names, first names."""

    labels: tuple[str, ...] = ()
    names: dict[str, str] = field(default_factory=dict)
    _profiles: dict[str, Profile] = field(default_factory=dict, init=False)
    _by_word: dict[str, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for label in self.labels:
            display = self.names.get(label, label)
            parts = display.split()
            aliases = [parts[0]] if len(parts) > 1 else []
            self._profiles[label] = Profile(name=display, label=label, aliases=aliases)
            for word in {display, *aliases, label}:
                self._by_word.setdefault(word.lower(), label)

    @classmethod
    def of(cls, meeting: MeetingState) -> People:
        return cls(labels=tuple(meeting.attendees), names=dict(meeting.names))

    def spoken(self, label: str) -> str:
        """How a description names someone: their display name when the meeting has one, else the mask."""
        name = self.names.get(label)
        return name if name and name != label else mask(label)

    def resolve(self, word: str) -> str | None:
        """The label of a mask (`[PERSON3]`), a display name or a first name, if it is an attendee's."""
        m = _MENTION.fullmatch(word.strip())
        if m:
            return m.group(1)
        return self._by_word.get(word.strip().lower())

    def addressed(self, sentence: str, speaker: str) -> str | None:
        """The attendee a sentence is spoken to by name ("Marcus, can you ...", "... right, [PERSON5]?")."""
        for label, profile in self._profiles.items():
            if label != speaker and find(sentence, profile).reference is Reference.addressed:
                return label
        for m in _MENTION.finditer(sentence):  # masks of people who have not spoken yet
            label = m.group(1)
            if label == speaker or label in self._profiles:
                continue
            before = sentence[: m.start()].split()
            prev_word = before[-1].strip(",.").lower() if before else ""
            slot = not before or prev_word in _VOCATIVE_OPENERS or sentence[m.end():].lstrip().startswith((",", "?"))
            if slot and prev_word not in _NOT_VOCATIVE:
                return label
        return None


def _confidence(trigger: Trigger, verb: str, clause: str, sentence: str, due: str | None, named: bool,
                before: str, replying: bool) -> float:
    c = _BASE[trigger]
    if replying and trigger in _SELF_TRIGGERS:
        c += 0.15  # "I can ask them." in answer to "can't we borrow devices?": taking something on
    if _CONDITION.search(_NOT_YET.sub(" ", before)):
        c -= 0.2  # "if [PERSON11] will write it": a condition, not a commitment
    elif trigger in _SELF_TRIGGERS and _SUBORDINATE.search(before):
        c -= 0.2  # "so that I should be able to prepare ...", "a service where I can send ...": not a commitment
    if trigger == "you_modal" and _GENERIC_YOU.search(sentence):
        c -= 0.2  # "usually you have to ...": generic you
    if trigger == "request" and re.search(r"\bwould you\b(?! please| mind)", sentence, re.I):
        c -= 0.1  # "would you propose ...?" asks an opinion more often than work
    if verb in STRONG_VERBS or verb == "let":  # "let" only ever as "let [PERSON11] know": informing someone
        c += 0.15
    if due:
        c += 0.1
    if named:
        c += 0.1
    if _HEDGE.search(sentence):
        c -= 0.1
    words = content_words(clause)
    if len(words) < 2:
        c -= 0.25
    elif len(words) >= 4:
        c += 0.05
    if sentence.rstrip().endswith("?") and trigger in {"self", "self_weak", "we", "we_weak", "lets"}:
        c -= 0.3  # "should I send you a link?" offers; it does not commit
    return c


# --- the extractor --------------------------------------------------------------------------------


@dataclass
class _Open:
    action: ProposedAction
    last_utterance: int


@dataclass
class ActionExtractor:
    """The embedded, rule-based extractor: microseconds per utterance, no network.

    `principal` is the speaker label of the person the delegate stands in for; actions that fall to
    them are flagged and come with an offer. `threshold` is the confidence a candidate needs to be
    proposed; `merge_window` is how many utterances back a restatement is still merged.
    """

    principal: str | None = None
    threshold: float = 0.55
    merge_window: int = 120
    max_open: int = 24
    book: ActionBook = field(init=False)
    _open: deque[_Open] = field(init=False)
    _recent: deque[Candidate] = field(init=False)
    """Recent candidates, proposed or not: what "I'll do it" and "will do" refer back to."""
    _people: People = field(init=False)

    def __post_init__(self) -> None:
        self.book = ActionBook(principal=self.principal)
        self._open = deque(maxlen=self.max_open)
        self._recent = deque(maxlen=12)
        self._people = People()
        warm_up()  # load the embeddings now, not inside the first utterance

    @property
    def actions(self) -> list[ProposedAction]:
        return self.book.actions

    def apply_feedback(self, action_id: str, approve: bool) -> ProposedAction:
        action = self.book.apply_feedback(action_id, approve)
        for item in self._open:
            if item.action.id == action_id:
                item.action = action
        return action

    def revise(self, action: ProposedAction, utterance_id: int | None) -> ProposedAction:
        """Record a new version of an action made outside this extractor (a refinement); restatements
        merge into it from now on."""
        action = self.book.put(action, utterance_id)
        for item in self._open:
            if item.action.id == action.id:
                item.action = action
        return action

    def observe(self, meeting: MeetingState) -> list[ProposedAction]:
        utterance = meeting.last
        if utterance is None or not utterance.final:
            return []
        if len(self._people.labels) != len(meeting.attendees) or self._people.names != meeting.names:
            self._people = People.of(meeting)  # only when someone new speaks: bounded by the attendee count
        previous, replying = self._previous_turn(meeting, utterance)
        found: list[Candidate] = []
        for cand in self.candidates(utterance, previous, meeting.attendees, replying):
            # In sentence order, so "let me check with the legal office. I'll ask them" resolves "them".
            cand = self._resolve(cand)
            self._recent.append(cand)
            found.append(cand)
        if not found:
            accepted = self._accepted(utterance)
            if accepted is not None:
                self._recent.append(accepted)
                found.append(accepted)
        out: dict[str, ProposedAction] = {}
        for cand in sorted(found, key=lambda c: -c.confidence):
            if cand.confidence < self.threshold or not cand.assignees:
                continue
            action = self._propose_or_merge(cand)
            if action is not None:
                out[action.id] = action
        return list(out.values())

    # -- candidates --

    @staticmethod
    def _previous_turn(meeting: MeetingState, utterance: Utterance) -> tuple[str | None, bool]:
        """Who the speaker answers (the last other speaker), and whether that turn asked for something."""
        for turn in reversed(meeting.recent):
            if turn.utterance.id != utterance.id and turn.utterance.speaker != utterance.speaker:
                return turn.utterance.speaker, bool(_ASKS.search(turn.utterance.text))
        return None, False

    def candidates(self, utterance: Utterance, previous: str | None, attendees: list[str] | None = None,
                   replying: bool = False) -> list[Candidate]:
        """Every clause of `utterance` that reads as an action item, one per sentence.

        `previous` is who the speaker answers; `replying`, whether that turn asked or requested something."""
        text = utterance.text
        out: list[Candidate] = []
        earlier: list[str] = []  # the turn's sentences before this one
        for start, end in sentences(text):
            sentence = text[start:end]
            # Where a vocative before this sentence may be: the last few sentences, nearest first, and the opening.
            context = tuple(earlier[: -_VOCATIVE_REACH - 1: -1]) + tuple(earlier[:1])
            best: Candidate | None = None
            for trigger, pattern in _PATTERNS:
                for m in _overlapping(pattern, sentence):
                    cand = self._candidate(utterance, trigger, m, sentence, context, previous, attendees or [], replying)
                    if cand is not None and (best is None or cand.confidence > best.confidence):
                        best = cand
            if best is not None:
                out.append(best)
            elif out and out[-1].trigger in _TENTATIVE_TRIGGERS and _SELF_ACCEPT.match(sentence):
                # "Maybe we should first create a template? Would do that.": the speaker takes their own proposal.
                out[-1] = out[-1].model_copy(update={
                    "trigger": "self", "confidence": max(out[-1].confidence, 0.45) + 0.25, "accepted": True})
            elif (owner := _OWNER.search(sentence)) is not None:
                # "We need to book a Zoom slot. And I think [PERSON7] is responsible for that."
                label = self._people.resolve(owner.group("who"))
                prior = out[-1] if out else next(
                    (c for c in reversed(self._recent) if utterance.id - c.utterance_id <= 2 and not c.anaphoric), None)
                if label is not None and prior is not None:
                    out.append(prior.model_copy(update={
                        "utterance_id": utterance.id, "speaker": utterance.speaker, "trigger": "assign",
                        "assignees": (label,), "confidence": max(prior.confidence, 0.45) + 0.2, "accepted": True,
                        "antecedent_excerpt": prior.excerpt}))
                    if prior in out[:-1]:
                        out.remove(prior)
            earlier.append(sentence)
        return out

    def _addressee(self, sentence: str, context: tuple[str, ...], previous: str | None,
                   speaker: str) -> tuple[str | None, bool]:
        """Who a request is spoken to, and whether by name: the sentence's vocative, else the nearest one earlier in
        the turn ("[PERSON15], could you prepare a poll? ... Could you email him tomorrow?"), else `previous`."""
        for text in (sentence, *context):
            label = self._people.addressed(text, speaker)
            if label is not None:
                return label, True
        return previous, False

    def _candidate(self, utterance: Utterance, trigger: Trigger, m: re.Match[str], sentence: str, context: tuple[str, ...],
                   previous: str | None, attendees: list[str], replying: bool) -> Candidate | None:
        verb = m.group("verb").lower()
        if verb not in WORK_VERBS or (trigger == "imperative" and (verb not in STRONG_VERBS or _BASE_FORM.get(verb) != verb)):
            return None
        clause = sentence[m.start("verb"):]
        if _NEGATED.match(sentence[m.end("verb"):]) or re.search(r"\b(not|n't|never)\s*$", sentence[: m.start("verb")]):
            return None
        # "I already sent it" is done; "I will write to [PERSON7] - I already talked with him" is not.
        done_scope = sentence[: m.end("verb")] + _CLAUSE_BREAK.split(clause[len(m.group("verb")):], maxsplit=1)[0]
        if _IN_MEETING.search(clause) or _INTERRUPTION.search(sentence) or _DONE.search(done_scope):
            return None
        if trigger == "please" and _UNOWNED.search(sentence):
            return None  # "could someone please ...": nobody owns it yet
        anaphoric = _anaphoric(clause)
        if verb in _WEAK_VERBS and len(content_words(clause)) < 3 and not anaphoric:
            return None
        if trigger == "lets" and verb in _AGENDA_VERBS:
            return None  # "let's start with the postponed review": running the meeting
        if verb in {"let", "lets"} and not re.match(r"let \S+(?: \S+)? know", clause, re.I):
            return None
        speaker = utterance.speaker
        named = False
        addressee: str | None = None
        if trigger in _SELF_TRIGGERS:
            if mask(speaker) in clause:
                return None  # "I have to ask [PERSON3]" said by PERSON3: a mislabelled turn or mask, not an action
            assignees: tuple[str, ...] = (speaker,)
            addressee, _ = self._addressee(sentence, context, previous, speaker)
        elif trigger in {"assign", "nominate"} and _ASKED_BY.search(sentence[: m.start()]):
            # "I was asked by [PERSON9] to give her talk": the speaker took it on, not the one who asked.
            trigger = "self"
            assignees = (speaker,)
        elif trigger in {"assign", "nominate"}:
            who = [self._people.resolve(w) for w in re.split(r"\s*(?:,|\band\b|\bor\b)\s*", m.group("who")) if w.strip()]
            assignees = tuple(dict.fromkeys(w for w in who if w is not None))
            if not assignees:
                return None
            named = True
        elif trigger == "who":
            assignees = ()  # "who can review it?": whoever accepts takes it
        elif trigger == "everyone":
            # The speaker is on the hook too: they asked everyone and will chase it.
            assignees = tuple(dict.fromkeys([speaker, *attendees]))
        else:
            target, named = self._addressee(sentence, context, previous, speaker)
            # Nobody to give it to yet: kept (unproposed) for whoever accepts it next.
            assignees = (target,) if target is not None else ()
            addressee = target
        description = imperative(clause, speaker, assignees, addressee, self._people.spoken)
        if trigger in _ADDRESSED_TRIGGERS and assignees and not named and len(utterance.text.split()) >= _ANNOUNCEMENT_WORDS:
            # "Please enter your achievements into the sheet" in a long turn that names nobody: as much an
            # announcement to the room as an answer to whoever spoke last. The speaker asked, and chases it.
            assignees = tuple(dict.fromkeys([*assignees, speaker]))
        if len(_informative(description)) < 2 and not anaphoric:  # "Register today.", "Schedule accordingly."
            return None
        due = find_due(clause)
        confidence = _confidence(trigger, verb, clause, sentence, due, named, sentence[: m.start()], replying)
        if trigger == "imperative" and len(utterance.text.split()) > 40:
            confidence -= 0.15  # imperatives inside a long turn mostly narrate steps ("upload the file, run ...")
        if _DANGLING.search(description):
            confidence -= 0.1  # "Ask [PERSON9] if.": the clause broke off, what is asked is not said
        if verb in {"get", "got", "getting"} and not _GET_WORK.match(clause):
            confidence -= 0.1  # "get enough variance", "get your cursor next to ...": rarely work to do
        elif _BASE_FORM.get(verb) in _ONGOING_VERBS and not anaphoric:
            confidence -= 0.1  # "I will work with [PERSON1]", "start the machine", "do a print out": activity, no deliverable
        return Candidate(
            utterance_id=utterance.id, excerpt_utterance_id=utterance.id, speaker=speaker, trigger=trigger,
            assignees=assignees, description=description, excerpt=sentence.strip(),
            action_type=action_type(description), due=due, confidence=confidence, anaphoric=anaphoric,
        )

    def _antecedent(self, speaker: str, utterance_id: int, horizon: int) -> Candidate | None:
        """The recent candidate a bare "I'll do it" / "will do" by `speaker` takes on: one assigned to them,
        a request by someone else, or their own tentative "we can ..." proposal."""
        for prior in reversed(self._recent):
            if utterance_id - prior.utterance_id > horizon:
                break
            if prior.anaphoric:
                continue
            if (speaker in prior.assignees or (prior.speaker != speaker and prior.trigger in _REQUEST_TRIGGERS)
                    or (prior.speaker == speaker and prior.trigger in _TENTATIVE_TRIGGERS)):
                return prior
        return None

    def _resolve(self, cand: Candidate) -> Candidate:
        """An anaphoric commitment ("I'll draft something by Wednesday") takes over what it refers to."""
        if not cand.anaphoric:
            return cand
        prior = self._antecedent(cand.speaker, cand.utterance_id, horizon=4)
        if prior is None:
            # "I'll do it today" with nothing to point at: the principal could not tell what it is.
            vague = len(_informative(cand.description)) < 2  # "Test it whenever.": nothing but the verb
            return cand.model_copy(update={"confidence": cand.confidence - (0.3 if vague else 0.15)})
        description = prior.description
        return cand.model_copy(update={
            "description": description,
            "action_type": action_type(description),
            "due": cand.due or prior.due,
            "confidence": max(cand.confidence, prior.confidence) + 0.15,
            "accepted": True,
            "antecedent_excerpt": prior.excerpt,
            # The earlier words say what the work is; the action cites them and both utterances.
            "excerpt": prior.excerpt,
            "excerpt_utterance_id": prior.excerpt_utterance_id,
        })

    def _accepted(self, utterance: Utterance) -> Candidate | None:
        """A short "Sure, I can do it" / "Will do" takes over a recent request or proposal."""
        text = utterance.text
        if len(text.split()) > 25 or not any(_ACCEPT.search(text[a:b]) for a, b in sentences(text)):
            return None
        prior = self._antecedent(utterance.speaker, utterance.id, horizon=8)
        if prior is None or (utterance.speaker not in prior.assignees and utterance.id - prior.utterance_id > 3):
            return None
        return prior.model_copy(update={
            "assignees": (utterance.speaker,),
            "confidence": max(prior.confidence, 0.45) + 0.25,
            "trigger": "self",
            "utterance_id": utterance.id,
            "speaker": utterance.speaker,
            "accepted": True,
            "antecedent_excerpt": prior.excerpt,
        })

    # -- proposing and merging --

    def _propose_or_merge(self, cand: Candidate) -> ProposedAction | None:
        same = self._restated(cand)
        ids = {cand.excerpt_utterance_id, cand.utterance_id}
        if same is None:
            action = ProposedAction(
                id=self.book.next_id(), action_type=cand.action_type, description=cand.description,
                assignees=list(cand.assignees), due=cand.due, supporting_excerpt=cand.excerpt,
                utterance_ids=sorted(ids),
            )
            action = self.book.put(action, cand.utterance_id)
            self._open.append(_Open(action, cand.utterance_id))
            return action
        old = same.action
        update: dict[str, object] = {}
        merged_ids = sorted({*old.utterance_ids, *ids})
        if merged_ids != old.utterance_ids:
            update["utterance_ids"] = merged_ids
        if cand.due and cand.due != old.due:
            update["due"] = cand.due
        assignees = list(cand.assignees) if cand.accepted else list(dict.fromkeys([*old.assignees, *cand.assignees]))
        if assignees != old.assignees:
            update["assignees"] = assignees
        if not cand.accepted and len(content_words(cand.description)) > len(content_words(old.description)) + 1:
            update["description"] = cand.description
            update["action_type"] = cand.action_type
        same.last_utterance = cand.utterance_id
        if not update:
            return None
        material = set(update) - {"utterance_ids"}
        action = old.model_copy(update=update)
        if not material:
            # A bare restatement: remember it, but do not bother the principal again.
            self.book.replace(action)
            same.action = action
            return None
        action = self.book.put(action, cand.utterance_id)
        same.action = action
        return action

    def _restated(self, cand: Candidate) -> _Open | None:
        best: tuple[float, _Open] | None = None
        for item in self._open:
            if cand.utterance_id - item.last_utterance > self.merge_window:
                continue
            if item.action.status == "rejected":
                continue
            if cand.antecedent_excerpt is not None and item.action.supporting_excerpt == cand.antecedent_excerpt:
                return item
            if not set(cand.assignees) & set(item.action.assignees):
                continue
            score = similarity(cand.description, item.action.description)
            if score >= 0.62 and (best is None or score > best[0]):
                best = (score, item)
        return best[1] if best else None
