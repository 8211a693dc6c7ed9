"""The embedded default engine: cues from names and turn-taking, words from the principal's own background.

No network, no model download (WordLlama's static embeddings ship inside its wheel, the sentence encoder
inside ours). About half a millisecond a decision; 15–25 ms for a moment the encoder reads, spent in a worker
thread (`reading`) so that the event loop goes on with other meetings meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from delegate.decide.cues import RULES, Rules, detect
from delegate.decide.reading import BatchedReading
from delegate.decide.reply.answers import Lookup
from delegate.decide.reply.plan import plan_for
from delegate.decide.reply.respond import respond
from delegate.decide.reply.selector import AnswerSelector
from delegate.decide.turn_taking import TurnTakingModel
from delegate.language.deferred import NotReadYet, deferred
from delegate.language.similarity import warm_up
from delegate.meeting import LONG_TEXT_CHARS, MeetingState
from delegate.models import Decision, Profile, Scenario

READ_ATTEMPTS = 3
"""Readings one decision may wait for: the floor's turn, then a reply's items; one more for luck."""


class LocalEngine:
    name = "local"

    def __init__(
        self,
        model_for: Callable[[str], TurnTakingModel] | None = None,
        lookup_for: Callable[[MeetingState, Profile], Lookup | None] | None = None,
        read: bool = True,
        rules: Rules = RULES,
        text: bool = False,
        selector_for: Callable[[str], AnswerSelector] | None = None,
    ) -> None:
        """`model_for(meeting_id)`: the turn-taking model to use in that meeting (default: the shipped one);
        the benchmark scores each meeting with a model that did not train on it. `lookup_for`: the search
        over the principal's allowed sources in that meeting, if any (built once per meeting by its owner). `read`:
        whether the floor's reading models run where the cheap model is unsure (`Settings.floor_reader`); `text`: whether
        the floor reader's stack, where the weights hold one, decides there (`Settings.floor_text`); `rules`: which
        hand-made rules around the floor model apply (all, but in the ablation); `selector_for(meeting_id)`: the answer
        selector to use there (default: the shipped one; the benchmark passes one fitted without that meeting)."""
        self.model_for = model_for
        self.lookup_for = lookup_for
        self.reading = BatchedReading()
        self.read = read
        self.rules = rules
        self.text = text
        self.selector_for = selector_for
        # Load the static embeddings now, so the first decision of a meeting is as fast as the others.
        warm_up()

    def decide_now(self, meeting: MeetingState, principal: Profile) -> Decision:
        t0 = time.perf_counter()
        last = meeting.last
        if last is None:
            raise ValueError("decide() needs at least one utterance in the meeting")
        cue = detect(meeting, principal, self.model_for(meeting.meeting_id) if self.model_for else None, self.read, self.rules, self.text)
        speak = ""
        reason = cue.reason
        used_bg: list[int] = []
        used_int: list[int] = []
        used_src: list[str] = []
        confidence = cue.confidence
        if cue.scenario is not Scenario.none:
            lookup = self.lookup_for(meeting, principal) if self.lookup_for else None
            selector = self.selector_for(meeting.meeting_id) if self.selector_for else None
            words = respond(meeting, principal, cue, plan_for(meeting, principal), lookup, selector)
            speak, used_bg, used_int, used_src = words.text, words.used_background, words.used_intents, words.used_sources
            if used_bg or used_src or used_int:
                source = f"background item {used_bg[0]}" if used_bg else f"source item {used_src[0]}" if used_src else f"intent {used_int[0]}"
                reason = f"{cue.reason}; answers from {source}"
            else:
                reason = f"{cue.reason}; {words.why}"
            if not speak:
                confidence = 0.5
        return Decision(
            utterance_id=last.id,
            scenario=cue.scenario,
            speak=speak,
            reason=reason,
            confidence=round(confidence, 3),
            engine=self.name,
            latency_ms=(time.perf_counter() - t0) * 1000,
            used_background=used_bg,
            used_intents=used_int,
            used_sources=used_src,
        )

    async def decide(self, meeting: MeetingState, principal: Profile) -> Decision:
        last = meeting.last
        if last is None or len(last.text) <= LONG_TEXT_CHARS:
            return await self._decide_reading_aside(meeting, principal)
        # A long turn costs its first embedding and word counts (~0.1 s at 20,000 characters): in a worker
        # thread, so that other meetings on the loop go on meanwhile.
        work = asyncio.ensure_future(asyncio.to_thread(self.decide_now, meeting, principal))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            # The thread reads `meeting`: whoever cancelled must not change it before the thread is done.
            await asyncio.wait([work])
            raise

    async def _decide_reading_aside(self, meeting: MeetingState, principal: Profile) -> Decision:
        """Decide on the loop with what is already read; a text the decision must read first is read in the
        worker (`reading`), batched with other meetings', and the decision taken again."""
        t0 = time.perf_counter()
        waited = False
        for _ in range(READ_ATTEMPTS):
            try:
                with deferred():
                    decision = self.decide_now(meeting, principal)
                break
            except NotReadYet as missing:
                waited = True
                await self.reading.read(missing)
        else:
            decision = self.decide_now(meeting, principal)  # read, then forgotten again (a full cache): read here
        if not waited:
            return decision
        # Its latency is the whole of it, the readings it waited for included.
        return decision.model_copy(update={"latency_ms": (time.perf_counter() - t0) * 1000})
