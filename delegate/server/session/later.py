"""Work that leaves the utterance path: done a beat later, for every meeting that has some, in one pass.

The utterance path acks and starts the decision; what only has to happen before the meeting ends (action
items) waits here. One task per process wakes `delay_s` after the first job asked and runs every job due,
so a thousand meetings cost one wake-up a beat, not a task per utterance.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

import structlog

log = structlog.get_logger("delegate.session")

DELAY_S = 0.05
"""How long a job waits: long enough for the ack and the decision to go first, short against a meeting."""


TURN_S = 0.002
"""The longest the pass holds the event loop before it lets the other tasks run."""


class Deferred(Protocol):
    """A meeting's part with work to do later."""

    @property
    def busy(self) -> bool:
        """Its meeting is in the middle of a frame now: the job waits for the next pass."""
        ...

    async def run_due(self) -> None: ...


class Later:
    """The process's pass over the jobs due; a job added twice before its pass runs once."""

    def __init__(self, delay_s: float = DELAY_S) -> None:
        self._delay_s = delay_s
        self._due: dict[Deferred, None] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, job: Deferred) -> None:
        self._due[job] = None
        if self._task is None:
            self._task = asyncio.create_task(self._passes(), name="later")

    def __len__(self) -> int:
        return len(self._due)

    async def _passes(self) -> None:
        try:
            while self._due:
                await asyncio.sleep(self._delay_s)
                due, self._due = self._due, {}
                turn = time.perf_counter()
                for job in due:
                    if job.busy:
                        self._due[job] = None
                        continue
                    try:
                        await job.run_due()
                    except Exception:  # one meeting's failure is its own: the others' jobs still run
                        log.exception("later_failed")
                    if time.perf_counter() - turn > TURN_S:
                        # A thousand meetings' jobs would hold the loop for 100 ms: decisions go in between.
                        await asyncio.sleep(0)
                        turn = time.perf_counter()
        finally:
            self._task = None
