"""Is there future work in this sentence? Each trigger (commitment, request, assignment, ...) and its verb,
after what rules a clause out: past, negated, conditional, about the meeting room itself, no work named.
And how sure that the clause is a real action item (`confidence`).
"""
from __future__ import annotations

import re

from delegate.actions.describe import anaphoric, overlapping
from delegate.actions.models import SELF_TRIGGERS, Detection
from delegate.actions.vocabulary import (
    AGENDA_VERBS,
    ASKED_BY,
    BASE,
    BASE_FORM,
    CLAUSE_BREAK,
    CONDITION,
    DANGLING,
    DONE,
    GENERIC_YOU,
    GET_WORK,
    HEDGE,
    IN_MEETING,
    INTERRUPTION,
    NEGATED,
    NOT_YET,
    ONGOING_VERBS,
    PATTERNS,
    STRONG_VERBS,
    SUBORDINATE,
    UNOWNED,
    WEAK_VERBS,
    WORK_VERBS,
)
from delegate.language.text import content_words

LONG_TURN_WORDS = 40
"""A turn at least this long narrates more than it asks: its bare imperatives count for less."""


def detect(sentence: str) -> list[Detection]:
    """Every trigger of future work in `sentence`, overlapping ones included, that survives the filters."""
    out: list[Detection] = []
    for trigger, pattern in PATTERNS:
        for m in overlapping(pattern, sentence):
            d = _detection(trigger, m, sentence)
            if d is not None:
                out.append(d)
    return out


def _detection(trigger: str, m: re.Match[str], sentence: str) -> Detection | None:
    verb = m.group("verb").lower()
    if verb not in WORK_VERBS or (trigger == "imperative" and (verb not in STRONG_VERBS or BASE_FORM.get(verb) != verb)):
        return None
    clause = sentence[m.start("verb"):]
    if NEGATED.match(sentence[m.end("verb"):]) or re.search(r"\b(not|n't|never)\s*$", sentence[: m.start("verb")]):
        return None
    # "I already sent it" is done; "I will write to [PERSON7] - I already talked with him" is not.
    done_scope = sentence[: m.end("verb")] + CLAUSE_BREAK.split(clause[len(m.group("verb")):], maxsplit=1)[0]
    if IN_MEETING.search(clause) or INTERRUPTION.search(sentence) or DONE.search(done_scope):
        return None
    if trigger == "please" and UNOWNED.search(sentence):
        return None  # "could someone please ...": nobody owns it yet
    pronoun = anaphoric(clause)
    if verb in WEAK_VERBS and len(content_words(clause)) < 3 and not pronoun:
        return None
    if trigger == "lets" and verb in AGENDA_VERBS:
        return None  # "let's start with the postponed review": running the meeting
    if verb in {"let", "lets"} and not re.match(r"let \S+(?: \S+)? know", clause, re.I):
        return None
    before = sentence[: m.start()]
    groups = m.groupdict()
    asked_by = trigger in {"assign", "nominate"} and bool(ASKED_BY.search(before))
    return Detection(
        # "I was asked by [PERSON9] to give her talk": the speaker took it on, not the one who asked.
        trigger="self" if asked_by else trigger,  # type: ignore[arg-type]
        verb=verb, clause=clause, before=before, who=None if asked_by else groups.get("who"),
        anaphoric=pronoun, asked_by=asked_by,
    )


def confidence(d: Detection, sentence: str, description: str, due: str | None, named: bool, replying: bool,
               turn_words: int) -> float:
    """How likely the detection is an action item, from its trigger and cues around it."""
    c = BASE[d.trigger]
    verb, clause, before = d.verb, d.clause, d.before
    if replying and d.trigger in SELF_TRIGGERS:
        c += 0.15  # "I can ask them." in answer to "can't we borrow devices?": taking something on
    if CONDITION.search(NOT_YET.sub(" ", before)):
        c -= 0.2  # "if [PERSON11] will write it": a condition, not a commitment
    elif d.trigger in SELF_TRIGGERS and SUBORDINATE.search(before):
        c -= 0.2  # "so that I should be able to prepare ...", "a service where I can send ...": not a commitment
    if d.trigger == "you_modal" and GENERIC_YOU.search(sentence):
        c -= 0.2  # "usually you have to ...": generic you
    if d.trigger == "request" and re.search(r"\bwould you\b(?! please| mind)", sentence, re.I):
        c -= 0.1  # "would you propose ...?" asks an opinion more often than work
    if verb in STRONG_VERBS or verb == "let":  # "let" only ever as "let [PERSON11] know": informing someone
        c += 0.15
    if due:
        c += 0.1
    if named:
        c += 0.1
    if HEDGE.search(sentence):
        c -= 0.1
    words = content_words(clause)
    if len(words) < 2:
        c -= 0.25
    elif len(words) >= 4:
        c += 0.05
    if sentence.rstrip().endswith("?") and d.trigger in {"self", "self_weak", "we", "we_weak", "lets"}:
        c -= 0.3  # "should I send you a link?" offers; it does not commit
    if d.trigger == "imperative" and turn_words > LONG_TURN_WORDS:
        c -= 0.15  # imperatives inside a long turn mostly narrate steps ("upload the file, run ...")
    if DANGLING.search(description):
        c -= 0.1  # "Ask [PERSON9] if.": the clause broke off, what is asked is not said
    if verb in {"get", "got", "getting"} and not GET_WORK.match(clause):
        c -= 0.1  # "get enough variance", "get your cursor next to ...": rarely work to do
    elif BASE_FORM.get(verb) in ONGOING_VERBS and not d.anaphoric:
        c -= 0.1  # "I will work with [PERSON1]", "start the machine", "do a print out": activity, no deliverable
    return c
