"""The readings a decision needs (the sentence encoder on an unsure moment, a floor model that reads the turn),
done in one worker thread and batched across meetings.

An engine decides inside `deferred()`: a model that would read a new text raises `NotReadYet` instead. The
engine awaits `BatchedReading.read`, and decides again; by then the texts are in the model's cache. Readings
asked for while the worker is busy go together in its next batch, so one meeting's slow moment takes a worker's
time, not the event loop's: the other meetings' decisions go on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import structlog

from delegate.decide.turn_taking import read_brief
from delegate.language.deferred import NotReadYet, Read
from delegate.language.encoder import shipped as encoder
from delegate.models import Profile

log = structlog.get_logger("delegate.reading")

URGENT, AHEAD = 0, 1
"""Priorities: a decision waiting for its reading goes before what is read ahead (a brief when a meeting starts)."""


class ReadingWorker:
    """The threads that run the encoder and the models that read words, off the event loop: all cores but one,
    so the loop always has one; each takes the most urgent job first."""

    def __init__(self, threads: int) -> None:
        self._jobs: queue.PriorityQueue[tuple[int, int, Callable[..., Any], tuple[Any, ...], Future[Any]]] = (
            queue.PriorityQueue()
        )
        self._order = itertools.count()
        for k in range(threads):
            threading.Thread(target=self._serve, name=f"reading-{k}", daemon=True).start()

    def submit(self, priority: int, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        done: Future[Any] = Future()
        self._jobs.put((priority, next(self._order), fn, args, done))
        return done

    def _serve(self) -> None:
        while True:
            _, _, fn, args, done = self._jobs.get()
            if not done.set_running_or_notify_cancel():
                continue
            try:
                done.set_result(fn(*args))
            except BaseException as e:  # the caller gets it; the thread serves the next job
                done.set_exception(e)


@cache
def worker() -> ReadingWorker:
    """The process's reading threads, started the first time they are needed."""
    return ReadingWorker(max(1, (os.cpu_count() or 2) - 1))


READ_CHUNK = 4
"""Texts per job a batch is read in: each decision goes on once its own texts are read."""
AHEAD_CHUNK = 4
"""Texts per job read ahead: an urgent reading waits for at most one such job, not for a whole brief."""


async def read_brief_ahead(principal: Profile, wait_s: float) -> None:
    """Read the principal's brief in the reading threads after every urgent job, a few texts per job; wait for it
    up to `wait_s` (it goes on after).

    A meeting that starts reads its brief this way: alone it is ready before the first utterance; when a thousand
    start at once, none waits long, and a decision that needs a brief not read yet reads it first, urgently."""
    items = principal.background
    texts = list(
        dict.fromkeys([*(b.information for b in items), *(b.context for b in items if b.context.strip()), *principal.intents])
    )
    jobs = [worker().submit(AHEAD, _encode, texts[k : k + AHEAD_CHUNK]) for k in range(0, len(texts), AHEAD_CHUNK)]
    jobs.append(worker().submit(AHEAD, read_brief, principal))  # what is left of it, and its vectors kept
    for job in jobs:
        job.add_done_callback(_log_failure)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(jobs[-1])), wait_s)


def _settle(asks: list[_Ask], failed: BaseException | None = None) -> None:
    for ask in asks:
        if ask.done.done():
            continue
        if failed is not None:
            ask.done.set_exception(failed)
        else:
            ask.done.set_result(None)


def _encode(texts: list[str]) -> None:
    encoder().encode(texts)  # the encoder loads here, in the thread, if nothing loaded it yet


def _log_failure(job: Future[Any]) -> None:
    if not job.cancelled() and job.exception() is not None:
        log.error("read_ahead_failed", error=repr(job.exception()))


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
                self.batches += 1
                by_reader: dict[Read, list[str]] = {}
                for ask in batch:
                    texts = by_reader.setdefault(ask.read, [])
                    texts += [t for t in ask.texts if t not in texts]
                read_so_far: set[tuple[Read, str]] = set()
                for read, texts in by_reader.items():
                    for k in range(0, len(texts), READ_CHUNK):
                        chunk = texts[k : k + READ_CHUNK]
                        try:
                            await asyncio.wrap_future(worker().submit(URGENT, read, chunk))
                        except Exception as e:  # the decisions waiting for it hear of it, as from the engine
                            _settle([a for a in batch if read is a.read and set(chunk) & set(a.texts)], e)
                        read_so_far.update((read, t) for t in chunk)
                        # A decision goes on as soon as its own texts are read, not after the whole batch.
                        _settle([a for a in batch if all((a.read, t) in read_so_far for t in a.texts)])
                _settle(batch)
        finally:
            self._worker = None
