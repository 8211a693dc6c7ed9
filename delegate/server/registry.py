"""Sessions: the open meetings of one server process, their creation, takeover and idle reaping."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable

import structlog

from delegate.actions import Extractor
from delegate.ask.base import Asker
from delegate.decide.base import Engine
from delegate.server.auth import audit_id, client_id
from delegate.server.metrics import Metrics
from delegate.server.protocol import MEETING_ID, ErrorCode, MeetingSpec, ProtocolError
from delegate.server.rebuild import rebuild
from delegate.server.session.audio_in import TranscriberFactory
from delegate.server.session.later import Later
from delegate.server.session.meeting_session import MeetingSession
from delegate.server.session.outbox import CLOSE_REPLACED, CLOSE_RESTART, Connection
from delegate.server.session.voice_out import VoiceSource
from delegate.store import ENDED, MeetingRecord, Store

__all__ = ["CLOSE_REPLACED", "CLOSE_RESTART", "Connection", "MeetingSession", "Sessions", "TranscriberFactory"]

log = structlog.get_logger("delegate.sessions")

EngineFactory = Callable[[str], Awaitable[Engine]]


class Sessions:
    """The open meetings of one server, and the idle reaper that closes abandoned ones."""

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        engines: EngineFactory,
        *,
        default_engine: str,
        max_text_chars: int,
        idle_seconds: float,
        release_seconds: float | None = None,
        actions: Callable[[MeetingSpec], Extractor] | None = None,
        asr: TranscriberFactory | None = None,
        max_per_owner: int | None = None,
        askers: Callable[[str], Asker] | None = None,
        voice: VoiceSource | None = None,
        approval_timeout_s: float = 30.0,
        watch_limit: int = 1000,
        takeovers_at_once: int = 2,
    ) -> None:
        self._takeovers = asyncio.Semaphore(takeovers_at_once)
        """Rebuilds from the log under way at once: a storm of them waits its turn, the live meetings go on."""
        self.taking_over = 0
        """Rebuilds under way now (at most `takeovers_at_once`)."""
        self._approval_timeout_s = approval_timeout_s
        self._watch_limit = watch_limit
        self._max_per_owner = max_per_owner
        self._per_owner: Counter[str] = Counter()
        self._store = store
        self._metrics = metrics
        self._engines = engines
        self._default_engine = default_engine
        self._max_text_chars = max_text_chars
        self._idle_seconds = idle_seconds
        self._release_seconds = release_seconds
        self._actions = actions
        self._asr = asr
        self._voice = voice
        self._askers = askers
        self._sessions: dict[str, MeetingSession] = {}
        """By audit id: one owner's meeting ids never meet another's."""
        self._guards: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._letting_go: set[asyncio.Task[None]] = set()
        self._later = Later()
        """One pass a beat for the work every meeting left off its utterance path (action items)."""

    def get(self, meeting_id: str, owner: str) -> MeetingSession | None:
        return self._sessions.get(audit_id(owner, meeting_id))

    def __len__(self) -> int:
        return len(self._sessions)

    async def open(self, meeting_id: str, spec: MeetingSpec, owner: str) -> MeetingSession:
        if not MEETING_ID.fullmatch(meeting_id):
            raise ProtocolError(ErrorCode.bad_meeting_id)
        key = audit_id(owner, meeting_id)
        async with self._exclusive(key):
            if key in self._sessions:
                raise ProtocolError(ErrorCode.conflict, f"Meeting {meeting_id!r} is already open.")
            self._check_quota(owner)
            if not await self._store.claim(key):
                raise ProtocolError(ErrorCode.conflict, f"Meeting {meeting_id!r} is open on another server process.")
            try:
                if await self._store.has_meeting(key):
                    events = await self._store.events(key)
                    if any(e.kind in ENDED for e in events):
                        raise ProtocolError(ErrorCode.meeting_closed)
                    raise ProtocolError(
                        ErrorCode.conflict, f"Meeting {meeting_id!r} is already open; join it to resume."
                    )
                engine = await self._engines(spec.engine or self._default_engine)
                session = self._session(meeting_id, spec, engine, owner)
                await session.start()
            except BaseException:
                await self._store.release(key)
                raise
            self._add(session)
            return session

    async def find(self, meeting_id: str, owner: str) -> MeetingSession | None:
        """The caller's open meeting, rebuilt from its log when this process does not hold it; None when there
        is none (another tenant's meeting of that id is none of theirs: ids are namespaced per owner).

        Raises ProtocolError: `meeting_closed` for a meeting that ended, `conflict` while another process holds it.
        """
        if not MEETING_ID.fullmatch(meeting_id):
            return None
        return await self._find(audit_id(owner, meeting_id), meeting_id, owner)

    async def _find(self, key: str, meeting_id: str, owner: str) -> MeetingSession | None:
        session = self._sessions.get(key)
        if session is not None:
            return session
        async with self._exclusive(key):
            session = self._sessions.get(key)
            if session is None:
                session = await self._take_over(key, meeting_id, owner)
            return session

    def _check_quota(self, owner: str) -> None:
        if self._max_per_owner is not None and self._per_owner[owner] >= self._max_per_owner:
            raise ProtocolError(
                ErrorCode.too_many, f"This token has {self._per_owner[owner]} open meetings, the limit."
            )

    @contextlib.asynccontextmanager
    async def _exclusive(self, meeting_id: str) -> AsyncIterator[None]:
        """One creation or takeover of a given meeting at a time; different meetings do not wait for each other."""
        lock, users = self._guards.setdefault(meeting_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._guards[meeting_id]

    async def _take_over(self, key: str, meeting_id: str, owner: str) -> MeetingSession | None:
        record = await self._store.registered(key)
        if record is None:
            # No spec kept: the meeting never existed, or it ended (its spec is deleted with it).
            if not await self._store.has_meeting(key):
                return None
            raise ProtocolError(ErrorCode.meeting_closed)
        self._check_quota(owner)
        async with self._takeovers:
            self.taking_over += 1
            try:
                return await self._rebuild(key, meeting_id, owner, record)
            finally:
                self.taking_over -= 1

    async def _rebuild(self, key: str, meeting_id: str, owner: str, record: MeetingRecord) -> MeetingSession:
        if not await self._store.claim(key):
            raise ProtocolError(
                ErrorCode.conflict, f"Meeting {meeting_id!r} is open on another server process; retry there."
            )
        try:
            began = time.perf_counter()
            spec = MeetingSpec.model_validate(record.spec)
            events = await self._store.events(key)
            if any(e.kind in ENDED for e in events):
                await self._store.unregister(key)  # its end was recorded, the cleanup was not
                raise ProtocolError(ErrorCode.meeting_closed)
            extractor = self._actions(spec) if self._actions is not None else None
            rebuilt = await asyncio.to_thread(rebuild, meeting_id, spec, events, extractor)
            engine = await self._engines(rebuilt.engine or spec.engine or self._default_engine)
            session = self._session(meeting_id, spec, engine, rebuilt.owner or record.owner, extractor)
            session.restore(rebuilt)
            await session.taken_over(rebuilt)
        except BaseException:
            await self._store.release(key)
            raise
        self._add(session)
        if rebuilt.undecided is not None:
            session.resume_decision(rebuilt.undecided)
        log.info(
            "meeting_taken_over",
            meeting_id=meeting_id,
            audit_id=key,
            events=len(events),
            undecided=rebuilt.undecided,
            ms=round((time.perf_counter() - began) * 1000, 1),
        )
        return session

    def _session(
        self, meeting_id: str, spec: MeetingSpec, engine: Engine, owner: str, actions: Extractor | None = None
    ) -> MeetingSession:
        if actions is None and self._actions is not None:
            actions = self._actions(spec)
        return MeetingSession(
            meeting_id,
            spec,
            engine,
            self._store,
            self._metrics,
            owner=owner,
            max_text_chars=self._max_text_chars,
            actions=actions,
            on_closed=self._forget,
            asr=self._asr,
            voice=self._voice,
            audit_id=audit_id(owner, meeting_id),
            asker=self._askers(engine.name) if self._askers is not None else None,
            approval_timeout_s=self._approval_timeout_s,
            watch_limit=self._watch_limit,
            later=self._later,
        )

    def _add(self, session: MeetingSession) -> None:
        self._sessions[session.audit_id] = session
        self._per_owner[session.owner] += 1
        self._metrics.open_sessions.set(len(self._sessions))

    def _forget(self, session: MeetingSession) -> None:
        if self._sessions.get(session.audit_id) is session:
            del self._sessions[session.audit_id]
            self._per_owner[session.owner] -= 1
            if self._per_owner[session.owner] <= 0:
                del self._per_owner[session.owner]
        self._metrics.open_sessions.set(len(self._sessions))

    async def close_idle(self) -> int:
        """End meetings nobody came back to; let go of those detached past `release_seconds` (kept open)."""
        now = time.monotonic()
        idle = [s for s in self._sessions.values() if s.idle_seconds(now) >= self._idle_seconds]
        closed = 0
        for session in idle:
            # A client may have come back while earlier sessions were being closed.
            if session.idle_seconds(time.monotonic()) >= self._idle_seconds:
                await session.close("idle")
                closed += 1
        if self._release_seconds is not None:
            for session in list(self._sessions.values()):
                if self._release_seconds <= session.idle_seconds(time.monotonic()) < self._idle_seconds:
                    # Its client may come back through another process, which can then take the meeting.
                    await session.suspend("released")
        # Meetings no process holds (let go, or their process died) end the same way once idle long enough.
        for key in await self._store.stale(time.time() - self._idle_seconds):
            if key in self._sessions:
                continue
            record = await self._store.registered(key)
            if record is None:
                continue
            with contextlib.suppress(ProtocolError):  # another process holds it, or it ended meanwhile
                session = await self._find(key, client_id(record.owner, key), record.owner)
                if session is not None and not session.connected:
                    await session.close("idle")
                    closed += 1
        return closed

    async def reap_forever(self) -> None:
        shortest = min(self._idle_seconds, self._release_seconds or self._idle_seconds)
        interval = max(0.05, min(shortest / 4, 15.0))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.close_idle()
            except Exception:
                log.exception("reaper_failed")

    def end_watching(self) -> None:
        """End every watcher's stream (the server is stopping; the meetings are not)."""
        for session in self._sessions.values():
            session.watchers.close()

    async def close_all(self, reason: str) -> None:
        for session in list(self._sessions.values()):
            await session.close(reason)

    async def suspend_all(self, reason: str) -> None:
        """Let every meeting go without ending it: they resume from the log, here after a restart or elsewhere."""
        for session in list(self._sessions.values()):
            await session.suspend(reason)

    def lost(self) -> None:
        """The store says this process no longer holds its meetings: let them go at once."""
        for session in list(self._sessions.values()):
            task = asyncio.get_running_loop().create_task(session.suspend("ownership_lost"))
            self._letting_go.add(task)
            task.add_done_callback(self._letting_go.discard)
