"""The meeting's action items: the book of proposed actions and their events, the open items restatements
merge into, and the requests waiting to be accepted.

Acceptance rule: a request (someone asked to do something) becomes an action item when it is accepted:
- the addressee (any of them) takes the next turn within `ACCEPT_WINDOW` utterances without objecting
  ("Sure.", "By when?", anything but "No, I can't ..."): accepted by that turn; an objection drops it;
- someone takes it over explicitly ("I can do it", "I'll draft something by Wednesday"): accepted by that turn,
  and it is theirs;
- otherwise, when `ACCEPT_WINDOW` utterances pass and nobody objected (the topic moved on, which is how most
  requests of a chair are accepted): accepted, unopposed, by the turn that closed the window.
A request nobody was asked by name or by turn-taking ("who can review it?") waits only for an explicit taker.
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from delegate.actions.models import ActionEvent, Candidate
from delegate.language.similarity import similarity
from delegate.language.text import content_words
from delegate.models import ActionStatus, ActionType, ProposedAction, Utterance

ACCEPT_WINDOW = 4
"""Utterances after a request within which its addressee answers, or after which it stands unopposed."""
RESTATED = 0.62
"""Description similarity from which a candidate restates an open action of the same people."""

_OBJECTION = re.compile(
    r"^\W*(?:(?:well|but|sorry|uh|um|hmm|ah|oh)\W+)*(?:no\b(?!\s+problem)|nope|not (?:me|now|really|yet|this week)\b|"
    r"I\s*(?:can(?:no|['’])?t|cannot|won['’]t|will not|don['’]t (?:think|have|know if)|am not|['’]m not|"
    r"(?:would|['’]d) rather not)\b)", re.I)

OFFERS: dict[ActionType, str] = {
    "send_email": "I can draft this email for you.",
    "schedule_meeting": "I can propose times and draft the invitation for you.",
    "share_document": "I can find the document and draft the message to share it.",
    "review": "I can summarise it and list the points to check for you.",
    "follow_up": "I can draft the follow-up message for you.",
    "create_task": "I can add this to your task list.",
    "other": "I can add this to your task list and remind you.",
}


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
        action = action.model_copy(update={"for_principal": mine, "offer": OFFERS[action.action_type] if mine else None})
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


_DONE_NOW = re.compile(
    r"\b(?:here it is|here you go|(?:it'?s|that'?s) done|done already|already (?:did|done|sent|shared|posted)|"
    r"I(?:'ve| have)? (?:just )?(?:sent|shared|posted|put|uploaded|pasted) (?:it|that|the link|them)\b)", re.I)


def done_now(text: str) -> bool:
    """The answer does the work on the spot ("Here it is", "I've just sent it"): nothing is left to track."""
    return bool(_DONE_NOW.search(text))


def objects(text: str) -> bool:
    """The turn declines what was just asked ("No, I can't this week", "I don't think I have time")."""
    return bool(_OBJECTION.search(text))


@dataclass
class Requests:
    """Requests waiting for acceptance (see the module docstring); bounded by `max_waiting`."""

    window: int = ACCEPT_WINDOW
    max_waiting: int = 16
    _waiting: deque[Candidate] = field(init=False)

    def __post_init__(self) -> None:
        self._waiting = deque(maxlen=self.max_waiting)

    def hold(self, cand: Candidate) -> None:
        self._waiting.append(cand)

    def taken(self, excerpt: str) -> None:
        """Someone took the request quoted by `excerpt` over explicitly: it is no longer waiting."""
        self._waiting = deque((c for c in self._waiting if c.excerpt != excerpt), maxlen=self.max_waiting)

    def settle(self, utterance: Utterance) -> list[Candidate]:
        """The requests `utterance` accepts (an addressee answering, or the window closing unopposed), as
        accepted candidates; those it declines are dropped."""
        out: list[Candidate] = []
        keep: deque[Candidate] = deque(maxlen=self.max_waiting)
        for cand in self._waiting:
            answered = utterance.speaker in cand.assignees and utterance.id > cand.utterance_id
            if answered and (objects(utterance.text) or done_now(utterance.text)):
                continue
            if answered or (cand.assignees and utterance.id - cand.utterance_id >= self.window):
                out.append(cand.model_copy(update={"accepted_by": utterance.id}))
            elif utterance.id - cand.utterance_id < self.window:
                keep.append(cand)
        self._waiting = keep
        return out


@dataclass
class _Open:
    action: ProposedAction
    last_utterance: int


@dataclass
class OpenItems:
    """Recent actions a new candidate may restate (same people, similar description, within `merge_window`)."""

    merge_window: int = 120
    max_open: int = 24
    _open: deque[_Open] = field(init=False)

    def __post_init__(self) -> None:
        self._open = deque(maxlen=self.max_open)

    def add(self, action: ProposedAction, utterance_id: int) -> None:
        self._open.append(_Open(action, utterance_id))

    def refresh(self, action: ProposedAction) -> None:
        for item in self._open:
            if item.action.id == action.id:
                item.action = action

    def restated(self, cand: Candidate) -> _Open | None:
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
            if score >= RESTATED and (best is None or score > best[0]):
                best = (score, item)
        return best[1] if best else None


def merged(old: ProposedAction, cand: Candidate) -> dict[str, object]:
    """What a restatement changes in an open action (empty: nothing)."""
    update: dict[str, object] = {}
    merged_ids = sorted({*old.utterance_ids, cand.excerpt_utterance_id, cand.utterance_id})
    if merged_ids != old.utterance_ids:
        update["utterance_ids"] = merged_ids
    if cand.due and cand.due != old.due:
        update["due"] = cand.due
        update["due_date"] = cand.due_date
    assignees = list(cand.assignees) if cand.accepted else list(dict.fromkeys([*old.assignees, *cand.assignees]))
    if assignees != old.assignees:
        update["assignees"] = assignees
    if cand.accepted_by is not None and old.accepted_by_utterance is None:
        update["accepted_by_utterance"] = cand.accepted_by
    if not cand.accepted and len(content_words(cand.description)) > len(content_words(old.description)) + 1:
        update["description"] = cand.description
        update["action_type"] = cand.action_type
    return update

