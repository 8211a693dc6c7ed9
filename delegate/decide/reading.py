"""The readings a decision needs (the sentence encoder on an unsure moment, a floor model that reads the turn),
done in one worker thread and batched across meetings.

An engine decides inside `deferred()`: a model that would read a new text raises `NotReadYet` instead. The
engine awaits `BatchedReading.read`, and decides again; by then the texts are in the model's cache. Readings
asked for while the worker is busy go together in its next batch, so one meeting's slow moment takes a worker's
time, not the event loop's: the other meetings' decisions go on meanwhile.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from delegate.language.deferred import NotReadYet, Read


@dataclass
class _Ask:
    texts: list[str]
    read: Read
    done: asyncio.Future[None]


@dataclass
class BatchedReading:
    """The worker and its queue; one per engine object (one per server process)."""

    batches: int = 0
    """Batches run so far (tests: readings asked together run as one)."""
    _queue: list[_Ask] = field(default_factory=list)
    _worker: asyncio.Task[None] | None = None

    async def read(self, missing: NotReadYet) -> None:
        """Until the texts `missing` names are read (in the worker, with whatever else is waiting)."""
        ask = _Ask(missing.texts, missing.read, asyncio.get_running_loop().create_future())
        self._queue.append(ask)
        if self._worker is None:
            self._worker = asyncio.create_task(self._work(), name="reading")
        await asyncio.shield(ask.done)  # a cancelled decision stops waiting; the batch goes on for the others

    async def _work(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                by_reader: dict[Read, list[str]] = {}
                for ask in batch:
                    texts = by_reader.setdefault(ask.read, [])
                    texts += [t for t in ask.texts if t not in texts]
                failed: BaseException | None = None
                try:
                    for read, texts in by_reader.items():
                        await asyncio.to_thread(read, texts)
                except Exception as e:  # each waiting decision hears of it, and fails as the engine would have
                    failed = e
                self.batches += 1
                for ask in batch:
                    if ask.done.done():
                        continue
                    if failed is not None:
                        ask.done.set_exception(failed)
                    else:
                        ask.done.set_result(None)
        finally:
            self._worker = None
