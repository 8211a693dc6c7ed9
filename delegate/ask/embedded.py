"""Ask the delegate: a short, grounded answer to a question about the meeting so far, offline, in milliseconds.

The question's type (who / what / when / how many) decides what the answer is made of: a person named in
or speaking the turns that bear on it, a date or time expression, a number, or the best sentence. The
answer names the speakers and the turn ids it used; when no turn bears on the question it says so
instead of guessing. The principal's own notes (background items) are searched only when the principal
asks, and every answer text leaves through `outbound_text`, which keeps private items from anyone else.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter

import structlog
from pydantic import BaseModel

from delegate import guard
from delegate.ask.base import NO_ANSWER, WITHHELD, Answer, Audience
from delegate.ask.calibration import AskCalibration
from delegate.ask.calibration import shipped as shipped_calibration
from delegate.ask.commitments import Commitments, people_named
from delegate.ask.retrieval import Hit, TurnIndex, sentences
from delegate.language.questions import (
    FILLER,
    FIRST_PERSON,
    NOT_UNITS,
    NUMBER,
    PARTICIPANTS,
    QUESTION_WORDS,
    TEMPORAL,
    TOPIC,
    QuestionType,
    question_type,
)
from delegate.language.similarity import similarity
from delegate.language.text import MASK, content_words, stem, tokens
from delegate.meeting import MeetingState
from delegate.models import Profile

log = structlog.get_logger(__name__)

def _quote(text: str, max_words: int = 30) -> str:
    words = FILLER.sub("", text).split()
    out = " ".join(words[:max_words])
    return out + ("…" if len(words) > max_words else "")


def _unmask(text: str, meeting: MeetingState) -> str:
    return MASK.sub(lambda m: meeting.names.get(m.group(1), m.group(0)), text)


class _Sentence(BaseModel):
    text: str
    hit_index: int
    score: float


class AskSettings:
    turns = 8
    """Turns retrieved per question."""
    sentence_weight = 0.5
    """A sentence's score: this share from its own fit to the question, the rest from its turn's."""
    min_score = 0.2
    """Below this (best sentence) nothing in the meeting answers the question."""
    notes_min = 0.45
    """A principal's note must fit the question this well to be part of the answer."""
    second_person = 0.85
    """A second person is named when they score this share of the first."""
    full_sentence = 5
    """Sentences with fewer content words than this count for proportionally less."""
    extract_sentences = 6
    """Sentences searched for a date or a number."""
    topic_words = 6
    """A question about the whole meeting is answered with this many of its most recurrent words."""
    opening_turns = 30
    more_evidence = 0.2
    """Who-answers: each further sentence naming a person adds this share of its score to theirs."""
    question_sentence = 0.4
    """A sentence that asks something restates the question more often than it answers it."""
    reply_turns = 2
    reply_weight = 0.9
    """The turns after a retrieved question are candidates too, at this share of its score."""


def _ranked_sentences(question: str, hits: list[Hit], index: TurnIndex) -> list[_Sentence]:
    q_words = content_words(question) - QUESTION_WORDS
    weight = {w: index.idf(w) for w in q_words}
    total = sum(weight.values()) or 1.0
    own_by_hit: list[list[tuple[str, float]]] = []
    for hit in hits:
        rows = []
        for s in sentences(hit.utterance.text):
            words = content_words(s)
            if not words:
                continue
            shared = sum(weight[w] for w in words & q_words) / total
            # A fragment ("The book.") matches a question's topic word but answers nothing.
            own = (0.5 * shared + 0.5 * similarity(question, s)) * min(1.0, len(words) / AskSettings.full_sentence)
            rows.append((s, own))
        own_by_hit.append(rows)
    # A reply answers what its turn was asked: it inherits part of the asking sentence's fit.
    best_own = {hit.index: max((o for _, o in rows), default=0.0) for hit, rows in zip(hits, own_by_hit, strict=True)}
    out: list[_Sentence] = []
    w = AskSettings.sentence_weight
    for h_index, (hit, rows) in enumerate(zip(hits, own_by_hit, strict=True)):
        inherited = 0.0
        if hit.reply_to is not None:
            inherited = AskSettings.reply_weight ** (hit.index - hit.reply_to) * best_own.get(hit.reply_to, 0.0)
        for s, own in rows:
            own = max(own, inherited) if not s.endswith("?") else own * AskSettings.question_sentence
            out.append(_Sentence(text=s, hit_index=h_index, score=w * own + (1 - w) * hit.score))
    out.sort(key=lambda s: -s.score)
    return out


def _with_replies(meeting: MeetingState, hits: list[Hit]) -> list[Hit]:
    """The hits, plus the turns right after a hit that asks something: that is where its answer is.

    A reply that was retrieved on its own keeps its place but is marked as the reply it also is.
    """
    out = list(hits)
    position = {h.index: k for k, h in enumerate(hits)}
    for hit in hits:
        if "?" not in hit.utterance.text or hit.reply_to is not None:
            continue
        for step in range(1, AskSettings.reply_turns + 1):
            i = hit.index + step
            if i >= len(meeting.utterances):
                break
            score = hit.score * AskSettings.reply_weight**step
            reply = Hit(meeting.utterances[i], i, score, hit.lexical, reply_to=hit.index)
            if i not in position:
                position[i] = len(out)
                out.append(reply)
            elif out[position[i]].reply_to is None:
                known = out[position[i]]
                out[position[i]] = Hit(known.utterance, i, max(known.score, score), known.lexical, reply_to=hit.index)
    return out


def _enough_overlap(question: str, hits: list[Hit]) -> bool:
    """Some turn shares at least one of the question's own words (not the words every question about a meeting has)."""
    q_words = content_words(question) - QUESTION_WORDS
    return any(content_words(h.utterance.text) & q_words for h in hits)


class _Draft(BaseModel):
    text: str
    hits: list[int]
    score: float


def _source(meeting: MeetingState, hit: Hit, quote: str) -> str:
    return f"turn {hit.utterance.id}, {meeting.display_name(hit.utterance.speaker)}: “{_unmask(_quote(quote), meeting)}”"


_GREETING = r"(?:hi|hello|hey|thanks|thank you|okay|ok|yes|yeah|so|well|and|but)"


def _addressed(meeting: MeetingState, text: str) -> set[str]:
    """Labels of the people a sentence speaks to rather than about: a name after a greeting or set off by a
    comma at the sentence's start ("Hi Carol, I'm here for …"), or at its end ("…, Carol?")."""
    out = set()
    for label in people_named(meeting, text):
        names = [re.escape(f"[{label}]"), re.escape(label), *(re.escape(n) for n in (meeting.names.get(label, "").split()[:1]))]
        name = "(?:" + "|".join(n for n in names if n) + ")"
        start = re.search(rf"^\W*(?:{_GREETING}\W+)*{name}\s*[,.!?]", text, re.IGNORECASE)
        end = re.search(rf",\s*{name}\s*[.!?]*\s*$", text, re.IGNORECASE)
        if start or end:
            out.add(label)
    return out


ADDRESSED_WEIGHT = 0.3
"""A person a sentence speaks to is weaker evidence than one it speaks about, or its speaker saying "I"."""


def _who(meeting: MeetingState, question: str, ranked: list[_Sentence], hits: list[Hit]) -> _Draft | None:
    asked_about = people_named(meeting, question)
    evidence: dict[str, list[tuple[float, _Sentence]]] = {}
    for s in ranked[:8]:
        speaker = hits[s.hit_index].utterance.speaker
        addressed = _addressed(meeting, s.text)
        found = {(label, ADDRESSED_WEIGHT if label in addressed else 1.0) for label in people_named(meeting, s.text)}
        found.add((speaker, 0.9 if FIRST_PERSON.search(s.text) else 0.25))
        for label, weight in found:
            if label not in asked_about:
                evidence.setdefault(label, []).append((s.score * weight, s))
    if not evidence:
        return None
    # The best evidence counts, and more of it only a little: whoever talks most is not the answer.
    scores = {
        label: max(g for g, _ in rows) + AskSettings.more_evidence * (sum(g for g, _ in rows) - max(g for g, _ in rows))
        for label, rows in evidence.items()
    }
    support = {label: max(rows, key=lambda r: r[0])[1] for label, rows in evidence.items()}
    ranked_people = sorted(scores, key=lambda p: -scores[p])
    best = scores[ranked_people[0]]
    people = [p for p in ranked_people[:2] if scores[p] >= AskSettings.second_person * best]
    sources = list(dict.fromkeys(support[p].hit_index for p in people))
    head = " and ".join(meeting.display_name(p) for p in people)
    quotes = "; ".join(_source(meeting, hits[i], _quoted_for(support, people, i)) for i in sources)
    return _Draft(text=f"{head} ({quotes}).", hits=sources, score=support[people[0]].score)


def _quoted_for(support: dict[str, _Sentence], people: list[str], hit_index: int) -> str:
    """The supporting sentence quoted for one source turn."""
    return next(support[p].text for p in people if support[p].hit_index == hit_index)


def _extract(
    meeting: MeetingState, question: str, ranked: list[_Sentence], hits: list[Hit], pattern: re.Pattern[str]
) -> _Draft | None:
    """A date or a number from the best sentences; for a number, one counting what the question counts
    ("how many papers" -> "three papers") comes before the first number of the best sentence."""
    q_words = content_words(question)
    first: tuple[str, _Sentence] | None = None
    for s in ranked[: AskSettings.extract_sentences]:
        for found in pattern.finditer(s.text):
            expression = found.group(0).strip()
            if pattern is NUMBER:
                unit = (found.group(4) or "").strip().lower()
                if unit and stem(unit) in q_words:
                    return _number_draft(meeting, expression, s, hits)
                if found.group(1).lower() == "one" and not unit:
                    continue  # "one" alone is mostly a pronoun
                if unit in NOT_UNITS or unit == "of":
                    expression = found.group(1)
            if first is None:
                first = (expression, s)
            if pattern is not NUMBER:
                break
        if first is not None and pattern is not NUMBER:
            break
    if first is None:
        return None
    return _number_draft(meeting, first[0], first[1], hits)


def _number_draft(meeting: MeetingState, expression: str, s: _Sentence, hits: list[Hit]) -> _Draft:
    hit = hits[s.hit_index]
    return _Draft(text=f"{expression} ({_source(meeting, hit, s.text)}).", hits=[s.hit_index], score=s.score)


def _what(meeting: MeetingState, ranked: list[_Sentence], hits: list[Hit]) -> _Draft:
    best = ranked[0]
    hit = hits[best.hit_index]
    speaker = meeting.display_name(hit.utterance.speaker)
    text = f"{speaker} said in turn {hit.utterance.id}: “{_unmask(_quote(best.text), meeting)}”"
    return _Draft(text=text, hits=[best.hit_index], score=best.score)


def _topic(meeting: MeetingState, index: TurnIndex) -> _Draft | None:
    """What the whole meeting was about: the words most turns come back to, and the first turn that
    says much, which is where a chair usually sets the agenda."""
    index.observe()
    counts = index.document_frequencies()
    if not counts:
        return None
    stems = [w for w, _ in counts.most_common(40) if not w.startswith("[") and not w.isdigit()][: AskSettings.topic_words]
    # Content words are stems ("morn"): say each as the form the meeting used most.
    surface: dict[str, Counter[str]] = {w: Counter() for w in stems}
    for u in meeting.utterances:
        for t in tokens(u.text):
            if (root := stem(t)) in surface:
                surface[root][t] += 1
    words = [surface[w].most_common(1)[0][0] if surface[w] else w for w in stems]
    opening = next(
        (
            (i, s)
            for i, u in enumerate(meeting.utterances[: AskSettings.opening_turns])
            for s in sentences(u.text)
            if len(content_words(s)) >= AskSettings.full_sentence and not s.endswith("?")
        ),
        None,
    )
    text = f"Mostly {', '.join(words)}."
    hits: list[int] = []
    if opening is not None:
        i, sentence = opening
        u = meeting.utterances[i]
        text += f" {meeting.display_name(u.speaker)} opened in turn {u.id}: “{_unmask(_quote(sentence), meeting)}”"
        hits = [i]
    return _Draft(text=text, hits=hits, score=0.5)


def _participants(meeting: MeetingState) -> str:
    names = [meeting.display_name(a) for a in meeting.attendees]
    return f"{len(names)} people took part: {', '.join(names)}." if names else NO_ANSWER


def _best_note(question: str, principal: Profile) -> tuple[int, float] | None:
    scored = [
        (i, similarity(question, f"{item.context}. {item.information}"))
        for i, item in enumerate(principal.background)
    ]
    if not scored:
        return None
    return max(scored, key=lambda x: x[1])


def outbound_text(text: str, principal: Profile | None, audience: Audience, shown: list[str]) -> str:
    """The one way an answer's text leaves: nothing the principal keeps private reaches anyone else.

    `shown` are the meeting texts the answer draws on (what is said in the meeting is no secret).
    """
    if audience == "principal" or principal is None:
        return text
    # An answer quotes the turns it shows; what they said is no secret, so no guess there to confirm.
    return guard.safe_text(text, principal, shown, recent=(), withheld=WITHHELD)


class EmbeddedAsker:
    """The offline asker: retrieval, question typing and extraction; one turn index per meeting."""

    name = "local"

    def __init__(self, calibration: AskCalibration | None = None) -> None:
        """`calibration`: raw score to the chance an answer is right, and the threshold below which the answer is
        "nothing in the meeting says" (default: the shipped one)."""
        self.calibration = calibration if calibration is not None else shipped_calibration()
        self._indexes: dict[str, TurnIndex] = {}
        self._commitments = Commitments()

    def _index(self, meeting: MeetingState) -> TurnIndex:
        index = self._indexes.get(meeting.meeting_id)
        if index is None or index.meeting is not meeting:
            index = self._indexes[meeting.meeting_id] = TurnIndex(meeting)
        return index

    def observe(self, meeting: MeetingState) -> None:
        """Keep up with a live meeting: embed its new turns now, so that a question waits only for BM25."""
        self._index(meeting).observe()

    def stale(self, meeting: MeetingState) -> bool:
        """Whether the next question would first rebuild the meeting's BM25 index."""
        return self._index(meeting).stale

    def prepare(self, meeting: MeetingState) -> None:
        """Rebuild the meeting's BM25 index now (a session does it in a worker thread once asked)."""
        self._index(meeting).refresh()

    def forget(self, meeting_id: str) -> None:
        self._indexes.pop(meeting_id, None)
        self._commitments.forget(meeting_id)

    async def ask(
        self, meeting: MeetingState, question: str, principal: Profile | None, audience: Audience
    ) -> Answer:
        started = time.perf_counter()
        if self.stale(meeting):
            # Rebuilding the index of a long meeting takes tens of milliseconds: off the event loop.
            await asyncio.to_thread(self.prepare, meeting)
        answer = self.answer(meeting, question, principal, audience)
        return answer.model_copy(update={"latency_ms": (time.perf_counter() - started) * 1000})

    def retrieve(self, meeting: MeetingState, question: str) -> list[Hit]:
        return self._index(meeting).search(question, AskSettings.turns, exclude=QUESTION_WORDS)

    def answer(
        self,
        meeting: MeetingState,
        question: str,
        principal: Profile | None = None,
        audience: Audience = "meeting",
    ) -> Answer:
        started = time.perf_counter()
        kind = question_type(question)
        draft, hits = self._draft(meeting, question, kind, self.retrieve(meeting, question), self._index(meeting))
        confidence = self.calibration.confidence(draft.score) if draft else 0.0
        if draft is not None and confidence < self.calibration.threshold:
            # More likely wrong than right: saying so beats a guess ("tomorrow" from an unrelated turn).
            log.info("answer_unsure", meeting_id=meeting.meeting_id, question_type=kind.value, confidence=round(confidence, 3))
            draft = None
        text, used = (draft.text, draft.hits) if draft else (NO_ANSWER, [])
        items: list[int] = []
        if principal is not None and audience == "principal":
            note = _best_note(question, principal)
            if note is not None and note[1] >= AskSettings.notes_min:
                i, fit = note
                notes = f"Your notes: {principal.background[i].information}"
                text = notes if draft is None else f"{text} {notes}"
                items, confidence = [i], max(confidence, fit)
        used_turns = [hits[i].utterance for i in used]
        text = outbound_text(text, principal, audience, [u.text for u in used_turns])
        if text == WITHHELD:
            log.warning("answer_withheld", meeting_id=meeting.meeting_id, question_type=kind.value)
        answered = text not in (NO_ANSWER, WITHHELD)
        return Answer(
            question=question,
            question_type=kind,
            text=text,
            answered=answered,
            turn_ids=[u.id for u in used_turns] if answered else [],
            speakers=list(dict.fromkeys(meeting.display_name(u.speaker) for u in used_turns)) if answered else [],
            background_items=items if answered else [],
            confidence=round(min(max(confidence, 0.0), 1.0), 3) if answered else 0.0,
            engine=self.name,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _draft(
        self, meeting: MeetingState, question: str, kind: QuestionType, hits: list[Hit], index: TurnIndex
    ) -> tuple[_Draft | None, list[Hit]]:
        """The answer's draft, and the hits its `hits` indices point into."""
        if kind is QuestionType.who and PARTICIPANTS.search(question):
            return (_Draft(text=_participants(meeting), hits=[], score=1.0) if meeting.attendees else None), hits
        if kind is QuestionType.what and TOPIC.search(question):
            draft = _topic(meeting, index)
            opening = [Hit(meeting.utterances[i], i, 1.0, 0.0) for i in draft.hits] if draft else []
            return (draft.model_copy(update={"hits": list(range(len(opening)))}) if draft else None), opening
        # Who took on what: from the meeting's action items, not from who talks most about the work.
        taken = self._commitments.answer(meeting, question, kind)
        if taken is not None:
            rested = [Hit(meeting.utterances[i], i, taken.score, 0.0) for i in taken.turns]
            return _Draft(text=taken.text, hits=list(range(len(rested))), score=taken.score), rested
        if not hits or not _enough_overlap(question, hits):
            return None, hits
        hits = _with_replies(meeting, hits)
        ranked = _ranked_sentences(question, hits, index)
        if not ranked or ranked[0].score < AskSettings.min_score:
            return None, hits
        draft: _Draft | None = None
        if kind is QuestionType.who:
            draft = _who(meeting, question, ranked, hits)
        elif kind is QuestionType.when:
            draft = _extract(meeting, question, ranked, hits, TEMPORAL)
        elif kind is QuestionType.howmany:
            draft = _extract(meeting, question, ranked, hits, NUMBER)
        return draft or _what(meeting, ranked, hits), hits
