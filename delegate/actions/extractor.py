"""`ActionExtractor`: one final utterance at a time through the stages, sentence by sentence.

detect (is there future work, which trigger) -> assign (whose) -> describe (an imperative sentence) ->
classify (type, due) -> confidence -> the book: a commitment is proposed at once, a request waits for its
acceptance (`delegate.actions.book`), a restatement updates the open action it restates.
Everything kept is bounded (deques), so an utterance costs the same at minute 1 and minute 90.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import date
from typing import Protocol, runtime_checkable

from delegate.actions import classify
from delegate.actions.assign import assign
from delegate.actions.book import ActionBook, OpenItems, Requests, merged
from delegate.actions.describe import imperative, informative, sentences
from delegate.actions.detect import confidence, detect
from delegate.actions.models import REQUEST_TRIGGERS, TENTATIVE_TRIGGERS, Candidate
from delegate.actions.vocabulary import ACCEPT, ASKS, OWNER, SELF_ACCEPT, VOCATIVE_REACH
from delegate.addressing import Addressee, Roster, answered, named
from delegate.language.similarity import warm_up
from delegate.meeting import MeetingState
from delegate.models import ProposedAction, Utterance


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
    book: ActionBook = field(init=False)
    _open: OpenItems = field(init=False)
    _requests: Requests = field(init=False)
    _recent: deque[Candidate] = field(init=False)
    """Recent candidates, proposed or not: what "I'll do it" and "will do" refer back to."""
    _roster: Roster = field(init=False)

    def __post_init__(self) -> None:
        self.book = ActionBook(principal=self.principal)
        self._open = OpenItems(merge_window=self.merge_window)
        self._requests = Requests()
        self._recent = deque(maxlen=12)
        self._roster = Roster()
        warm_up()  # load the embeddings and the date parser now, not inside the first utterance
        classify.warm_up()

    @property
    def actions(self) -> list[ProposedAction]:
        return self.book.actions

    def apply_feedback(self, action_id: str, approve: bool) -> ProposedAction:
        action = self.book.apply_feedback(action_id, approve)
        self._open.refresh(action)
        return action

    def revise(self, action: ProposedAction, utterance_id: int | None) -> ProposedAction:
        """Record a new version of an action made outside this extractor (a refinement); restatements
        merge into it from now on."""
        action = self.book.put(action, utterance_id)
        self._open.refresh(action)
        return action

    def observe(self, meeting: MeetingState) -> list[ProposedAction]:
        utterance = meeting.last
        if utterance is None or not utterance.final:
            return []
        if self._roster.stale(meeting):
            self._roster = Roster.of(meeting)
        previous = answered(meeting, utterance)
        replying = previous is not None and _asked(meeting, utterance)
        found: list[Candidate] = []
        for cand in self.candidates(utterance, previous, meeting.attendees, replying, meeting.date):
            # In sentence order, so "let me check with the legal office. I'll ask them" resolves "them".
            cand = self._resolve(cand)
            self._recent.append(cand)
            found.append(cand)
        if not found:
            taken = self._taken(utterance)
            if taken is not None:
                self._recent.append(taken)
                found.append(taken)
        kept = [c for c in found if c.confidence >= self.threshold]
        for cand in kept:
            if cand.antecedent_excerpt is not None:
                self._requests.taken(cand.antecedent_excerpt)  # "I can do it": theirs now, no longer waiting
        kept += [c for c in self._requests.settle(utterance) if c.confidence >= self.threshold]
        out: dict[str, ProposedAction] = {}
        for cand in sorted(kept, key=lambda c: -c.confidence):
            # A request to the principal is theirs to accept or decline with feedback: it goes out at once.
            waits = self.principal is None or self.principal not in cand.assignees
            if cand.trigger in REQUEST_TRIGGERS and not cand.accepted and cand.accepted_by is None and waits:
                if cand.assignees:
                    self._requests.hold(cand)
                continue
            if not cand.assignees:
                continue
            action = self._propose_or_merge(cand)
            if action is not None:
                out[action.id] = action
        return list(out.values())

    # -- candidates --

    def candidates(self, utterance: Utterance, previous: str | None, attendees: list[str] | None = None,
                   replying: bool = False, meeting_date: date | None = None) -> list[Candidate]:
        """Every clause of `utterance` that reads as an action item, the likeliest one per sentence.

        `previous` is who the speaker answers; `replying`, whether that turn asked or requested something."""
        text = utterance.text
        turn_words = len(text.split())
        out: list[Candidate] = []
        earlier: list[str] = []  # the turn's sentences before this one
        for start, end in sentences(text):
            sentence = text[start:end]
            best: Candidate | None = None
            detections = detect(sentence)
            if detections:
                spoken_to = self._spoken_to(sentence, earlier, utterance.speaker, previous)
            for d in detections:
                who = assign(d, utterance.speaker, spoken_to, attendees or [], self._roster)
                if who is None:
                    continue
                description = imperative(d.clause, utterance.speaker, who.assignees, who.addressee, self._roster.spoken)
                if len(informative(description)) < 2 and not d.anaphoric:  # "Register today.", "Schedule accordingly."
                    continue
                due = classify.find_due(d.clause)
                score = confidence(d, sentence, description, due, who.named, replying, turn_words)
                if best is not None and score <= best.confidence:
                    continue
                best = Candidate(
                    utterance_id=utterance.id, excerpt_utterance_id=utterance.id, speaker=utterance.speaker,
                    trigger=d.trigger, assignees=who.assignees, description=description, excerpt=sentence.strip(),
                    action_type=classify.action_type(description), due=due,
                    due_date=classify.due_date(due, meeting_date), confidence=score, anaphoric=d.anaphoric,
                )
            if best is not None:
                out.append(best)
            elif out and out[-1].trigger in TENTATIVE_TRIGGERS and SELF_ACCEPT.match(sentence):
                # "Maybe we should first create a template? Would do that.": the speaker takes their own proposal.
                out[-1] = out[-1].model_copy(update={
                    "trigger": "self", "confidence": max(out[-1].confidence, 0.45) + 0.25, "accepted": True})
            elif (owner := OWNER.search(sentence)) is not None:
                # "We need to book a Zoom slot. And I think [PERSON7] is responsible for that."
                label = self._roster.resolve(owner.group("who"))
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

    def _spoken_to(self, sentence: str, earlier: list[str], speaker: str, previous: str | None) -> list[Addressee]:
        """Who a sentence is spoken to: its vocatives, else the nearest ones earlier in the turn ("[PERSON15],
        could you prepare a poll? ... Could you email him tomorrow?") or its opening, else the person answered."""
        for text in (sentence, *earlier[: -VOCATIVE_REACH - 1: -1], *earlier[:1]):
            found = named(text, speaker, self._roster)
            if found:
                return found
        return [Addressee(label=previous, how="exchange", score=0.5)] if previous is not None else []

    def _antecedent(self, speaker: str, utterance_id: int, horizon: int) -> Candidate | None:
        """The recent candidate a bare "I'll do it" / "will do" by `speaker` takes on: one assigned to them,
        a request by someone else, or their own tentative "we can ..." proposal."""
        for prior in reversed(self._recent):
            if utterance_id - prior.utterance_id > horizon:
                break
            if prior.anaphoric:
                continue
            if (speaker in prior.assignees or (prior.speaker != speaker and prior.trigger in REQUEST_TRIGGERS)
                    or (prior.speaker == speaker and prior.trigger in TENTATIVE_TRIGGERS)):
                return prior
        return None

    def _resolve(self, cand: Candidate) -> Candidate:
        """An anaphoric commitment ("I'll draft something by Wednesday") takes over what it refers to."""
        if not cand.anaphoric:
            return cand
        prior = self._antecedent(cand.speaker, cand.utterance_id, horizon=4)
        if prior is None:
            # "I'll do it today" with nothing to point at: the principal could not tell what it is.
            vague = len(informative(cand.description)) < 2  # "Test it whenever.": nothing but the verb
            return cand.model_copy(update={"confidence": cand.confidence - (0.3 if vague else 0.15)})
        shared = cand.trigger in {"we", "we_weak"} and cand.speaker in prior.assignees
        return cand.model_copy(update={
            # "Yes, we can do that" from one of several people asked: theirs together; "I'll do it": the speaker's.
            "assignees": prior.assignees if shared else cand.assignees,
            "description": prior.description,
            "action_type": prior.action_type,
            "due": cand.due or prior.due,
            "due_date": cand.due_date or prior.due_date,
            "confidence": max(cand.confidence, prior.confidence) + 0.15,
            "accepted": True,
            "accepted_by": cand.utterance_id if prior.speaker != cand.speaker else None,
            "antecedent_excerpt": prior.excerpt,
            # The earlier words say what the work is; the action cites them and both utterances.
            "excerpt": prior.excerpt,
            "excerpt_utterance_id": prior.excerpt_utterance_id,
        })

    def _taken(self, utterance: Utterance) -> Candidate | None:
        """A short "Sure, I can do it" / "Will do" takes over a recent request or proposal."""
        text = utterance.text
        if len(text.split()) > 25 or not any(ACCEPT.search(text[a:b]) for a, b in sentences(text)):
            return None
        prior = self._antecedent(utterance.speaker, utterance.id, horizon=8)
        if prior is None or (utterance.speaker not in prior.assignees and utterance.id - prior.utterance_id > 3):
            return None
        return prior.model_copy(update={
            # "Yes, we can do that" from one of several people asked: still theirs together.
            "assignees": prior.assignees if utterance.speaker in prior.assignees else (utterance.speaker,),
            "confidence": max(prior.confidence, 0.45) + 0.25,
            "trigger": "self",
            "utterance_id": utterance.id,
            "speaker": utterance.speaker,
            "accepted": True,
            "accepted_by": utterance.id if prior.speaker != utterance.speaker else None,
            "antecedent_excerpt": prior.excerpt,
        })

    # -- proposing and merging --

    def _propose_or_merge(self, cand: Candidate) -> ProposedAction | None:
        same = self._open.restated(cand)
        if same is None:
            ids = {cand.excerpt_utterance_id, cand.utterance_id}
            action = ProposedAction(
                id=self.book.next_id(), action_type=cand.action_type, description=cand.description,
                assignees=list(cand.assignees), due=cand.due, due_date=cand.due_date,
                supporting_excerpt=cand.excerpt, utterance_ids=sorted(ids), accepted_by_utterance=cand.accepted_by,
            )
            action = self.book.put(action, cand.accepted_by if cand.accepted_by is not None else cand.utterance_id)
            self._open.add(action, cand.utterance_id)
            return action
        old = same.action
        update = merged(old, cand)
        same.last_utterance = cand.utterance_id
        if not update:
            return None
        action = old.model_copy(update=update)
        if not set(update) - {"utterance_ids"}:
            # A bare restatement: remember it, but do not bother the principal again.
            self.book.replace(action)
            same.action = action
            return None
        action = self.book.put(action, cand.utterance_id)
        same.action = action
        return action


def _asked(meeting: MeetingState, utterance: Utterance) -> bool:
    """Whether the turn `utterance` answers asked or requested something."""
    for turn in reversed(meeting.recent):
        if turn.utterance.id != utterance.id and turn.utterance.speaker != utterance.speaker:
            return bool(ASKS.search(turn.utterance.text))
    return False
