"""What to say: the sentences of the principal's background that answer the current discussion.

Items are ranked by how well they fit the last few turns (recent turns weigh more); the best sentences
of the top items are then chosen to fit the word budget and spoken in the items' own order. Never an
item marked `shareable: false`, never an item the principal (or the delegate for them) already said in
this meeting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from delegate.decide.cues import Cue
from delegate.decide.relevance import Query, pair_score, rank_intents
from delegate.decide.reply.phrasing import sayable, ticket_names
from delegate.decide.reply.selector import FOR_A_QUESTION, AnswerSelector
from delegate.decide.reply.selector import shipped as shipped_selector
from delegate.decide.reply.spoken import spoken, unmask
from delegate.language.questions import NUMBER, TEMPORAL, QuestionType, personal_matter, question_type
from delegate.language.similarity import embedding
from delegate.language.text import content_words
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario
from delegate.speakable import defects, sentence_count

# Sentences, and clauses after a `;` (kept with it, so a reply that joins them reads as written).
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


@dataclass(frozen=True, slots=True)
class Composition:
    text: str
    used_background: list[int] = field(default_factory=list)
    used_intents: list[int] = field(default_factory=list)
    grounding: float = 0.0
    """How well the chosen material answers the talk (the best item's relevance)."""


class ComposeSettings:
    max_words = 58
    """A reply's words, its opener included (the speakable check allows 60)."""
    max_sentences = 4
    """A reply's sentences from the principal's own notes: their chosen words (the speakable check allows 4)."""
    max_record_sentences = 2
    """A reply's sentences from records (a brief built from sources): one or two, as a colleague answers."""
    max_sentences_one_item = 2
    """A reply answers from one item: its best sentence, and the item's next sentence where that goes on from it."""
    max_note_sentences_one_item = 3
    """The same for the principal's own notes, whose item is one point written out over a few sentences (on ELITR
    dev their real answer often says two or three of them)."""
    max_items = 3
    item_weight = 0.7
    """A sentence's score: this share from its item's rank, the rest from the sentence's own fit."""
    second_item_share = 0.5
    """A second item joins the reply only when it answers the talk nearly as well as the first."""
    item_floor: float | None = None
    """Below this probability (of the best item answering the latest turn) nothing in the background answers
    a cue; None: the answer selector's own fitted threshold (`delegate.decide.reply.selector`)."""
    intent_floor = 0.30
    """Named or volunteering, an intent is raised only when the talk is about it (else a holding line or silence)."""
    already_said = 0.80
    """Cosine above which an item counts as already said by the principal."""
    recent_turns_checked = 40
    own_turns_checked = 5
    """The principal's latest turns a reply's sentences are checked against (not to repeat them)."""
    repeats_own = 0.70
    """Cosine (sentence encoder) above which a sentence says again what the principal just said."""
    answers_talk = 0.25
    """Cosine with the latest turn from which a record's sentence after the first answers the talk too."""
    goes_on = 0.40
    """Cosine with the reply's first sentence from which a record's sentence after it goes on from it (the
    principal's own notes are said in their order, `max_note_sentences_one_item`)."""
    notes_repeat_own = 0.85
    """`repeats_own` for the principal's notes, which often say again what they said earlier on purpose."""
    repeats_talk = 0.90
    """Cosine (static vectors) above which a sentence says again what someone else said in the last turns."""
    chime_in_fit = 0.25
    """Volunteered (chime-in), a record's best sentence must reach this cosine with the latest turn."""
    same_question = 0.6
    """Share of an intent's words in the question from which the intent is that question, not a point to raise."""
    says_asked = 0.15
    """Added to a sentence's own fit when it says what kind of thing is asked (a time for "when", a number for "how many")."""


def _ranked_items(meeting: MeetingState, principal: Profile, volunteered: bool, selector: AnswerSelector) -> tuple[list[int], np.ndarray, float]:
    """Up to `max_items` shareable items not yet said, best first by the answer selector; their weights (each
    item's share of the chance that some item answers, the best at 1); the best item's probability of answering
    the latest turn. A further item joins when its probability is at least `second_item_share` of the first's."""
    s = ComposeSettings
    if not principal.background or not meeting.recent:
        return [], np.zeros(len(principal.background)), 0.0
    probability, totals = selector.rate(meeting, principal)
    spoken = meeting.spoken_items.get(principal.speaker_label, set())
    said = meeting.said_by(principal.speaker_label, s.recent_turns_checked)
    said_matrix = np.stack([embedding(u.text) for u in said]) if said else None
    order: list[int] = []
    for k in (int(k) for k in np.argsort(-totals, kind="stable")):
        if len(order) == s.max_items or totals[k] <= 0:
            break
        item = principal.background[k]
        if not item.shareable or k in spoken or (volunteered and FOR_A_QUESTION.search(item.context)):
            continue
        if order and probability[k] < s.second_item_share * probability[order[0]]:
            break
        # Already said by the principal in this meeting, in other words: not worth saying again.
        if said_matrix is not None and float((said_matrix @ embedding(principal.background[k].information)).max()) >= s.already_said:
            continue
        order.append(k)
    return order, totals / max(float(totals.max()), 1e-9), float(probability.max())


# A line that runs the meeting rather than says anything ("Okay, let's start the 4.2 go/no-go.", "Next item."):
# nobody chimes in on it with a record of the meeting it names.
_PROCEDURAL = re.compile(
    r"^\W*(?:(?:okay|ok|right|alright|so|good|great|well|now|then|thanks(?: \w+)?)[,.!]?\s+)*"
    r"(?:(?:let'?s|let us|we(?:'ll| will| can| should)?)\s+(?:start|begin|get started|kick off|kick things off|move on|"
    r"go on|continue|wrap up|close|take|turn to|go (?:through|round|around)|vote|jump|do)\b|"
    r"welcome\b|(?:hello|hi|morning),? (?:everyone|all)\b|next (?:item|topic|up|on the agenda)\b|moving on\b|"
    r"any other business\b|(?:first|next),? \w+ (?:update|section)\b)",
    re.IGNORECASE,
)


def procedural(text: str) -> bool:
    """Whether the line runs the meeting (opens it, moves it on) and asks nothing."""
    return bool(_PROCEDURAL.match(text)) and "?" not in text


HOLDING_LINE = "I don't have that at hand right now — I'll check and follow up after the meeting."
"""Said when the principal is asked a fact their notes do not answer."""
PRIVATE_LINE = "That's not something I can get into here."
"""Said when the principal is asked about someone's private matters or a rumour (`personal_matter`)."""
HOLDING_LINES = (HOLDING_LINE, PRIVATE_LINE)


def holding_line(question: str) -> str:
    """The holding line for a question the principal will not answer now, by what it asks: a fact to
    check later, or a private matter nobody discusses in a meeting. Chosen from the question alone."""
    return PRIVATE_LINE if personal_matter(question) else HOLDING_LINE
CHIME_IN_OPENER = "If I may add — "
INTENT_OPENER = "I'd like to raise one thing: "


def _opener(cue: Cue) -> str:
    # No "Yes —" for yes/no questions: whether the answer is yes is exactly what the delegate cannot know.
    return CHIME_IN_OPENER if cue.scenario is Scenario.chime_in else ""


def likely_openings(principal: Profile, names: dict[str, str]) -> list[str]:
    """How this meeting's replies most likely begin, the fixed lines first, then each sentence the principal
    may share as they would say it: a voice can have them ready before they are needed."""
    openings = [HOLDING_LINE, PRIVATE_LINE, CHIME_IN_OPENER.strip(), INTENT_OPENER.strip()]
    tickets = ticket_names(principal.background)
    for item in principal.background:
        if item.shareable:
            openings += [spoken([x], names) for x in sayable(item, tickets, principal.name)]
    return openings


def _vectors(texts: list[str]) -> np.ndarray:
    """The shipped sentence encoder's unit vectors of `texts` (cosine is their dot product)."""
    from delegate.language.encoder import shipped as encoder

    return encoder().encode(texts)


# A sentence that leans on the one before it ("It will be in RC3.", "This was fixed on Tuesday.").
_LEANS_BACK = re.compile(r"^(?:it|this|that|these|those|they|he|she|there)\b(?!\s+(?:is|are|was|were)\s+(?:a|an|no|some|many|one|two|three)\b)", re.I)


_CONNECTIVE = re.compile(r"^(?:but|and|also|so|however|still|then|plus),?\s+(?=\w)", re.I)


def _antecedents_kept(chosen: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`chosen` without a sentence that leans on the one before it when that one is not said just before it."""
    out: list[tuple[int, int, str]] = []
    for k, pos, x in chosen:
        if _LEANS_BACK.match(x) and not (out and out[-1][:2] == (k, pos - 1)):
            continue
        out.append((k, pos, x))
    return out


def _within(chosen: list[tuple[int, int, str]], opener: str, max_words: int, max_sentences: int) -> bool:
    text = opener + spoken([x for _, _, x in chosen], {})
    return len(text.split()) <= max_words and sentence_count(text) <= max_sentences


def _said(meeting: MeetingState, principal: Profile, cue: Cue, query: str | Query, order: list[int], weight: np.ndarray, best: float) -> Composition:
    """The reply from the ranked items: their sayable sentences (`phrasing`), the one that answers best first,
    then what else fits `max_words` and `max_sentences` in the record's order."""
    s = ComposeSettings
    last = meeting.last
    assert last is not None
    tickets = ticket_names(principal.background)
    pool = [(k, pos, x) for k in order for pos, x in enumerate(sayable(principal.background[k], tickets, principal.name))]
    # What the principal already said in this meeting is not said again, in the brief's words or in others.
    own_turns = [u.text for u in meeting.said_by(principal.speaker_label, s.own_turns_checked)]
    vectors = _vectors([last.text, *(x for _, _, x in pool), *own_turns])
    talk_vec, sentence_vecs, own_vecs = vectors[0], vectors[1 : 1 + len(pool)], vectors[1 + len(pool) :]
    records = any(principal.background[k].source for k in order)
    # A note that asks ("Is the budget final?") answers nothing: said back, it puts a question back.
    fresh = np.array([not x.rstrip().endswith("?") for _, _, x in pool], dtype=bool)
    if len(own_vecs):
        fresh &= (sentence_vecs @ own_vecs.T).max(axis=1) < (s.repeats_own if records else s.notes_repeat_own)
    # Nor what someone else said in the last turns: the reply would only repeat the talk back. Read with the
    # static vectors, which every turn already has (the encoder would read the turns again, on the loop).
    others = [t.utterance.text for t in list(meeting.recent)[:-1] if t.utterance.speaker != principal.speaker_label]
    if others:
        heard = np.stack([embedding(t) for t in others])
        fresh &= np.array([float((heard @ embedding(x)).max()) < s.repeats_talk for _, _, x in pool], dtype=bool)
    pool = [c for c, keep in zip(pool, fresh, strict=True) if keep]
    sentence_vecs = sentence_vecs[fresh]
    if not pool:
        return Composition("")
    # How well each sentence answers the latest turn, read by the sentence encoder. Records are ranked by it
    # too (a long record answers with one of its sentences); a principal's own notes are few and written as
    # cues, and the words and static vectors rank them well: for them it only leaves out what is off the talk.
    fit = np.clip(sentence_vecs @ talk_vec, 0.0, 1.0) if last.text.strip() else np.zeros(len(pool))
    read = fit if records else np.zeros(len(pool))
    at = {(k, pos): n for n, (k, pos, _) in enumerate(pool)}
    # A question for a time or a number is answered by a sentence that says one.
    kind = question_type(last.text)
    says = TEMPORAL if kind is QuestionType.when else NUMBER if kind is QuestionType.howmany else None
    own = {
        (k, pos): (0.5 * (pair_score(query, x) + float(r)) if records else pair_score(query, x))
        + (s.says_asked if says is not None and says.search(x) else 0.0)
        for (k, pos, x), r in zip(pool, read, strict=True)
    }
    scored = sorted(
        ((s.item_weight * weight[k] + (1 - s.item_weight) * own[k, pos] - 0.02 * pos, k, pos, x) for k, pos, x in pool),
        key=lambda c: c[0],
        reverse=True,
    )
    opener = _opener(cue)
    max_sentences = s.max_record_sentences if records else s.max_sentences
    # The principal's notes are their own words for this meeting: only a sentence far off the talk is left out.
    answers_talk, goes_on = s.answers_talk, s.goes_on
    # One answer from one item: its best sentence, then what of the same item goes on from it.
    chosen = next(([(k, pos, x)] for _, k, pos, x in scored if _within([(k, pos, x)], opener, s.max_words, max_sentences)), [])
    if chosen:
        k, pos, _ = chosen[0]
        item = sorted((p, x) for kk, p, x in pool if kk == k)
        i = [p for p, _ in item].index(pos)
        if records:
            # A record: the sentence after the best where it answers the talk too, goes on from it, or ends its clause.
            for p, x in item[i + 1 : i + s.max_sentences_one_item]:
                v = sentence_vecs[at[k, p]]
                clause = chosen[-1][2].endswith(";") and chosen[-1][1] == p - 1
                on = float(fit[at[k, p]]) >= answers_talk or float(v @ sentence_vecs[at[k, pos]]) >= goes_on
                if p != chosen[-1][1] + 1 or not (clause or on) or not _within([*chosen, (k, p, x)], opener, s.max_words, max_sentences):
                    break
                chosen.append((k, p, x))
        else:
            # The principal's own note is one point written out: said in its order, from a sentence or two before
            # the best where they lead to it ("It sounds risky to me; but we can take it as a possibility").
            start = max(0, i - (s.max_note_sentences_one_item - 1))
            window = [(k, p, x) for p, x in item[start : start + s.max_note_sentences_one_item]]
            while len(window) > 1 and not _within(window, opener, s.max_words, max_sentences):
                window = window[:-1] if window[-1][1] > pos else window[1:]
            chosen = window
    if not chosen:
        return Composition("")
    # The best sentence and, where it goes on, the item's next one: in the item's own order.
    in_order = sorted(chosen, key=lambda c: (order.index(c[0]), c[1]))
    chosen = _antecedents_kept(in_order) if records else in_order
    if not chosen:
        return Composition("")
    if records and cue.scenario is Scenario.chime_in and fit[at[chosen[0][0], chosen[0][1]]] < s.chime_in_fit:
        return Composition("")  # volunteered, a record must be about the talk, not merely near it
    # "But we can take it as a possibility." said without the sentence before it: the "But" goes.
    k0, pos0, x0 = chosen[0]
    chosen[0] = (k0, pos0, _CONNECTIVE.sub("", x0, count=1))
    text = opener + spoken([x for _, _, x in chosen], meeting.names)
    while defects(text) and len(chosen) > 1:
        chosen.pop()
        text = opener + spoken([x for _, _, x in chosen], meeting.names)
    if defects(text):
        return Composition("")
    return Composition(text, list(dict.fromkeys(k for k, _, _ in chosen)), [], best)


def _same_question(turn: str, intent: str) -> bool:
    """Whether `intent` asks what the question `turn` asks (most of its words are the turn's)."""
    mine, theirs = content_words(intent), content_words(turn)
    return "?" in turn and bool(mine) and len(mine & theirs) >= ComposeSettings.same_question * len(mine)


def compose(meeting: MeetingState, principal: Profile, cue: Cue, query: str | Query, selector: AnswerSelector | None = None) -> Composition:
    """The words the principal would say now, or an empty text when nothing grounded fits. `selector`: which
    item answers the turn (default: the shipped one; the benchmark passes one fitted without the meeting)."""
    s = ComposeSettings
    last = meeting.last
    assert last is not None
    if cue.scenario is Scenario.chime_in and procedural(last.text):
        return Composition("")
    selector = selector if selector is not None else shipped_selector()
    order, weight, best_latest = _ranked_items(meeting, principal, cue.scenario is Scenario.chime_in, selector)
    if order and best_latest >= (selector.floor(principal) if s.item_floor is None else s.item_floor):
        said = _said(meeting, principal, cue, query, order, weight, best_latest)
        if said.text:
            return said
    for match in rank_intents(query, principal)[:1]:
        intent = principal.intents[match.index].strip().rstrip(".?!").strip()
        # Handed the floor (implicit cue), the principal may raise their own point; a direct question
        # or a volunteered remark must be about the talk, or it is better left unsaid.
        floor = 0.0 if cue.scenario is Scenario.implicit_cue else s.intent_floor
        # Asked the very question the principal meant to raise, they have no answer to give: raising it
        # would put the question back.
        if _same_question(last.text, intent):
            break
        if match.score >= floor and intent:
            intent = unmask(intent, meeting.names)
            return Composition(f"{INTENT_OPENER}{intent[0].lower() + intent[1:]}?", [], [match.index], match.score)
    return Composition("")
