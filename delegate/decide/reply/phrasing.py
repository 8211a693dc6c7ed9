"""Phrasing: a record of the brief as the sentences a colleague would say of it.

A brief built from workplace sources holds records, not speech: a mail opens with "Hi all," and ends with
a name, a ticket carries its key and a field list, a document starts with its title and its owner, a
calendar entry is a summary and a timestamp. Read out, they are pasted, not said. Each item's text is
turned, by rule and for any organisation's records, into whole sentences a person speaks: a ticket as
its subject and state ("Face ID login fails after a passcode change: that's resolved."), a meeting as
its day and time, a mail as what it says; no greeting, sign-off, address, URL, header, bullet or key.
Numbers and dates are kept as written. What no rule can make speakable is left out, never guessed at.

A brief the principal wrote passes through nearly unchanged: it is already said in their words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from functools import lru_cache

from delegate.models import BackgroundItem
from delegate.speakable import defects

MAX_SENTENCE_WORDS = 40
"""A sentence longer than this is a paragraph run together: left out."""
MIN_SENTENCE_WORDS = 3
"""Shorter is a label ("For agents.", "DRAFT."), not something said."""
MAX_TICKET_NAME_WORDS = 8
"""A ticket's summary short enough to say in place of its key ("the Add to Apple Wallet ticket")."""

# Sentences, and clauses after a `;` (kept with it, as the brief's own sentences are split for choosing). An
# abbreviation's full stop ends no sentence: "structured by modules, e.g. morphology" cut there left "e.g." dangling.
SENTENCE = re.compile(r"(?<=[.!?;])(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bcf\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bMrs\.)\s+")
_KEY = r"[A-Z][A-Z0-9]{1,9}-\d{1,6}"
_TICKET_HEAD = re.compile(rf"^(?P<key>{_KEY})\s+(?P<summary>.+?)\s+\((?P<facts>[^()]*\b(?:status|priority|assigned to|due)\b[^()]*)\)\.?\s*")
_FACT = re.compile(r"^(status|priority|assigned to|assignee|reporter|due)\s*[:=]?\s*(.+)$", re.I)
_WHEN = re.compile(
    r"^(?P<summary>.+?),\s+(?P<dow>Mon|Tue|Wed|Thu|Fri|Sat|Sun)\w*\s+(?P<day>\d{1,2})\s+(?P<month>[A-Z][a-z]{2})\w*\s+"
    r"(?P<year>\d{4})\s+(?P<time>\d{1,2}:\d{2})(?:\s+(?P<tz>[A-Z]{2,5}))?\.?\s*"
)
_DAYS = {"Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday", "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday"}
_MONTHS = {m[:3]: m for m in "January February March April May June July August September October November December".split()}
_STATES = {
    "done": "is done",
    "resolved": "is resolved",
    "closed": "is closed",
    "fixed": "is fixed",
    "verified": "is fixed and verified",
    "in progress": "is in progress",
    "in review": "is in review",
    "code review": "is in review",
    "to do": "hasn't started yet",
    "todo": "hasn't started yet",
    "open": "is still open",
    "reopened": "is open again",
    "backlog": "is in the backlog",
    "blocked": "is blocked",
    "won't do": "isn't being done",
    "wontfix": "isn't being done",
}
_DONE = frozenset({"is done", "is resolved", "is closed", "is fixed", "is fixed and verified", "isn't being done"})
_ISO_DATE = re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<month>0[1-9]|1[0-2])-(?P<day>0[1-9]|[12]\d|3[01])\b(?!\s*\d{1,2}:)")

_GREETING_LINE = re.compile(r"^\s*(hi|hello|hey|dear|good (morning|afternoon|evening))\b[^.!?\n]{0,30}[,!:]?\s*$", re.I)
_GREETING_LEAD = re.compile(r"^\s*(hi|hello|hey|dear|good (morning|afternoon|evening))\b[^.!?,\n]{0,30}[,!]\s*", re.I)
_SIGN_OFF = re.compile(
    r"^\s*(thanks|thank you|many thanks|thanks again|best|cheers|regards|kind regards|best regards|warm regards|"
    r"all the best|speak soon|talk soon)\b[^.!?\n]{0,30}[,!.]?\s*$",
    re.I,
)
_SIGNATURE = re.compile(r"^\s*(--\s*|sent from my .*|on .{5,80} wrote:)\s*$", re.I)
_MAIL_HEADER = re.compile(r"^\s*(from|to|cc|bcc|subject|date|sent|when|where|re|fwd?)\s*:", re.I)
_META = re.compile(
    r"^\s*(owner|author|authors|last updated|updated|last modified|modified|created|version|prepared by|reviewers?|"
    r"approvers?|audience|classification|confidential|draft|status|doc(ument)? id|shared with|do not forward)\b[^.!?]{0,60}[.!]?$",
    re.I,
)
_SHOUTED = re.compile(r"^[^a-z]*[A-Z]{2,}[^a-z]*$")
"""A line in capitals throughout ("MASTER SERVICES AGREEMENT", "CONFIDENTIAL - DRAFT"): a header."""
_CAPS_HEADER = re.compile(r"\b[A-Z]{3,}(\s+[A-Z]{3,})+\s*:\s*")
_BULLET = re.compile(r"^\s*([-*•·▪‣]|\d{1,2}[.)])\s+")
_TRAILING_NUMBER = re.compile(r"(?<=:)\s+\d{1,2}[.)]$")
"""A list's first number left at the end of the sentence that opens the list ("If a release goes wrong: 1.")."""
_EMAIL = re.compile(r"<?\b([\w.+-]+)@[\w-]+\.[\w.-]+\b>?")
_URL = re.compile(r"\(?\b(?:https?://|www\.)\S+?\)?(?=[\s,;]|[.!?](?:\s|$)|$)", re.I)
_QUESTION_LABEL = re.compile(r"^\s*Q\s*[:.]", re.I)
_ANSWER_LABEL = re.compile(r"^\s*A\s*[:.]\s*", re.I)
_MENTION = re.compile(r"<@\w+>|:[a-z_]+:")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself)\b")
_ORPHAN = re.compile(r"\s+([,.;:!?])")


def _state(facts: str) -> tuple[str, str, str]:
    """The state (as a verb), the assignee and the due date in a ticket's field list."""
    state = assignee = due = ""
    for part in facts.split(","):
        m = _FACT.match(part.strip())
        if not m:
            continue
        name, value = m.group(1).lower(), m.group(2).strip()
        if name == "status":
            state = _STATES.get(value.lower(), f"is {value[:1].lower()}{value[1:]}")
        elif name in ("assigned to", "assignee"):
            assignee = value
        elif name == "due":
            due = value
    return state, assignee, due


def said_date(m: re.Match[str]) -> str:
    """An ISO date as a person says it: "2025-03-28" -> "Friday 28 March" (the year is the meeting's own)."""
    try:
        day = date(int(m.group("year")), int(m.group("month")), int(m.group("day")))
    except ValueError:
        return m.group(0)
    return f"{day:%A} {day.day} {day:%B}"


def _holder(assignee: str, speaker: str) -> str:
    """Who has a ticket, as a colleague says it: "I have it" for the speaker, else the first name."""
    if speaker and assignee.casefold() in {speaker.casefold(), speaker.split()[0].casefold()}:
        return "I have it"
    return f"{assignee.split()[0]} has it"


def ticket_sentence(summary: str, facts: str, speaker: str = "") -> str:
    """A ticket said as its subject and state, in the speaker's voice: "Face ID login fails after a
    passcode change — that's resolved.", "VoiceOver labels missing — that hasn't started yet; Nikhil has it,
    due Friday 28 March."."""
    state, assignee, due = _state(facts)
    said = summary.strip().rstrip(".")
    if not state:
        return f"{said}." if not assignee else f"{said} — {_holder(assignee, speaker)}."
    tail = "that's " + state.removeprefix("is ") if state.startswith("is ") else f"that {state}"
    if state not in _DONE:
        if assignee:
            tail += f"; {_holder(assignee, speaker)}"
        if due:
            tail += f", due {_ISO_DATE.sub(said_date, due)}"
    return f"{said} — {tail}."


def _when(m: re.Match[str]) -> str:
    day = int(m.group("day"))
    month = _MONTHS.get(m.group("month"), m.group("month"))
    tz = f" {m.group('tz')}" if m.group("tz") else ""
    return f"{m.group('summary').strip()} is on {_DAYS[m.group('dow')[:3]]} {day} {month} {m.group('year')} at {m.group('time')}{tz}."


def _name_of_address(m: re.Match[str]) -> str:
    # "priya.raman@…" is said as the person it names.
    local = re.split(r"[+]", m.group(1))[0]
    parts = [p for p in re.split(r"[._-]", local) if p.isalpha()]
    return " ".join(p.capitalize() for p in parts) if parts else "them"


def _lines(text: str) -> list[str]:
    """The record's lines with the letter and the form taken off: greeting, sign-off and signature, quoted
    mail, mail headers, metadata lines; a bullet is said as its line."""
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _SIGNATURE.match(line) or _SIGN_OFF.match(line):
            break  # what follows a sign-off or a quoted mail's header is the signature or the old mail
        if line.startswith(">") or _GREETING_LINE.match(line) or _MAIL_HEADER.match(line) or _SHOUTED.match(line):
            continue
        if not out:
            line = _GREETING_LEAD.sub("", line)
        line = _BULLET.sub("", line)
        if line and line[-1] not in ".!?:;":
            line += "."
        out.append(line)
    # A lone first name after the last sentence is the letter's signature.
    if len(out) > 1 and re.fullmatch(r"[A-Z][a-z]+(\s[A-Z][a-z]+)?\.", out[-1]):
        out.pop()
    return out


_NAME_ENDS = re.compile(
    r"^(?:fails?|failing|crash(?:es|ing)?|missing|broken|not|no longer|doesn't|does|can't|cannot|won't|is|are|"
    r"shows?|hangs?|freezes|after|when|while|on|in|for|with|from|during|because|via|\w+ing)$"
)


_VERB_S = re.compile(r"^[a-z]{3,}[^su]s$")
"""A summary's verb after its subject ("Scanner app drops …"), not a plural noun in first place."""
_PREPOSITIONS = frozenset("on in for with from during after before at by via of".split())


def _ticket_name(key: str, tickets: Mapping[str, str]) -> str:
    """How a ticket is said in place of its key: by the subject its summary opens with ("Face ID login fails
    after a passcode change" -> "the Face ID login ticket"), else by the summary itself."""
    summary = re.split(r"\s*[(:]", tickets.get(key, ""), maxsplit=1)[0].strip()
    if not summary:
        return "that ticket"
    words = summary.split()
    cut = next((n for n, w in enumerate(words[1:], 1) if _NAME_ENDS.match(w) or (n >= 2 and _VERB_S.match(w))), len(words))
    if 2 <= cut < len(words) or len(words) <= 4:
        return f"the {' '.join(words[:cut])} ticket"
    # "Crash opening the card freeze screen on Android 9": said up to its first preposition.
    until = next((n for n, w in enumerate(words[2:], 2) if w in _PREPOSITIONS), MAX_TICKET_NAME_WORDS)
    if words[0][1:].islower() and words[1][:1].islower():
        words[0] = words[0].lower()  # a word, not a name
    return f"the ticket on the {' '.join(words[:until])}"


def _keys_said(s: str, tickets: Mapping[str, str]) -> str:
    """Ticket keys as the tickets' names; a key its own summary follows ("MOB-447 VoiceOver labels missing")
    is simply left out."""

    def said(m: re.Match[str]) -> str:
        summary = tickets.get(m.group(0), "")
        after = s[m.end() :].lstrip()
        if summary and after[:12].casefold() == summary[:12].casefold():
            return ""
        return _ticket_name(m.group(0), tickets)

    return re.sub(rf"\b{_KEY}\b", said, s)


_ROLE = re.compile(r"^(?P<role>[a-z][a-z -]{1,30}?)\s+(?P<name>[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,2})$")
_INSTRUCTION = re.compile(
    r"^(?:(?:from|on|in)\s+the\s+[^,]{1,40},\s*)?(?:open|tap|click|press|select|choose|navigate|scroll|swipe|"
    r"go\s+to|log\s+in|sign\s+in|enter|type|follow\s+the\s+steps)\b",
    re.I,
)
"""A step of a help article ("Open the card screen and tap Freeze."): said to a customer, not in a meeting."""
_READER = re.compile(r"\byou(?:r|rs|'ll|'re|'ve|'d)?\b", re.I)
"""A record's "you" is its reader (a customer, the principal in a mail), not anyone in the meeting."""
_NOTE_FRAGMENT = re.compile(r"^.{0,60}\b(?:e\.g|i\.e|etc|cf|vs)\.?$|^\S+\s*\.$", re.I)
"""A note cut short ("I'm structuring it by modules, e.g.") or a one-word line."""
_CUT_ABBREVIATION = re.compile(r"(?:,\s*(?:e\.g|i\.e|cf|vs)|[,;]?\s+(?:but|and|or|so|because))\.(?=\s+[A-Z]|\s*$)")
"""A note's sentence left on an abbreviation or a conjunction ("by modules, e.g.", "not very common; but.")."""
_IF_LABEL = re.compile(r"^If (?P<case>[\w-]+(?:\s[\w-]+)?):\s+(?=[a-z])")
"""A plan's note ("If go: promote RC3 unchanged."), said as "If go, we promote RC3 unchanged."."""
_NO_SUBJECT_VERB = re.compile(r"^(?P<verb>[A-Z][a-z]+(?:es|s))\s+(?=(?:the|a|an|all|this|that|its|our|their|every)\b)")
_NO_SUBJECT_PARTICIPLE = re.compile(r"^(?P<verb>[A-Z][a-z]+ed)\s+(?=(?:from|to|by|on|in|at|for|after|before|until|since|with)\b)")
_NOT_VERBS = frozenset({"this", "his", "has", "was", "is", "does", "yes", "plus", "thus", "less", "unless", "news", "always", "perhaps", "sometimes", "bus", "status", "bonus", "focus", "access", "process", "success", "business", "address", "progress", "class", "analysis", "basis", "series", "gas", "its", "as", "us", "users", "customers", "teams", "tests", "updates", "notes", "details", "results", "changes"})


def _subject_given(s: str) -> str:
    """A note's sentence without its subject, said with one: "Replaces the February rota" -> "It replaces the
    February rota"; "Reassigned from Dan to Nikhil" -> "It was reassigned from Dan to Nikhil"."""
    m = _IF_LABEL.match(s)
    if m:
        return f"If {m.group('case')}, we {s[m.end():]}"
    m = _NO_SUBJECT_PARTICIPLE.match(s)
    if m:
        return f"It was {m.group('verb').lower()} {s[m.end():]}"
    m = _NO_SUBJECT_VERB.match(s)
    if m and m.group("verb").lower() not in _NOT_VERBS:
        return f"It {m.group('verb').lower()} {s[m.end():]}"
    return s


def _first_person_verb(verb: str) -> str:
    """The verb after "I" that followed the speaker's name: "owns" -> "own", "is" -> "am"."""
    irregular = {"is": "am", "has": "have", "does": "do", "was": "was", "goes": "go"}
    if verb in irregular:
        return irregular[verb]
    if re.search(r"(?:sh|ch|x|ss|z)es$", verb):
        return verb[:-2]
    if verb.endswith("ies") and len(verb) > 4:
        return verb[:-3] + "y"
    if verb.endswith("s") and not verb.endswith("ss"):
        return verb[:-1]
    return verb


def voiced(s: str, speaker: str) -> str:
    """A record's sentence in the speaker's voice: their own name said as "I" or "me", and a sheet's list of
    roles ("primary Sofia Marchetti, secondary Nikhil Bose, escalation Priya Raman") said as who is what."""
    if not speaker.strip():
        return s
    first = speaker.split()[0]
    me = rf"(?:{re.escape(speaker)}|{re.escape(first)})"
    head, colon, rest = s.rpartition(": ")
    if colon:
        parts = [p.strip().rstrip(".") for p in re.split(r",\s*|\s+and\s+", rest)]
        roles = [_ROLE.match(p) for p in parts]
        if len(parts) >= 2 and all(roles):
            others = [f"{m.group('name').split()[0]} is {m.group('role')}" for m in roles if m and not re.fullmatch(me, m.group("name"))]
            mine = [f"me as {m.group('role')}" for m in roles if m and re.fullmatch(me, m.group("name"))]
            said = ", ".join(others[:-1]) + (" and " if len(others) > 1 else "") + (others[-1] if others else "")
            s = f"{head}: {said}, with {mine[0]}." if mine and others else f"{head}: {said}." if others else s
    s = re.sub(rf"(^|[.;:]\s+|,\s+and\s+|\band\s+)(?:{me})\s+(?P<verb>[a-z]+)\b", lambda m: f"{m.group(1)}I {_first_person_verb(m.group('verb'))}", s)
    s = re.sub(rf"\b{me}'s\b", "my", s)
    return re.sub(rf"\b{me}\b(?!\s+[A-Z])", "me", s)


def capitalised(s: str) -> str:
    """`s` with a capital first letter, unless its first word is a name written in lower case on purpose
    ("iOS", "card_freeze_v2", "kyc_sdk_v3")."""
    first = s.split(maxsplit=1)[0] if s.strip() else ""
    if not first or not first[0].islower() or any(c.isupper() or c.isdigit() or c == "_" for c in first):
        return s
    return s[0].upper() + s[1:]


def _clean(sentence: str, tickets: Mapping[str, str], title: str, speaker: str = "") -> str:
    """One sentence as said, or "" when it is a label, a header, a question of a form or cannot be said."""
    s = _MENTION.sub("", sentence).strip()
    if not s or _QUESTION_LABEL.match(s) or _META.match(s):
        return ""
    s = _ANSWER_LABEL.sub("", s)
    if s.startswith("(") and s.rstrip(".").endswith(")") and s.count("(") == 1:
        s = s.rstrip(".")[1:-1].strip().rstrip(".") + "."
    s = _CAPS_HEADER.sub("", s)
    s = _BULLET.sub("", s)
    s = _TRAILING_NUMBER.sub("", s)
    if " | " in s:
        # A table row: its cells that say something, as one sentence.
        cells = [c.strip(" .") for c in s.split("|")]
        s = "; ".join(c for c in cells if len(_WORD.findall(c)) >= MIN_SENTENCE_WORDS)
        s = f"{s}." if s else ""
    s = re.sub(rf"\s*\(\s*(?:{_KEY})(?:\s*,\s*{_KEY})*\s*\)", "", s)
    s = re.sub(rf",?\s+that's\s+{_KEY}\b", "", s)
    s = _keys_said(s, tickets)
    s = _URL.sub("the link", s)
    s = _EMAIL.sub(_name_of_address, s)
    s = re.sub(r"\s*\((?:status|priority|assigned to|due)\b[^()]*\)", "", s, flags=re.I)
    s = _ISO_DATE.sub(said_date, s)
    s = voiced(s, speaker)
    s = _ORPHAN.sub(r"\1", _SPACES.sub(" ", s)).strip()
    if _INSTRUCTION.match(s) or _NOTE_FRAGMENT.match(s) or _READER.search(s):
        return ""
    s = _subject_given(s)
    s = capitalised(s)
    if not s or s.endswith(":") or s.rstrip(".").strip().casefold() == title.casefold():
        return ""
    words = len(s.split())
    if words < MIN_SENTENCE_WORDS or words > MAX_SENTENCE_WORDS:
        return ""
    # Whatever no rule above could make speakable is left out.
    return "" if defects(s, max_words=MAX_SENTENCE_WORDS) else s


def _title(item: BackgroundItem) -> str:
    """The record's name, as its reader put it in the context ("Document: Support FAQ" -> "Support FAQ")."""
    return item.context.split(":", 1)[1].strip() if item.source and ":" in item.context else ""


def sayable(item: BackgroundItem, tickets: Mapping[str, str] | None = None, speaker: str = "") -> list[str]:
    """The item's text as sentences a colleague would say, in the record's order (empty: nothing sayable).

    `tickets`: ticket keys to their summaries, so that a key inside a sentence is said as the ticket's name.
    `speaker`: who says it (the principal); another author's "I" is theirs, not the speaker's to say."""
    return list(_sayable(item.information, item.context, item.source or "", tuple(sorted((tickets or {}).items())), speaker))


def author(item: BackgroundItem) -> str:
    """Who wrote a message, as its reader named it in the context ("Mail from Lena Fischer: …",
    "Slack #release, Lena Fischer"); "" when the record has no single author."""
    if item.source == "gmail":
        m = re.match(r"^Mail from\s+(.+?):", item.context)
        return m.group(1).strip() if m else ""
    if item.source == "slack":
        return item.context.rsplit(",", 1)[-1].strip() if "," in item.context else ""
    return ""


@lru_cache(maxsize=4096)
def _sayable(information: str, context: str, source: str, tickets: tuple[tuple[str, str], ...], speaker: str) -> tuple[str, ...]:
    item = BackgroundItem(context=context, information=information, source=source or None)  # type: ignore[arg-type]
    if not item.source:
        # The principal's own notes: already in their words (the composer makes them first person); only a
        # sentence the split left on an abbreviation or a conjunction ("by modules, e.g.") loses it.
        return tuple(s.strip() for s in SENTENCE.split(_CUT_ABBREVIATION.sub(".", information)) if s.strip())
    writer = author(item)
    someone_else = bool(writer and speaker and writer.casefold() != speaker.casefold())
    names = dict(tickets)
    text = " ".join(_lines(information))
    lead: list[str] = []
    head = _TICKET_HEAD.match(text)
    if head:
        names.setdefault(head.group("key"), head.group("summary"))
        lead.append(ticket_sentence(_clean_summary(head.group("summary"), names), head.group("facts"), speaker))
        text = text[head.end() :]
    when = _WHEN.match(text)
    if when:
        lead.append(_when(when))
        text = text[when.end() :]
    title = _title(item)
    out = [s for s in lead if not defects(s, max_words=MAX_SENTENCE_WORDS)]
    for sentence in SENTENCE.split(text):
        said = _clean(sentence, names, title, speaker)
        if said and someone_else and _FIRST_PERSON.search(said):
            continue  # "I'll close it after the go/no-go" was its writer's word, not the principal's
        if said and said not in out:
            out.append(said)
    return tuple(out)


def _clean_summary(summary: str, tickets: Mapping[str, str]) -> str:
    return _keys_said(_URL.sub("the link", summary), tickets)


def ticket_names(items: list[BackgroundItem]) -> dict[str, str]:
    """Ticket keys to their summaries, from the brief's tickets (their reader's context "Jira KEY: summary")."""
    out: dict[str, str] = {}
    for item in items:
        m = re.match(rf"^\w+\s+({_KEY}):\s*(.+)$", item.context) if item.source and item.shareable else None
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out
