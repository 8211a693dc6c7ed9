"""Engines for judge calibration only: `oracle` says the principal's real words, `shuffled` another case's.

Both speak exactly when a case expects speech. If the judge cannot tell them apart, its recall means nothing.
"""

from __future__ import annotations

import random
import zlib

from benchmark.scoring.data import BenchMeeting, Case
from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, Scenario


def _real_words(meeting: BenchMeeting, case: Case) -> str:
    return " ".join(meeting.utterances[i].text for i in case.response_utterances)


class _CaseLookupEngine:
    """Answers from a table keyed by (meeting id, principal label, last utterance id)."""

    name = "lookup"

    def __init__(self) -> None:
        self.table: dict[tuple[str, str, int], tuple[str, Scenario]] = {}

    def decide_now(self, meeting: MeetingState, principal: Profile) -> Decision:
        last = meeting.last
        assert last is not None
        text, scenario = self.table.get((meeting.meeting_id, principal.speaker_label, last.id), ("", Scenario.none))
        return Decision(
            utterance_id=last.id, scenario=scenario, speak=text, reason="calibration", confidence=1.0, engine=self.name
        )

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        return self.decide_now(meeting, principal)


class OracleEngine(_CaseLookupEngine):
    name = "oracle"

    def __init__(self, meetings: list[BenchMeeting], cases: dict[str, list[Case]]) -> None:
        super().__init__()
        for m in meetings:
            for c in cases[m.meeting_id]:
                if c.expects_speech and c.response_utterances:
                    self.table[(m.meeting_id, c.principal, c.last_utterance)] = (_real_words(m, c), c.scenario)


class ShuffledEngine(_CaseLookupEngine):
    name = "shuffled"

    def __init__(self, meetings: list[BenchMeeting], cases: dict[str, list[Case]], seed: int = 0) -> None:
        super().__init__()
        for m in meetings:
            speaking = [c for c in cases[m.meeting_id] if c.expects_speech and c.response_utterances]
            for c in speaking:
                others = [o for o in speaking if o.last_utterance != c.last_utterance and set(o.response_utterances).isdisjoint(c.response_utterances)]
                if not others:
                    continue
                other = random.Random(seed + zlib.crc32(c.id.encode())).choice(others)
                self.table[(m.meeting_id, c.principal, c.last_utterance)] = (_real_words(m, other), c.scenario)
