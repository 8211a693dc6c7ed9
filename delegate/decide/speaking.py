"""How forward the delegate is: what each speaking level (`Profile.speaking`) lets through of the floor model's verdicts.

A name always decides first (a named principal is answered at every level). Past it, the floor model's verdict
is read as a margin: its log-odds above the deciding model's own threshold (the cheap model's, or the reading
model's where that decided). Each level asks for its own margin, one for a turn that asks something of the
principal (a question, or the turn right after they spoke) and one for a chime-in (nothing asked).

The margins were chosen on the leave-one-meeting-out replay of the ELITR dev meetings
(`python -m benchmark.scoring.speaking --data ../shared/benchmark/elitr-dev --weights-folds DIR`, docs/turn-taking.md):
`balanced` for precision (F0.5: no margins reach stream precision 70% at any recall worth having), `addressed`
for precision above all;
`forward` keeps the floor model's own thresholds (chosen for F1 in training), the engine before levels existed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from delegate.models import Speaking

if TYPE_CHECKING:
    from delegate.decide.base import Engine
    from delegate.meeting import MeetingState
    from delegate.models import Decision, Profile

NEVER = math.inf


@dataclass(frozen=True, slots=True)
class Level:
    asked: float
    """Log-odds margin over the deciding model's threshold needed when the turn asks something of the principal."""
    chime_in: float
    """The margin needed when nothing is asked (`NEVER`: the level does not chime in)."""
    direct_only: bool = False
    """Only a question right after the principal spoke counts as asked (`addressed`)."""


LEVELS: dict[Speaking, Level] = {
    Speaking.addressed: Level(asked=1.25, chime_in=NEVER, direct_only=True),
    Speaking.balanced: Level(asked=1.0, chime_in=1.5),
    Speaking.forward: Level(asked=0.0, chime_in=0.0),
}


def margin(probability: float, threshold: float) -> float:
    """The verdict's log-odds above the threshold's (positive: the model gives them the floor)."""
    p = min(max(probability, 1e-9), 1 - 1e-9)
    t = min(max(threshold, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p)) - math.log(t / (1 - t))


def admits(level: Level, floor_margin: float, question: bool, partner: bool) -> bool:
    """Whether the level lets the principal take a floor the model gives with `floor_margin`: `question` (the turn
    asks something), `partner` (it comes right after the principal spoke)."""
    asked = question and partner if level.direct_only else question or partner
    return floor_margin >= (level.asked if asked else level.chime_in)


class SpeakingAt:
    """An engine deciding every meeting at one speaking level, whatever the brief says (the benchmark's
    `--speaking`): the level a meeting sets is applied the same way, to the principal it decides for."""

    def __init__(self, engine: Engine, speaking: Speaking) -> None:
        self.engine = engine
        self.speaking = speaking
        self.name = engine.name

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        return await self.engine.decide(meeting, principal.model_copy(update={"speaking": self.speaking}))

    def __getattr__(self, name: str) -> object:
        # What else the engine offers (its LLM call counts, `aclose`) is the wrapped engine's.
        return getattr(self.engine, name)
