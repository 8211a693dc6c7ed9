"""Watchers of a meeting: the replay of the meeting so far, then its live events, each watcher on its own queue.

A watcher only reads: it never becomes the meeting's connection. Publishing never waits: a watcher that
falls `limit` events behind is dropped (its stream ends, it may reconnect and replay), never the meeting.
The transport (server-sent events) lives in app.py; here are only typed events.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Mapping, Sequence

import structlog

from delegate.models import Decision, ProposedAction, Utterance
from delegate.server.approval import HeldSpeech, approval_of
from delegate.server.protocol import (
    ActionMessage,
    DecisionMessage,
    Live,
    MeetingEnded,
    SpeechPending,
    SpeechResolved,
    UtteranceEvent,
    WatchEvent,
)

log = structlog.get_logger("delegate.watch")


class Watcher:
    """One reader's view: the replay first, then what was published since it subscribed; None at the end."""

    def __init__(self, replay: Iterable[WatchEvent], limit: int) -> None:
        self._replay: deque[WatchEvent] = deque(replay)
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self._limit = limit
        self.dropped = False

    def offer(self, event: WatchEvent) -> bool:
        """Queue a live event; False (nothing queued) when the watcher is `limit` events behind."""
        if self._queue.qsize() >= self._limit:
            return False
        self._queue.put_nowait(event)
        return True

    def end(self) -> None:
        self._queue.put_nowait(None)

    def drop(self) -> None:
        """End the stream now: what it had not read yet is let go."""
        self.dropped = True
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(None)

    async def next(self) -> WatchEvent | None:
        if self._replay:
            return self._replay.popleft()
        return await self._queue.get()


class Watchers:
    """A meeting's watchers. `subscribe` takes the replay built at the same moment (no await in between),
    so a watcher sees every event exactly once: in the replay, or live."""

    def __init__(self, limit: int = 1000) -> None:
        self._limit = limit
        self._watchers: set[Watcher] = set()
        self.closed = False

    def __len__(self) -> int:
        return len(self._watchers)

    def subscribe(self, replay: Iterable[WatchEvent]) -> Watcher:
        watcher = Watcher(replay, self._limit)
        if self.closed:
            watcher.end()
        else:
            self._watchers.add(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        self._watchers.discard(watcher)

    def publish(self, event: WatchEvent) -> None:
        for watcher in list(self._watchers):
            if not watcher.offer(event):
                self._watchers.discard(watcher)
                watcher.drop()
                log.info("watcher_dropped", meeting_id=getattr(event, "meeting_id", None), behind=self._limit)

    def close(self) -> None:
        """End every stream after what was published (the meeting ended, or this process let it go)."""
        self.closed = True
        for watcher in list(self._watchers):
            watcher.end()
        self._watchers.clear()


def replay(
    meeting_id: str,
    utterances: Sequence[Utterance],
    decisions: Sequence[Decision],
    speech: Mapping[int, HeldSpeech],
    actions: Iterable[ProposedAction],
    ended: str | None = None,
) -> list[WatchEvent]:
    """The meeting so far as watch events: each utterance, its decision (as proposed, with its approval) and
    where its held speech stands; the action items as they stand; then `live`, or `meeting_ended`."""
    decided = {d.utterance_id: d for d in decisions}
    out: list[WatchEvent] = []
    for utterance in utterances:
        out.append(UtteranceEvent(meeting_id=meeting_id, utterance=utterance))
        decision = decided.get(utterance.id)
        if decision is None:
            continue
        held = speech.get(utterance.id)
        out.append(DecisionMessage(meeting_id=meeting_id, decision=decision, approval=approval_of(held)))
        if held is not None:
            out.append(speech_event(meeting_id, held))
    out.extend(ActionMessage(meeting_id=meeting_id, action=a) for a in actions)
    out.append(Live(meeting_id=meeting_id) if ended is None else MeetingEnded(meeting_id=meeting_id, reason=ended))
    return out


def speech_event(meeting_id: str, held: HeldSpeech) -> SpeechPending | SpeechResolved:
    if held.pending:
        return SpeechPending(
            meeting_id=meeting_id, utterance_id=held.utterance_id, text=held.proposed, expires_at=held.expires_at
        )
    return SpeechResolved(
        meeting_id=meeting_id, utterance_id=held.utterance_id, status=held.status, text=held.shown, reason=held.reason
    )
