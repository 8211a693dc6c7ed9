"""The embedded default engine: no network, no model download. (Work in progress: cues land next.)"""

from __future__ import annotations

import time

from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, Scenario


class LocalEngine:
    name = "local"

    def decide_now(self, meeting: MeetingState, principal: Profile) -> Decision:
        t0 = time.perf_counter()
        last = meeting.last
        assert last is not None
        first = principal.name.split()[0].lower()
        named = first in last.text.lower() and last.speaker != principal.speaker_label
        return Decision(
            utterance_id=last.id,
            scenario=Scenario.explicit_cue if named else Scenario.none,
            speak="Yes, I'm here." if named else "",
            reason="addressed by name" if named else "not addressed",
            confidence=0.5,
            engine=self.name,
            latency_ms=(time.perf_counter() - t0) * 1000,
        )

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        return self.decide_now(meeting, principal)
