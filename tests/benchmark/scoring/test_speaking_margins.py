"""`benchmark.scoring.speaking`: a level's speaks are a subset of `forward`'s, and its margins are chosen for precision."""

from benchmark.scoring.speaking import Moment, choose, figures
from delegate.decide.speaking import NEVER, Level


def moment(k: int, margin: float, taken: bool, question: bool = True, partner: bool = False, named: bool = False) -> Moment:
    return Moment("m", "P1", k, True, named, margin, question, partner, taken)


# Asked moments: the principal takes the floor where the margin is high; chime-ins are mostly wrong.
MOMENTS = [
    *[moment(k, 2.0, True) for k in range(6)],
    *[moment(10 + k, 0.2, k % 3 == 0) for k in range(6)],
    *[moment(20 + k, 1.0, k == 0, question=False) for k in range(4)],
    moment(30, 0.0, False, named=True),
    Moment("m", "P1", 40, False, False, -1.0, True, False, True),  # silent at forward: never spoken at any level
]


def test_a_named_moment_is_spoken_at_every_margin_and_a_silent_one_never():
    strict = figures(MOMENTS, Level(10.0, NEVER), hours=1.0)
    assert strict["speaks"] == 1 and strict["precision"] == 0.0
    assert figures(MOMENTS, Level(0.0, 0.0), hours=1.0)["speaks"] == len(MOMENTS) - 1


def test_margins_reach_the_precision_asked_with_the_most_recall_and_the_direct_level_never_chimes_in():
    level = choose(MOMENTS, direct_only=False, precision=0.8, hours=1.0)
    got = figures(MOMENTS, level, hours=1.0)
    assert got["precision"] >= 0.8 and level.chime_in > 1.0
    looser = figures(MOMENTS, Level(0.0, 0.0), hours=1.0)
    assert looser["recall"] > got["recall"] and looser["precision"] < 0.8
    assert choose(MOMENTS, direct_only=True, precision=0.99, hours=1.0).chime_in == NEVER
