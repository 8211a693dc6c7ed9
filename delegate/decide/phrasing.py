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
from functools import lru_cache

from delegate.models import BackgroundItem
from delegate.speakable import defects

MAX_SENTENCE_WORDS = 40
"""A sentence longer than this is a paragraph run together: left out."""
MIN_SENTENCE_WORDS = 3
"""Shorter is a label ("For agents.", "DRAFT."), not something said."""
MAX_TICKET_NAME_WORDS = 8
"""A ticket's summary short enough to say in place of its key ("the Add to Apple Wallet ticket")."""

# Sentences, and clauses after a `;` (kept with it, as the brief's own sentences are split for choosing).
SENTENCE = re.compile(r"(?<=[.!?;])\s+")
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
    "done": "done",
    "resolved": "resolved",
    "closed": "closed",
    "fixed": "fixed",
    "in progress": "in progress",
    "in review": "in review",
    "code review": "in review",
    "to do": "not started yet",
    "todo": "not started yet",
    "open": "still open",
    "backlog": "in the backlog",
    "blocked": "blocked",
    "won't do": "not being done",
    "wontfix": "not being done",
}
_DONE = frozenset({"done", "resolved", "closed", "fixed", "not being done"})

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
    """The state, the assignee and the due date in a ticket's field list."""
    state = assignee = due = ""
    for part in facts.split(","):
        m = _FACT.match(part.strip())
        if not m:
            continue
        name, value = m.group(1).lower(), m.group(2).strip()
        if name == "status":
            state = _STATES.get(value.lower(), value.lower())
        elif name in ("assigned to", "assignee"):
            assignee = value
        elif name == "due":
            due = value
    return state, assignee, due


def ticket_sentence(summary: str, facts: str) -> str:
    """A ticket said as its subject and state: "Face ID login fails after a passcode change: that's resolved."."""
    state, assignee, due = _state(facts)
    said = summary.strip().rstrip(".")
    if not state:
        return f"{said}." if not assignee else f"{said}: {assignee} has it."
    tail = f"that's {state}"
    if assignee and state not in _DONE:
        tail += f" with {assignee}"
    if due and state not in _DONE:
        tail += f" and due {due}"
    return f"{said}: {tail}."


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


def _ticket_name(key: str, tickets: Mapping[str, str]) -> str:
    """How a ticket is said in place of its key: by its summary (cut at a bracket or colon)."""
    summary = re.split(r"\s*[(:]", tickets.get(key, ""), maxsplit=1)[0].strip()
    if not summary:
        return "that ticket"
    words = summary.split()
    if len(words) <= MAX_TICKET_NAME_WORDS:
        return f"the {summary} ticket"
    return f"the ticket on {' '.join(words[:MAX_TICKET_NAME_WORDS + 2])}"


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


def capitalised(s: str) -> str:
    """`s` with a capital first letter, unless its first word is a name written in lower case on purpose
    ("iOS", "card_freeze_v2", "kyc_sdk_v3")."""
    first = s.split(maxsplit=1)[0] if s.strip() else ""
    if not first or not first[0].islower() or any(c.isupper() or c.isdigit() or c == "_" for c in first):
        return s
    return s[0].upper() + s[1:]


def _clean(sentence: str, tickets: Mapping[str, str], title: str) -> str:
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
    s = _ORPHAN.sub(r"\1", _SPACES.sub(" ", s)).strip()
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
        # The principal's own notes: already in their words (the composer makes them first person).
        return tuple(s.strip() for s in SENTENCE.split(information) if s.strip())
    writer = author(item)
    someone_else = bool(writer and speaker and writer.casefold() != speaker.casefold())
    names = dict(tickets)
    text = " ".join(_lines(information))
    lead: list[str] = []
    head = _TICKET_HEAD.match(text)
    if head:
        names.setdefault(head.group("key"), head.group("summary"))
        lead.append(ticket_sentence(_clean_summary(head.group("summary"), names), head.group("facts")))
        text = text[head.end() :]
    when = _WHEN.match(text)
    if when:
        lead.append(_when(when))
        text = text[when.end() :]
    title = _title(item)
    out = [s for s in lead if not defects(s, max_words=MAX_SENTENCE_WORDS)]
    for sentence in SENTENCE.split(text):
        said = _clean(sentence, names, title)
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
