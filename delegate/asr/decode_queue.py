"""The process's speech decodes: one queue and its worker thread, finals first and batched, partials shed.

Every audio stream of the process hands its decodes here (delegate.asr.whisper). The worker takes, in order:

1. finals, oldest first, several streams' at once in one batched encoder and decoder call when they have
   the same batch key (encoder length and prompt length: each decodes as it would alone);
2. a partial, only when no final waits: the one of the stream that has waited longest.

With several workers (the model's `workers`, each decoding on its share of the threads) partials never
occupy all of them, so a final need not wait for a partial to finish.

A stream has at most one partial waiting: a newer one, or the stream's final, supersedes it. When a
final had to wait (another decode was running), partials stop for a while and those waiting are shed,
so that under load partials become fewer, then none. A final is never shed; one asked for early (its
utterance may go on) can be withdrawn by its stream while it waits.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import structlog

from delegate.asr.base import FINAL_BEAM, PARTIAL_PAD_FRAMES, Decoder

log = structlog.get_logger("delegate.asr")


class DecodeListener(Protocol):
    """What a stream's owner learns about its decodes (called on the worker thread)."""

    def waited(self, final: bool, seconds: float) -> None:
        """A decode started `seconds` after it was queued."""
        ...

    def shed(self) -> None:
        """A partial was dropped without being decoded."""
        ...


@dataclass(eq=False)
class _Job:
    key: object
    audio: np.ndarray
    hotwords: str | None
    final: bool
    listener: DecodeListener | None
    check_names: bool = False
    """A final's text is checked for the principal's name against the audio (delegate.asr.names_heard)."""
    queued: float = field(default_factory=time.monotonic)
    future: Future[str | None] = field(default_factory=Future)


class DecodeQueue:
    """Decodes for all streams of one model; thread-safe, results as `concurrent.futures.Future`s."""

    def __init__(
        self,
        model: Decoder,
        *,
        max_batch: int = 8,
        final_beam: int | None = None,
        hold_s: float = 0.25,
        quiet_s: float = 2.0,
    ) -> None:
        self.model = model
        self.max_batch = max_batch
        self.final_beam = FINAL_BEAM if final_beam is None else final_beam
        self.hold_s = hold_s
        """A final that waited longer than this for the worker pauses partials..."""
        self.quiet_s = quiet_s
        """... for this long."""
        self.shed_total = 0
        self.withdrawn_total = 0
        self.batches = 0
        self.finals_decoded = 0
        self._finals: deque[_Job] = deque()
        self._partials: dict[object, _Job] = {}  # insertion order: the longest waiting first
        self._quiet_until = 0.0
        workers = max(1, getattr(model, "workers", 1))
        self._partial_slots = max(1, workers - 1)
        self._partials_running = 0
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._run, name=f"asr-decode-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    # -- streams' side -----------------------------------------------------------------------------

    def final(
        self,
        key: object,
        audio: np.ndarray,
        hotwords: str | None,
        listener: DecodeListener | None = None,
        check_names: bool = True,
    ) -> Future[str | None]:
        """Queue an ended utterance of stream `key`; it supersedes the stream's waiting partial."""
        job = _Job(key, audio, hotwords, True, listener, check_names)
        with self._cond:
            shed = self._partials.pop(key, None)
            self._finals.append(job)
            self._cond.notify_all()
        self._shed([shed])
        return job.future

    def partial(
        self, key: object, audio: np.ndarray, hotwords: str | None, listener: DecodeListener | None = None
    ) -> Future[str | None]:
        """Queue the growing utterance of stream `key`; the future's result is None if it is shed."""
        job = _Job(key, audio, hotwords, False, listener)
        with self._cond:
            older = self._partials.pop(key, None)
            if job.queued < self._quiet_until:
                shed = [older, job]
            else:
                shed = [older]
                self._partials[key] = job
                self._cond.notify_all()
        self._shed(shed)
        return job.future

    def withdraw(self, future: Future[str | None]) -> None:
        """A final asked for early is not wanted (its utterance went on): unqueued if it has not started."""
        with self._cond:
            job = next((j for j in self._finals if j.future is future), None)
            if job is None:
                return
            self._finals.remove(job)
            self.withdrawn_total += 1
        job.future.set_result(None)

    def drop(self, key: object) -> None:
        """Stream `key` ended: its waiting partial is not wanted any more."""
        with self._cond:
            job = self._partials.pop(key, None)
        self._shed([job])

    def pending(self) -> tuple[int, int]:
        """Finals and partials waiting."""
        with self._cond:
            return len(self._finals), len(self._partials)

    # -- worker ------------------------------------------------------------------------------------

    def _shed(self, jobs: list[_Job | None]) -> None:
        for job in jobs:
            if job is None:
                continue
            with self._cond:
                self.shed_total += 1
            job.future.set_result(None)
            if job.listener is not None:
                job.listener.shed()

    def _take(self) -> list[_Job]:
        """The next batch (under the lock): finals if any, else one partial if a worker may take it."""
        while not self._finals and not (self._partials and self._partials_running < self._partial_slots):
            self._cond.wait()
        if not self._finals:
            key = next(iter(self._partials))
            self._partials_running += 1
            return [self._partials.pop(key)]
        batch = [self._finals.popleft()]
        # Only finals of the first one's key share its batch: a batched member decodes exactly what it would
        # alone (delegate.asr.base.encoder_frames); the others wait for the next batch, in their order.
        key = self.model.batch_key(len(batch[0].audio), batch[0].hotwords)
        skipped: list[_Job] = []
        while self._finals and len(batch) < self.max_batch:
            job = self._finals.popleft()
            if self.model.batch_key(len(job.audio), job.hotwords) == key:
                batch.append(job)
            else:
                skipped.append(job)
        self._finals.extendleft(reversed(skipped))
        return batch

    def _run(self) -> None:
        while True:
            with self._cond:
                batch = self._take()
                now = time.monotonic()
                shed: list[_Job | None] = []
                if batch[0].final and any(now - j.queued > self.hold_s for j in batch):
                    self._quiet_until = now + self.quiet_s
                    shed, self._partials = list(self._partials.values()), {}
                # Checking a name against the audio (names_heard) costs several decodes: only with room, as
                # partials; under load a final goes out as heard.
                room = not self._finals and now >= self._quiet_until
            self._shed(shed)
            for job in batch:
                if job.listener is not None:
                    job.listener.waited(job.final, now - job.queued)
            final = batch[0].final
            items = [(j.audio, j.hotwords) for j in batch]
            try:
                if final:
                    texts = self.model.transcribe_batch(
                        items, beam_size=self.final_beam, check_names=[j.check_names and room for j in batch]
                    )
                else:
                    texts = self.model.transcribe_batch(items, beam_size=1, pad_frames=PARTIAL_PAD_FRAMES)
            except Exception as e:  # a fault of the model must reach the streams, not end the worker
                log.exception("decode_failed", batch=len(batch), final=final)
                for job in batch:
                    job.future.set_exception(e)
                continue
            finally:
                if not final:
                    with self._cond:
                        self._partials_running -= 1
                        self._cond.notify_all()
            with self._cond:
                self.batches += 1
                self.finals_decoded += len(batch) if final else 0
            for job, text in zip(batch, texts, strict=True):
                job.future.set_result(text)
