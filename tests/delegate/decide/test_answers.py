"""The answer check: a question the chosen material does not answer gets a holding line, also when only a
private item answers it; the live lookup answers what the brief lacks."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from delegate.decide.local import LocalEngine
from delegate.decide.reply.compose import HOLDING_LINE, PRIVATE_LINE
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Decision, Profile, Utterance

RELEASE = BackgroundItem(
    context="#lumen: Ben Cho", information="QA signed off the Lumen release candidate: 212 of 214 tests pass.", source="slack", item_id="s1"
)
MOVE = BackgroundItem(
    context="Direct message from Ben", information="Cleo is moving to the Oslo office in May.", shareable=False,
    why_private="a direct message", source="slack", item_id="s2",
)


def _decide(profile: Profile, text: str, engine: LocalEngine | None = None) -> Decision:
    state = MeetingState("m", names={"P1": "Ben Cho", "P4": "Ana Ruiz"})
    state.add(Utterance(id=0, speaker="P1", text=text))
    return asyncio.run((engine or LocalEngine()).decide(state, profile))


def _ana(*background: BackgroundItem) -> Profile:
    return Profile(name="Ana Ruiz", label="P4", aliases=["Ana"], background=list(background))


class _Lookup:
    def __init__(self, *items: BackgroundItem) -> None:
        self.items = items
        self.asked: list[str] = []

    def search(self, text: str, limit: int) -> Sequence[BackgroundItem]:
        self.asked.append(text)
        return self.items[:limit]


def test_a_hand_written_brief_is_answered_as_composed() -> None:
    # The principal's own notes are their choice for this meeting: no word check second-guesses them.
    mine = RELEASE.model_copy(update={"source": None, "item_id": None})
    d = _decide(_ana(mine), "Ana, how many customers still use the old Android app on Lumen?")
    assert "212 of 214" in d.speak


def test_a_question_the_brief_answers_is_answered_from_it() -> None:
    d = _decide(_ana(RELEASE), "Ana, did QA sign off the Lumen release candidate?")
    assert "212 of 214" in d.speak and d.used_background == [0]


def test_a_question_nothing_answers_gets_a_holding_line_not_the_nearest_item() -> None:
    d = _decide(_ana(RELEASE), "Ana, how many customers still use the old Android app on Lumen?")
    assert d.speak == HOLDING_LINE and d.used_background == []
    assert "212" not in d.speak


def test_a_question_only_a_private_item_answers_gets_the_same_holding_line() -> None:
    private = _decide(_ana(RELEASE, MOVE), "Ana, is Cleo moving to the Oslo office?")
    unknown = _decide(_ana(RELEASE), "Ana, is Cleo moving to the Oslo office?")
    assert private.speak == HOLDING_LINE and "Oslo" not in private.speak and "May" not in private.speak
    # Refusing for a private reason reads exactly like not knowing: the refusal gives nothing away.
    assert private.reason == unknown.reason


def test_the_live_lookup_answers_what_the_brief_lacks_with_its_provenance() -> None:
    date = BackgroundItem(
        context="Mail from Ben Cho: Lumen launch date", information="The Lumen launch moved to Tuesday 10 June.",
        source="gmail", item_id="m2@example.org",
    )
    lookup = _Lookup(date)
    d = _decide(_ana(RELEASE), "Ana, when is the Lumen launch date now?", LocalEngine(lookup_for=lambda _m, _p: lookup))
    assert "10 June" in d.speak and d.used_sources == ["m2@example.org"] and d.used_background == []
    assert lookup.asked


def test_a_private_item_the_lookup_finds_is_never_said() -> None:
    hidden = MOVE.model_copy(update={"source": "slack", "item_id": "s2"})
    d = _decide(_ana(RELEASE), "Ana, is Cleo moving to the Oslo office?", LocalEngine(lookup_for=lambda _m, _p: _Lookup(hidden)))
    assert d.speak == HOLDING_LINE and d.used_sources == []


def test_a_question_about_someones_private_matters_is_declined_not_deferred() -> None:
    # Asked about a colleague's promotion or a reorganisation rumour, a colleague does not offer to "check":
    # they decline, whatever the brief holds (here a shareable record near the question: still declined).
    promo = BackgroundItem(context="#lumen: Ben Cho", information="Cleo led the Lumen release candidate work.", source="slack", item_id="s3")
    for question in ("Ana, is Cleo up for promotion this cycle?", "Ana, any news on the reorg? There's talk QA is being split up."):
        d = _decide(_ana(RELEASE, promo, MOVE), question)
        assert d.speak == PRIVATE_LINE and d.used_background == []
    # A fact the brief lacks is still something to check and follow up on.
    assert _decide(_ana(RELEASE), "Ana, how many customers still use the old Android app on Lumen?").speak == HOLDING_LINE
    # Release words that look alike are no private matter.
    assert _decide(_ana(RELEASE), "Ana, did QA sign off the Lumen release candidate we promoted?").speak not in (PRIVATE_LINE, HOLDING_LINE)
