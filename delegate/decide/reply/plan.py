"""The reply plan: what the latest turn asks of the principal, read before anything is composed.

A colleague answers a turn by what it asks: a fact ("when does it ship?"), a state ("is that fixed?"), a
task ("can you send the notes?"), a sign of life ("are you there?"), nothing at all ("thanks, that's
helpful"), a turn to add something ("anything from your side?"), a view ("what do you think?"), or a
private matter they decline. Read by rule from the turn's sentences, a few microseconds a turn: the
asking sentence decides (a thanks before a question is a preamble), and "and you?" takes its kind from
the question asked just before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from delegate.language.questions import personal_matter
from delegate.meeting import MeetingState
from delegate.models import Profile


class TurnKind(StrEnum):
    question = "question"
    """A question for a fact: answered from the item that holds it, else the holding line."""
    yes_no = "yes_no"
    """A question about a state: answered yes or no, then the state."""
    request = "request"
    """A task for the principal: acknowledged, and its action item proposed."""
    presence = "presence"
    """Are you there, can you hear us: "Yes, I'm here."."""
    thanks = "thanks"
    """Thanks or an acknowledgement: nothing to say."""
    invitation = "invitation"
    """A turn to add something: the one point that fits, or "Nothing more from me."."""
    opinion = "opinion"
    """A request for a view: the item that states one."""
    sensitive = "sensitive"
    """Someone's private matter or a rumour: declined, never promised."""
    none = "none"
    """Asks nothing in particular (a remark handed on): a remark that fits, or silence."""


@dataclass(frozen=True, slots=True)
class Plan:
    kind: TurnKind
    asked: str
    """The sentence of the turn that asks it (the whole turn when no sentence does)."""


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# A vocative or filler opening a sentence ("Maya, …", "[PERSON4], …", "Ehm. So, …"): not what is asked.
_LEAD = re.compile(
    r"^(?:\W*(?:(?:ehm|eh|uh|um|uhm|hmm|so|and|but|okay|ok|right|alright|well|now|then|yeah|yes|hey|hi)\b|"
    r"(?-i:\[[A-Z]+\d*\]|[A-Z][a-z]+(?=\s*,)))[\s,.!-]*)+",
    re.I,
)
_PRESENCE = re.compile(
    r"\b(?:are|r)\s+you\s+(?:still\s+)?(?:there|here|with\s+us|around|online|back|on\s+the\s+(?:call|line))\b|"
    r"\b(?:can|do|could)\s+you\s+(?:still\s+)?hear\s+(?:me|us)\b|\byou\s+(?:still\s+)?(?:there|with\s+us)\s*\?|"
    r"\bare\s+you\s*\?\s*$|\bstill\s+with\s+us\b|\bis\s+(?-i:\[[A-Z]+\d*\]|[A-Z][a-z]+)\s+(?:still\s+)?(?:there|here|with\s+us|on\s+the\s+(?:call|line))\s*\?",
    re.I,
)
# "Guys, do you hear me?" checks the line for everyone: not the principal's to answer.
_GROUP = re.compile(r"\b(?:guys|everyone|everybody|folks|all\s+of\s+you|you\s+all)\b", re.I)
_THANKS = re.compile(
    r"^\W*(?:(?:many\s+|great,?\s+|ok(?:ay)?,?\s+|perfect,?\s+)?(?:thanks|thank\s+you|thank\s+u|cheers)\b|appreciate\s+(?:it|that)\b|"
    r"that'?s\s+(?:really\s+|very\s+|super\s+)?(?:helpful|great|useful|perfect|good|clear|fine|brilliant)\b|"
    r"(?:(?:ok|okay|yeah|right|alright),?\s+)?(?:great|perfect|got\s+it|noted|understood|makes\s+sense|sounds\s+good|excellent|brilliant|"
    r"good\s+to\s+know|fair\s+enough|wonderful|lovely)\b)",
    re.I,
)
_INVITATION = re.compile(
    r"\banything\s+(?:else\s+|more\s+)?(?:from\s+(?:you|your\s+(?:side|end))|on\s+your\s+(?:side|end)|to\s+add|"
    r"(?:you(?:'d|\s+would)|you)\s+(?:like|want)\s+to\s+(?:add|raise|say|mention))|"
    r"\banything\s+else\b[^?]*\?|\bany(?:thing)?\s+(?:other\s+)?(?:updates?|news|points?|items?|input|questions?)\s+"
    r"(?:from\s+(?:you|your)|on\s+your|for\s+us)|\bsomething\s+to\s+add\b|\b(?:would|do)\s+you\s+(?:like|want)\s+to\s+(?:add|say|raise)\b|"
    r"\bover\s+to\s+you\b|\bthe\s+floor\s+is\s+yours\b|\byour\s+turn\b|\b(?:what|how)\s+about\s+you\b|^\W*(?:and\s+)?you\s*\?|"
    r"\b(?:let'?s|let\s+us)\s+(?:move|go|turn|hand|come)\s+(?:on\s+|over\s+)?to\s+(?:(?-i:\[[A-Z]+\d*\]|[A-Z][a-z]+)|"
    r"(?!(?:the|next|a|an|our|this|that|item|topic|point|it)\b)(?:\w\s+)?\w+\s*[.!?]?\s*$)|\bif\s+you\s+(?:can|could|want\s+to)\s+start\b|"
    r"\b(?:can|could|would|will)\s+you\s+start\b|\byou\s+wanted\s+to\s+(?:discuss|say|raise|add|mention|talk)\b|\banything\s+you\s+(?:would\s+|'d\s+)?(?:like|want)\b|"
    r"\beveryone\s+can\s+say\b|\bgo\s+(?:a)?round\s+the\s+(?:table|room)\b|\b(?:do|did)\s+you\s+have\s+any\s+(?:questions|comments|points)\b|"
    r"\byou\s+want\s+to\s+(?:discuss|add|say|raise)\s+(?:something|anything)\b|"
    r"\band\s+you\s*(?:,\s*(?-i:\[[A-Z]+\d*\]|[A-Z][a-z]+)\s*)?\?|\byour\s+(?:update|news)\b|\b(?:any|your)\s+updates?\s*\?|\bgo\s+ahead\b|\bdo\s+you\s+have\s+anything\b",
    re.I,
)
_REQUEST = re.compile(
    r"\b(?:can|could|would|will)\s+you\s+(?:please\s+|maybe\s+|also\s+|quickly\s+|just\s+|then\s+)*"
    r"(?P<verb>send|share|schedule|book|set\s+up|check|look\s+into|look\s+at|follow\s+up|update|write|draft|prepare|"
    r"review|take|own|make|paste|create|file|open|raise|ping|e-?mail|mail|forward|add|put|run|organi[sz]e|circulate|confirm|"
    r"sort|handle|find|reach\s+out|coordinate|arrange|fix|get|chase|invite|move|cancel|post|upload|log|document|do|"
    r"double-check|loop|contact|call|sign|approve|merge|ask|remind|note|collect|compile|lead|drive|join|cover|test|"
    r"investigate|bring|let\s+\w+\s+know|keep|pick\s+up|work\s+on|talk\s+to|speak\s+to|clarify|provide)\b|"
    r"\b(?:would\s+you\s+mind|can\s+i\s+ask\s+you\s+to|i(?:'d|\s+would)\s+like\s+you\s+to|i\s+need\s+you\s+to|"
    r"you(?:'ll|\s+will)\s+need\s+to|please\s+(?:send|share|schedule|book|check|follow|update|write|prepare|review|take|"
    r"add|make|circulate|confirm|look|get|sort|handle|draft|put|run|ping|forward|reach|try|install|follow|email|mail|"
    r"paste|upload|set|organi[sz]e|arrange|write|contact|coordinate|remind|let)\b|please\s+(?!note\b|see\b)(?-i:[a-z]+))\b|\blet'?s\s+meet\b|"
    r"^(?:(?:also|then|and|so|just)\s+)?(?:send|share|e-?mail|forward|book|schedule|paste|put|add|upload|circulate|ping)\s+(?:me|us|it|this|that|the|them|him|her)\b",
    re.I,
)
_OPINION = re.compile(
    r"\bwhat\s+do\s+you\s+(?:think|reckon|suggest|recommend|propose)\b|\bwhat(?:'s|\s+is)\s+your\s+(?:view|opinion|take|feeling|sense|position)\b|"
    r"\byour\s+(?:thoughts|view|views|opinion|take)\b|\bhow\s+do\s+you\s+(?:feel|see)\b|\bdo\s+you\s+(?:think|agree|reckon|feel|prefer|recommend|suggest)\b|"
    r"\bwould\s+you\s+(?:agree|say|recommend|suggest|prefer|go\s+with)\b|\b(?:any|what\s+are\s+your)\s+(?:thoughts|views|opinions?|comments|concerns|objections)\b|"
    r"\bdoes\s+(?:that|this)\s+(?:make\s+sense|sound\s+(?:right|good|ok|okay|reasonable))\b|\bare\s+you\s+(?:ok|okay|happy|fine|comfortable|good)\s+with\b|"
    r"\bwhat\s+would\s+you\s+(?:do|suggest|recommend|prefer)\b|^should\s+we\b|\bwhich\s+(?:one\s+)?(?:do\s+you|would\s+you)\s+(?:prefer|pick|choose)\b|"
    r"\b(?:what|which)(?:'s|\s+is|\s+would\s+be)\s+better\b|\bif\s+you\s+(?:disagree|agree|object)\b|"
    r"\bis\s+(?:that|this|it)\s+(?:a\s+good\s+idea|worth\s+it|reasonable|acceptable|ok(?:ay)?)\b|\bwhat\s+(?:do\s+)?you\s+think\b",
    re.I,
)
# A wh-question asked inside a yes/no frame ("do you know when it ships?") asks for the fact.
_EMBEDDED_WH = re.compile(
    r"\b(?:know|ask|tell\s+(?:me|us)|wonder(?:ing)?|remember|(?:an?\s+)?idea|sense)\b[^?.]{0,25}?\b(?:what|when|where|why|which|who|how)\b",
    re.I,
)
# A wh-word after a name ("…, [PERSON7], how did you …"), or after "so" in a question cut off ("So how many sessions -").
_WH_AFTER = re.compile(r"(?-i:\[PERSON\d*\]|\b[A-Z][a-z]+),\s+(?:how|what|when|where|why|which|who)\b", re.I)
_WH_CUT_ASKS = re.compile(r"\b(?:so|and|but)\s+(?:how|what|when|where|why|which|who)\b", re.I)
_WH_CUT = re.compile(r"\b(?:so|and|but)\s+(?:how|what|when|where|why|which|who)\b.*(?:-|–|—|\.\.\.)\W*$", re.I)
_ASKS_NOW = re.compile(
    r"\b(?:can|could|would)\s+you\s+(?:please\s+)?(?:tell|explain|present|give|walk|describe|summari[sz]e|say|comment|elaborate|clarify\s+for|remind\s+us|update\s+us)\b|"
    r"\bshare\s+(?:with\s+us\s+)?(?:that\s+)?(?:how|what|when|where|why|which|who)\b|\btell\s+us\b|\blet\s+(?:me|us)\s+know\s+(?:what|when|where|why|which|who|how|if|whether)\b|\bfill\s+us\s+in\b|\bwhere\s+are\s+we\s+(?:on|with)\b",
    re.I,
)
_WH = frozenset("what how when where why which who whom whose".split())
_AUX = frozenset(
    "is are was were do does did has have had can could will would should shall may might am "
    "isn aren wasn weren don doesn didn hasn haven won wouldn can couldn shouldn".split()
)
_TAG = re.compile(r"(?:,\s*|\s)(?:right|yes|no|correct|true|isn't\s+it|aren't\s+they|don't\s+you|didn't\s+it|hasn't\s+it|won't\s+it|ok|okay|yeah)\s*\?\s*$", re.I)
_WORD = re.compile(r"[A-Za-z]+")
_SUBJECTS = frozenset("you we they it he she there that this i anyone everyone".split())
_VOCATIVE = re.compile(r"\[PERSON\d*\]|\b(?!(?:Yeah|Yes|Okay|Ok|So|And|But|Well|Right|Alright|Now|Then|Exactly|Sure|Good|Great|Hm|Hmm|Um|Uh|Ehm)\b)[A-Z][a-z]+\s*,")
_CONFIRM = re.compile(r"\bif\s+I(?:'m|\s+am)\s+(?:correct|right)\b|\bso\s+you\s+mean\b|\bam\s+I\s+right\b", re.I)
_STATEMENT = re.compile(r"\b(?:is|are|was|were|it|that|this|there)\b", re.I)
_ALTERNATIVE = re.compile(r",?\s+or\s+(?!not\b|so\b)\w+", re.I)

# Priority of what a turn's sentences ask: the most demanding wins ("Thanks. Can you send it?" is a request).
_ORDER = (TurnKind.presence, TurnKind.sensitive, TurnKind.request, TurnKind.invitation, TurnKind.opinion, TurnKind.question, TurnKind.yes_no)
_BARE_INVITATION = re.compile(
    r"^\W*(?:and\s+)?(?:what|how)\s+about\s+(?:you|(?-i:\[PERSON\d*\]|[A-Z][a-z]+))\b|"
    r"^\W*(?:and\s+)?(?:maybe\s+)?(?:you|(?-i:\[PERSON\d*\]|[A-Z][a-z]+))\s*(?:,\s*(?-i:\[[A-Z]+\d*\]|[A-Z][a-z]+)\s*)?\?\s*$",
    re.I,
)
_NAME_WORD = re.compile(r"PERSON\d+|[A-Za-z]+")


def _core(sentence: str) -> str:
    """The sentence without the vocatives and fillers that open it."""
    return _LEAD.sub("", sentence.strip(), count=1).strip()


def _sentence_kind(sentence: str) -> TurnKind | None:
    """What one sentence asks, or None when it asks nothing."""
    core = _core(sentence)
    words = [w.lower() for w in _WORD.findall(core)]
    asks = "?" in sentence
    if len(words) < 2 and not (words and words[0] in _WH):
        return None  # "Point?", "Right?", fillers alone: nothing asked
    if _PRESENCE.search(sentence) and not _GROUP.search(sentence):
        return TurnKind.presence
    if personal_matter(core) and (asks or words[0] in _WH or words[0] in _AUX):
        return TurnKind.sensitive
    if _REQUEST.search(core) and not _ASKS_NOW.search(core):
        return TurnKind.request
    if _INVITATION.search(core):
        return TurnKind.invitation
    if _OPINION.search(core):
        return TurnKind.opinion
    if _ASKS_NOW.search(core) or words[0] in _WH or _WH_AFTER.search(core) or _WH_CUT.search(core) or (asks and _WH_CUT_ASKS.search(core)) or ((asks or words[0] in _AUX) and _EMBEDDED_WH.search(core)) or (asks and words[0] == "or"):
        return TurnKind.question
    if words[0] in _AUX and (asks or (len(words) > 3 and words[1] in _SUBJECTS)):
        # "Are we submitting RC3 as it is, or is another build coming?" asks which, not whether.
        return TurnKind.question if _ALTERNATIVE.search(core) and asks else TurnKind.yes_no
    if _TAG.search(sentence) or _CONFIRM.search(core):
        return TurnKind.yes_no
    if asks:
        if any(w in _WH for w in words):
            return TurnKind.question
        # "Mobile engineering?": a name for whose turn it is, as in a round of the table.
        return TurnKind.invitation if len(words) <= 3 and not _STATEMENT.search(core) else TurnKind.yes_no
    return None


def read_turn(text: str, before: str = "", names: frozenset[str] = frozenset()) -> Plan:
    """The plan for `text` addressed to the principal. `before`: the turn just before it by someone else,
    whose ask a bare "and you?" or "and maybe Priya?" passes on; `names`: the principal's names (lower
    case), whose sentence decides when several sentences ask ("Who from Kestrel? Would that be Priya?")."""
    sentences = [s for s in _SENTENCE.split(text.strip()) if s.strip()]
    if before and sentences and _BARE_INVITATION.match(sentences[-1]) and len(" ".join(sentences).split()) <= 6:
        earlier = read_turn(before)
        if earlier.kind in (TurnKind.question, TurnKind.yes_no, TurnKind.opinion, TurnKind.request):
            return earlier
    found = [(k, s) for s in sentences if (k := _sentence_kind(s)) is not None]
    if sentences and not _WORD.search(_core(sentences[-1])) and _VOCATIVE.search(sentences[-1]):
        # It ends on a name alone ("OK, so, so [PERSON3], um -"): the floor is handed to them.
        found.append((TurnKind.invitation, sentences[-1]))
    named = [f for f in found if "?" in f[1] and names & {w.lower() for w in _NAME_WORD.findall(f[1])}]
    if found:
        # The most demanding ask; of two of a kind, the later (a turn ends on what it asks).
        pool = named or found
        kind, asked = min(reversed(pool), key=lambda f: _ORDER.index(f[0]))
        return Plan(kind, asked)
    if sentences and all(_THANKS.match(_core(s) or s) for s in sentences):
        return Plan(TurnKind.thanks, text.strip())
    if sentences and _THANKS.match(_core(sentences[0]) or sentences[0]) and len(text.split()) <= 8:
        return Plan(TurnKind.thanks, text.strip())
    return Plan(TurnKind.none, text.strip())


def plan_for(meeting: MeetingState, principal: Profile) -> Plan:
    """The plan for the meeting's latest turn, read with the last turn before it that asked something (by
    someone other than the principal: a bare "and you?" passes it on) and the principal's names."""
    last = meeting.last
    if last is None:
        return Plan(TurnKind.none, "")
    label = principal.speaker_label
    earlier = (t.utterance.text for t in reversed(list(meeting.recent)[-4:-1]) if t.utterance.speaker != label)
    before = next((text for text in earlier if read_turn(text).kind not in (TurnKind.none, TurnKind.thanks)), "")
    names = frozenset(w.lower() for n in (principal.name, *principal.aliases, label) for w in _NAME_WORD.findall(n))
    return read_turn(last.text, before, names)
