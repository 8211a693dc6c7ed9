"""Who took on what: questions about the meeting's commitments answered from its action items.

"Who will send the release notes?" is not answered by whoever talks most about release notes, and "What
did Amara commit to?" not by the question she was asked: the meeting's action items (`delegate.actions`:
a commitment is its speaker's, an accepted request its addressee's) say who took on what, and the turns
they rest on. The answer is a sentence ("Amara Obi will send the release notes by Friday") with those turns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from delegate.actions import ActionExtractor
from delegate.language.questions import QUESTION_WORDS, QuestionType
from delegate.language.similarity import similarity
from delegate.language.text import MASK, content_words
from delegate.meeting import MeetingState
from delegate.models import ProposedAction

# A question about someone's work to do ("What did Amara commit to?", "What is Bob taking on?").
COMMITMENT_QUESTION = re.compile(
    r"\b(commit(?:s|ted)?|agree[ds]? to|took on|take[sn]? on|taking on|promise[ds]?|sign(?:ed)? up|volunteer(?:ed|s)?|"
    r"responsible for|on the hook|action items?|assigned|asked to|supposed to|going to do|will do|"
    r"(?:said|say) (?:she|he|they)(?:'d| would| will))\b",
    re.IGNORECASE,
)
# A who-question about work someone takes on ("Who will send…?", "Who can change…?", "Who agreed to…?"), not
# about a role or a fact ("Who is the data provider?").
WHO_TAKES = re.compile(
    r"\bwho(?:'s|\s+is|\s+was|\s+were)?\s+(?:will|'ll|going\s+to|gonna|supposed\s+to|responsible|in\s+charge|taking|takes|took|"
    r"agreed|volunteered|asked|assigned|committed|promised|handles|handling|doing|does|did|can|could|should|would|sends?|sent)\b",
    re.IGNORECASE,
)
# The words of "who will ...?" that say nothing of the work itself.
_ASKING = frozenset(content_words("who will is going to do take took on agreed agree said committed commit asked was were supposed"))
MIN_FIT = 0.35
"""A who-question's work must fit an action item's description this well to be answered from it."""
MIN_SHARED = 0.5
"""More than this share of the question's own words must be in the description: "the press release" is not "the release notes"."""
QUOTE_WORDS = 24


@dataclass(frozen=True, slots=True)
class Found:
    """An answer from the action items: its text and the indices (in the meeting) of the turns it rests on."""

    text: str
    turns: list[int]
    score: float


def people_named(meeting: MeetingState, text: str) -> set[str]:
    """Labels of the people a text names: `[PERSON3]` masks, or display names (full or first) of attendees."""
    found = {m.group(1) for m in MASK.finditer(text)}
    words = set(re.findall(r"[A-Z][\w'-]+", text))
    for label, name in meeting.names.items():
        parts = name.split()
        if parts and (parts[0] in words or name in text):
            found.add(label)
    return found


class Commitments:
    """The action items of each meeting, found once per meeting length by the embedded extractor."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, list[ProposedAction]]] = {}

    def actions(self, meeting: MeetingState) -> list[ProposedAction]:
        seen = self._seen.get(meeting.meeting_id)
        if seen is not None and seen[0] == len(meeting.utterances):
            return seen[1]
        replay = MeetingState(meeting.meeting_id, names=dict(meeting.names), attendees=list(meeting.attendees), date=meeting.date)
        extractor = ActionExtractor()
        for utterance in meeting.utterances:
            replay.add(utterance)
            extractor.observe(replay)
        actions = [a for a in extractor.actions if a.assignees and a.status != "rejected"]
        self._seen[meeting.meeting_id] = (len(meeting.utterances), actions)
        return actions

    def forget(self, meeting_id: str) -> None:
        self._seen.pop(meeting_id, None)

    def answer(self, meeting: MeetingState, question: str, kind: QuestionType) -> Found | None:
        """The answer from the action items, or None when the question is not about them (or none fits)."""
        people = set(meeting.attendees) | set(meeting.names)
        named = people_named(meeting, question) & people
        if named and COMMITMENT_QUESTION.search(question):
            return _theirs(meeting, named, self.actions(meeting))
        if kind is QuestionType.who and WHO_TAKES.search(question):
            return _who_took(meeting, question, self.actions(meeting))
        return None


def _work(question: str) -> set[str]:
    return content_words(question) - QUESTION_WORDS - _ASKING


def _who_took(meeting: MeetingState, question: str, actions: list[ProposedAction]) -> Found | None:
    work = _work(question)
    if not work:
        return None
    scored = []
    for action in actions:
        shared = len(work & content_words(action.description)) / len(work)
        scored.append((0.5 * shared + 0.5 * similarity(question, action.description), shared, action))
    if not scored:
        return None
    score, shared, best = max(scored, key=lambda s: s[0])
    if shared <= MIN_SHARED or score < MIN_FIT:
        return None
    return Found(_said(meeting, best), _turns(meeting, best), score)


def _theirs(meeting: MeetingState, named: set[str], actions: list[ProposedAction]) -> Found | None:
    mine = [a for a in actions if named & set(a.assignees)]
    if not mine:
        who = " and ".join(meeting.display_name(p) for p in sorted(named))
        return Found(f"Nothing so far: no action item in this meeting falls to {who}.", [], 0.5)
    said = [_said(meeting, a) for a in mine[:2]]
    turns = list(dict.fromkeys(t for a in mine[:2] for t in _turns(meeting, a)))
    return Found(" ".join(said), turns, 0.8)


def _index(meeting: MeetingState, utterance_id: int) -> int | None:
    return next((k for k, u in enumerate(meeting.utterances) if u.id == utterance_id), None)


def _turns(meeting: MeetingState, action: ProposedAction) -> list[int]:
    ids = [action.accepted_by_utterance] if action.accepted_by_utterance is not None else []
    ids += action.utterance_ids[:1]
    return [k for k in dict.fromkeys(_index(meeting, i) for i in ids) if k is not None]


def _quote(meeting: MeetingState, index: int) -> str:
    u = meeting.utterances[index]
    words = MASK.sub(lambda m: meeting.names.get(m.group(1), m.group(1)), u.text).split()
    text = " ".join(words[:QUOTE_WORDS]) + ("…" if len(words) > QUOTE_WORDS else "")
    return f"turn {u.id}, {meeting.display_name(u.speaker)}: “{text}”"


def _said(meeting: MeetingState, action: ProposedAction) -> str:
    """The action item as a sentence: who will do what, and (in brackets) the turns it rests on."""
    who = " and ".join(meeting.display_name(p) for p in action.assignees)
    work = action.description.strip().rstrip(".")
    work = work[0].lower() + work[1:] if work[:1].isupper() and not work[1:2].isupper() else work
    turns = _turns(meeting, action)
    asked = action.accepted_by_utterance is not None and len(turns) > 1
    how = " (asked, and agreed" if asked else " (said so"
    quotes = "; ".join(_quote(meeting, k) for k in reversed(turns))
    return f"{who} will {work}{how}: {quotes})."
