"""What a question asks for: its type (who / what / when / how many), the words that say nothing about
which turn answers it, and the patterns an answer's core is found with (people, dates and times, numbers)."""

from __future__ import annotations

import re
from enum import StrEnum

from delegate.language.text import content_words


class QuestionType(StrEnum):
    who = "who"
    what = "what"
    when = "when"
    howmany = "howmany"


# --- question typing --------------------------------------------------------------------------------

_HOWMANY = re.compile(r"\bhow\s+(many|much|long|often|big|large|old)\b", re.I)
_WHEN = re.compile(
    r"\b(when|what\s+time|what\s+date|which\s+(day|date|week|month)|deadline|how\s+soon|"
    r"before,?\s+during\s+or\s+after)\b",
    re.I,
)
_WHO = re.compile(r"\b(who|whom|whose|which\s+(person|people|participant|member|one of them))\b", re.I)


def question_type(question: str) -> QuestionType:
    """who / what / when / howmany from the question's wording; `what` covers everything else."""
    head = question.strip()
    if _HOWMANY.search(head):
        return QuestionType.howmany
    who, when = _WHO.search(head), _WHEN.search(head)
    if who and (not when or who.start() < when.start()):
        return QuestionType.who
    if when:
        return QuestionType.when
    return QuestionType.what


# Words every question about a meeting carries; they say nothing about which turn answers it.
QUESTION_WORDS = content_words(
    "meeting meetings discuss discussed discussion mention mentioned talk talked person people "
    "participant participants happen happened happening decide decided plan planned"
)
TOPIC = re.compile(
    r"\b(purpose|goal|aim|topic|subject|agenda|main\s+point)s?\b.{0,40}\b(meeting|call|discussion)\b|"
    r"\bwhat\s+(was|is)\s+(the|this)\s+(meeting|call|discussion)\s+(mainly\s+)?about\b",
    re.I,
)
PARTICIPANTS = re.compile(
    r"\b(participants?|attendees?|attended|who\s+(was|were)\s+(there|present|in\s+the\s+meeting))\b", re.I
)

# --- what an answer's core is found with -----------------------------------------------------------

FILLER = re.compile(r"\b(uh|um|uhm|ehm|eh|em|hmm|mhm|mm|ah)\b[,.]?\s*", re.I)
# "I think", "I mean", "I guess" hedge; they do not say the speaker does anything.
FIRST_PERSON = re.compile(r"\b(I(?!\s+(think|mean|guess|believe|suppose|don't know)\b)|I'm|I'll|I've|I'd|me|my|myself)\b")
# "may" is a month only as "May": the modal verb is far more common.
_MONTHS = "january february march april (?-i:May) june july august september october november december"
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"
TEMPORAL = re.compile(
    r"\b((next|this|last|following)\s+(week|month|year|time|meeting|" + _WEEKDAYS.replace(" ", "|") + r")|"
    r"(end|beginning|middle)\s+of\s+(the\s+)?(week|month|year|" + _MONTHS.replace(" ", "|") + r")|"
    r"(" + _WEEKDAYS.replace(" ", "|") + r")|"
    r"(" + _MONTHS.replace(" ", "|") + r")(\s+\d{1,2}(st|nd|rd|th)?)?|"
    r"\d{1,2}(st|nd|rd|th)?\s+(of\s+)?(" + _MONTHS.replace(" ", "|") + r")|"
    r"tomorrow|today|tonight|yesterday|after\s+lunch|before\s+lunch|in\s+the\s+(morning|afternoon|evening)|"
    r"in\s+(a|one|two|three|four|five|six|\d+)\s+(days?|weeks?|months?|hours?)|"
    r"\d{1,2}[:.]\d{2}|\d{1,2}\s*(am|pm|o'clock)|(19|20)\d{2}|"
    r"(during|before|after)\s+(the\s+)?(covid|corona|lockdown|summer|winter|holidays?|conference))\b",
    re.I,
)
NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty "
    "hundred thousand million half dozen couple"
)
NUMBER = re.compile(
    r"\b((\d+(?:[.,]\d+)?%?)|(" + NUMBER_WORDS.replace(" ", "|") + r"))\b(\s+[a-z]+)?", re.I
)
NOT_UNITS = frozenset("and or of the to is are was were it that this in on at for with but so".split())



# --- a matter a colleague does not discuss in a meeting ----------------------------------------------

# Someone's career, pay, health or leave, and rumours of reorganisation or lay-offs: asked about in a
# meeting, a colleague declines ("That's not something I can get into here.") whatever they know, and
# whether or not they know it. Read from the question alone, so the refusal tells nothing of the brief.
_PERSONAL = re.compile(
    r"\b((?:up\s+for|his|her|their|\w+'s)\s+promotion|promoted\s+to\s+(?:senior|lead|manager|head|director)|pay\s+rise|salary|salaries|performance\s+(?:review|plan)s?|disciplinary|"
    r"lay-?offs?|redundanc(?:y|ies)|re-?orgs?|reorganis(?:ation|ing)|reorganiz(?:ation|ing)|rumou?rs?|gossip|"
    r"resign(?:ed|ing|ation)?|handing\s+in\s+(?:his|her|their)\s+notice|off\s+sick|sick\s+leave|illness|"
    r"pregnan(?:t|cy)|maternity|paternity|parental\s+leave|medical\s+leave|on\s+leave|compassionate|bereavement|"
    r"divorce|personal\s+(?:reasons?|matters?|life)|out\s+for\s+(?:a\s+while|long|some\s+time|a\s+few\s+weeks))",
    re.I,
)


def personal_matter(question: str) -> bool:
    """Whether a question asks about a person's private matters or a rumour (see `_PERSONAL`)."""
    return bool(_PERSONAL.search(question))
