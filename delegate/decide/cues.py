"""The scenario of the latest utterance for a principal: explicit cue, implicit cue, chime-in, or none.

- explicit cue: the utterance addresses the principal by name (mask, name, alias, initials, or a name
  garbled by speech recognition in a vocative slot), alone or with others ("Anna and Ben, could you").
- otherwise the learned turn-taking model (`delegate.decide.turn_taking`) says whether the floor is theirs now,
  in the exchange and outside it alike; how the talk touches their profile and their own earlier words is
  one of its features, not a separate rule. Taken, it is an implicit cue when the turn is a question or
  hands back to them as the speaker's partner, a chime-in otherwise.
- none: anything else — in particular a question addressed by name to someone else only is never theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from delegate.addressing import Roster, named
from delegate.decide.speaking import LEVELS, Level, admits, margin
from delegate.decide.turn_taking import (
    TurnTakingModel,
    addressing,
    current_talk,
    floor,
    is_question,
    references,
    shipped,
)
from delegate.language import names
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario

__all__ = ["RULES", "Cue", "Rules", "current_talk", "detect", "is_question"]


@dataclass(frozen=True, slots=True)
class Rules:
    """The hand-made rules around the floor model; each can be switched off to measure what it adds
    (`benchmark.replay --rules-off`, the ablation table of docs/turn-taking.md). A named principal is always answered."""

    addressed_elsewhere: bool = True
    """A turn addressed by name to someone else only is not the principal's."""
    partner_implicit: bool = True
    """Taken right after the principal spoke, the floor is an implicit cue (answered as asked) even without a question."""


RULES = Rules()


@dataclass(frozen=True, slots=True)
class Cue:
    scenario: Scenario
    confidence: float
    reason: str
    floor: float = 0.0
    """The model's probability that the floor is the principal's now (0 where no model was asked)."""
    margin: float | None = None
    """Its log-odds above the deciding model's threshold (None where a name or a rule decided)."""


def detect(
    meeting: MeetingState,
    principal: Profile,
    model: TurnTakingModel | None = None,
    read: bool = True,
    rules: Rules = RULES,
    text: bool = True,
    level: Level | None = None,
) -> Cue:
    """The cue of the latest utterance; `read=False` keeps the reading models out of it, `text=False` the floor reader;
    `level`: what the floor model's verdict must reach (default: the principal's speaking level's)."""
    last = meeting.last
    if last is None:
        return Cue(Scenario.none, 1.0, "nothing said yet")
    me = principal.speaker_label
    if last.speaker == me:
        return Cue(Scenario.none, 0.95, "the principal has just spoken")

    refs = references(meeting)
    addr = addressing(meeting, principal, refs)
    hit = addr.hit
    if hit.reference is names.Reference.addressed:
        how = {"garbled": f"heard '{hit.surface}', taken for their name"}.get(hit.form, f"named as '{hit.surface}'")
        return Cue(Scenario.explicit_cue, 0.9 * hit.score + 0.1, f"addressed by name ({how})")

    others = [label for label, ref in refs.items() if ref is names.Reference.addressed and label != me]
    question = is_question(last.text)
    if others and hit.reference is not names.Reference.absent:
        together = next((a for a in named(last.text, last.speaker, Roster.of(meeting, (principal,)), last.unheard) if a.label == me), None)
        if together is not None:
            who = ", ".join(meeting.display_name(o) for o in others)
            return Cue(Scenario.explicit_cue, 0.9 * together.score + 0.1, f"addressed by name with {who} ('{together.surface}')")
    if others and rules.addressed_elsewhere:
        who = ", ".join(meeting.display_name(o) for o in others)
        return Cue(Scenario.none, 0.9, f"addressed to {who}, not to the principal")
    if hit.reference is names.Reference.named or (hit.reference is names.Reference.mentioned and question):
        return Cue(Scenario.explicit_cue, 0.6, f"the turn names the principal ('{hit.surface}')")

    # No rule for backchannels ("okay", "yeah"): the floor model decides after them too. A rule that kept the
    # principal silent after every backchannel cost 4.6 points of stream recall and 1.5 of matched response, held
    # out on ELITR dev, for 0.4 of precision (the ablation in docs/turn-taking.md).
    model = model or shipped()
    verdict = floor(meeting, principal, addr, model, read, text)
    p = verdict.probability
    m = margin(p, verdict.threshold)
    if not verdict.taken:
        why = "the floor is not theirs now" + (" (read against their brief)" if verdict.read else "")
        return Cue(Scenario.none, round(1 - p, 3), why, p, m)
    partner = rules.partner_implicit and meeting.recent_speakers(2)[1:2] == [me]
    if not admits(level or LEVELS[principal.speaking], m, question, partner):
        return Cue(Scenario.none, round(1 - p, 3), f"the floor may be theirs, not clearly enough to speak ({principal.speaking} speaking)", p, m)
    read = " (their brief answers it)" if verdict.read else ""
    if question or partner:
        why = "asked right after the principal spoke" if partner else "a question whose floor falls to the principal"
        return Cue(Scenario.implicit_cue, round(p, 3), why + read, p, m)
    return Cue(Scenario.chime_in, round(p, 3), "the discussion reached the principal and the floor is open" + read, p, m)
