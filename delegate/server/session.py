"""MeetingSession: one live meeting (state, engine, pending decision, decisions, actions).

A session outlives its connections: a client that drops and comes back finds it as it left it.
Its sides live in their own modules: audio input (session_audio), action items (session_actions),
decisions (session_decisions), what waits for the principal's approval and who watches
(session_approval); what they share is in session_base.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING

import structlog

from delegate.actions import Extractor
from delegate.ask import Answer, Asker, Audience, EmbeddedAsker
from delegate.engines.base import Engine
from delegate.meeting import MeetingState
from delegate.models import UNKNOWN_SPEAKER, Decision, Profile, ProposedAction
from delegate.server.approval import HeldSpeech, for_bot
from delegate.server.metrics import Metrics
from delegate.server.protocol import (
    Ack,
    AnswerMessage,
    Ask,
    AudioEnd,
    AudioStart,
    BackgroundView,
    ClientMessage,
    ErrorCode,
    ErrorMessage,
    Feedback,
    Join,
    Leave,
    MeetingEnded,
    MeetingInfo,
    MeetingSpec,
    ProtocolError,
    UtteranceEvent,
    UtteranceIn,
)
from delegate.server.rebuild import Rebuilt
from delegate.server.session_actions import ActionDesk
from delegate.server.session_audio import AudioInput, TranscriberFactory
from delegate.server.session_base import CLOSE_REPLACED, CLOSE_RESTART, Connection
from delegate.server.session_decisions import Decisions
from delegate.server.session_voice import RECENT_SPEECH, VoiceOut, VoiceSource
from delegate.server.watch import Watchers
from delegate.store import AuditKind, MeetingRecord, Store, UnstorableEvent

if TYPE_CHECKING:
    from delegate.asr import Transcriber

log = structlog.get_logger("delegate.session")


class MeetingSession(AudioInput, ActionDesk, Decisions, VoiceOut):
    """Feeds the meeting state, runs the engine after each utterance, records everything before telling."""

    def __init__(
        self,
        meeting_id: str,
        spec: MeetingSpec,
        engine: Engine,
        store: Store,
        metrics: Metrics,
        *,
        owner: str,
        max_text_chars: int,
        actions: Extractor | None = None,
        on_closed: Callable[[MeetingSession], None] | None = None,
        asr: TranscriberFactory | None = None,
        audit_id: str | None = None,
        asker: Asker | None = None,
        voice: VoiceSource | None = None,
        approval_timeout_s: float = 30.0,
        watch_limit: int = 1000,
    ) -> None:
        self.meeting_id = meeting_id
        self.audit_id = audit_id or meeting_id
        """The meeting's key in the audit log: the id namespaced by its owner (`auth.audit_id`)."""
        self.principal: Profile = spec.principal
        self.engine = engine
        self.owner = owner
        self.state = MeetingState(  # a live meeting happens today: due dates count from it
            meeting_id=meeting_id, attendees=spec.all_attendees(), names=dict(spec.names),
            date=datetime.now(UTC).date(),
        )
        self.decisions: list[Decision] = []
        self.actions: dict[str, ProposedAction] = {}
        self.created_at = time.time()
        self.last_activity = self.created_at
        self.closed = False
        self.suspended = False
        """Let go without ending: a frame that still reaches this object is told to join again."""
        self._spec = spec
        self._store = store
        self._metrics = metrics
        self._max_text_chars = max_text_chars
        self._extractor = actions
        self._on_closed = on_closed
        self._inbound = asyncio.Lock()
        self._conn: Connection | None = None
        self._detached_at = time.monotonic()
        self._pending: asyncio.Task[None] | None = None
        self._pending_id: int | None = None
        self._refining: set[asyncio.Task[None]] = set()
        self._committing = False
        self._asr = asr
        self._audio: Transcriber | None = None
        self._audio_speaker = UNKNOWN_SPEAKER
        self._audio_clock = 0.0
        self._audio_heard_s = 0.0
        self._hearing = asyncio.Lock()
        self._ending: set[asyncio.Task[None]] = set()
        self._audio_rate = 16000
        self._voice = voice if voice is not None and voice.available else None
        self._voice_on = False
        self._warming = None
        self._playing = None
        self._spoken = deque(maxlen=RECENT_SPEECH)
        self._asker: Asker = asker or EmbeddedAsker()
        self._asked = False
        self._preparing: asyncio.Task[None] | None = None
        self.approval = spec.approval
        self.speech: dict[int, HeldSpeech] = {}
        """Speech held for the principal's approval, by utterance id."""
        self.watchers = Watchers(watch_limit)
        self._approval_timeout_s = approval_timeout_s
        self._speech_timer: asyncio.Task[None] | None = None
        self._ended_reason: str | None = None
        self._log = log.bind(meeting_id=meeting_id)

    # --- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> MeetingSession:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close("ended")

    async def start(self) -> None:
        # The registry keeps the full spec (private items too) so that another process can take over.
        await self._store.register(
            MeetingRecord(
                meeting_id=self.audit_id,
                owner=self.owner,
                # A `CreateMeeting` body is a spec plus its id: the registry keeps the spec alone.
                spec=self._spec.model_dump(mode="json", include=set(MeetingSpec.model_fields)),
                created_at=self.created_at,
            )
        )
        await self._audit(
            AuditKind.meeting_created,
            # The audit log is append-only: what the principal keeps private never goes into it.
            principal=self.principal.model_copy(
                update={"background": [b for b in self.principal.background if b.shareable]}
            ).model_dump(mode="json"),
            private_items=sum(not b.shareable for b in self.principal.background),
            # Where the private items were, so that `used_background` indices still read after the meeting.
            private_at=[i for i, b in enumerate(self.principal.background) if not b.shareable],
            attendees=self._spec.attendees,
            names=self._spec.names,
            engine=self.engine.name,
            owner=self.owner,
            approval=self.approval,
        )
        self._log.info("meeting_created", engine=self.engine.name, principal=self.principal.name)

    async def close(self, reason: str, kind: AuditKind = AuditKind.closed) -> None:
        """End the meeting: drop a pending decision, record why, forget the session."""
        async with self._inbound:
            if self.closed:
                return
            await self._settle_pending(reason=reason)
            await self._expire_speech("meeting_ended")
            for task in self._refining:
                task.cancel()
            await self._stop_voice(reason)
            self.closed = True
            self._drop_audio()
            await self._audit(kind, reason=reason)
            await self._store.unregister(self.audit_id)  # its private items go with it
            await self._store.release(self.audit_id)
            self._ended_reason = reason
            self._publish(MeetingEnded(meeting_id=self.meeting_id, reason=reason))
            self.watchers.close()
        self._log.info("meeting_closed", reason=reason)
        if self._on_closed is not None:
            self._on_closed(self)

    async def suspend(self, reason: str) -> None:
        """Let the meeting go without ending it (server stopping, ownership lost): it resumes from its log.

        A pending decision is abandoned unrecorded, so the process that takes over decides it again; a
        pending speech is left pending, and the process that takes over records it expired.
        """
        self._cancel_timer()
        task, self._pending = self._pending, None
        if task is not None and not task.done():
            if self._committing:
                await asyncio.shield(task)  # being recorded: let it finish, or it would be decided twice
            else:
                task.cancel()
        for pending in [task, *self._refining]:
            if pending is not None and not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pending
        await self._stop_voice(reason)
        async with self._inbound:
            if self.closed:
                return
            self.closed = self.suspended = True
            self._drop_audio()
            conn, self._conn = self._conn, None
            self.watchers.close()  # they reconnect, and find the meeting wherever it is resumed
        with contextlib.suppress(Exception):
            await self._store.release(self.audit_id)
        if conn is not None:
            await conn.close(CLOSE_RESTART, reason)
        self._log.info("meeting_suspended", reason=reason)
        if self._on_closed is not None:
            self._on_closed(self)

    def restore(self, rebuilt: Rebuilt) -> None:
        """Take the state rebuilt from the log; `resume_decision` then decides what was left undecided."""
        self.state = rebuilt.state
        self.decisions = list(rebuilt.decisions)
        self.actions = dict(rebuilt.actions)
        self.speech = dict(rebuilt.speech)
        if rebuilt.created_at is not None:
            self.created_at = rebuilt.created_at

    def _attach(self, conn: Connection) -> Connection | None:
        """Make `conn` the session's connection; returns the one it replaces."""
        previous, self._conn = self._conn, conn
        return previous if previous is not conn else None

    async def _retire(self, previous: Connection | None) -> None:
        # The client came back on a new connection before the old one was noticed dead.
        if previous is not None:
            await previous.close(CLOSE_REPLACED, "replaced by a newer connection")

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def _still_open(self) -> None:
        # Checked again under the lock: a leave or the idle reaper may have closed the meeting while
        # this frame waited for its turn.
        if self.suspended:
            raise ProtocolError(ErrorCode.conflict, "This meeting is being handed over; join it again.")
        if self.closed:
            raise ProtocolError(ErrorCode.meeting_closed)

    def idle_seconds(self, now: float) -> float:
        """How long the session has had no connection (0 while one is open)."""
        return 0.0 if self._conn is not None else now - self._detached_at

    def info(self) -> MeetingInfo:
        return MeetingInfo(
            meeting_id=self.meeting_id,
            principal=self.principal.name,
            engine=self.engine.name,
            attendees=list(self.state.attendees),
            utterances=len(self.state),
            last_utterance_id=self.state.last_id,
            decisions=len(self.decisions),
            actions=len(self.actions),
            connected=self.connected,
            created_at=self.created_at,
            last_activity=self.last_activity,
            approval=self.approval,
            background=BackgroundView.of(self.principal.background),
        )

    # --- inbound ------------------------------------------------------------------------------------

    async def handle(self, message: ClientMessage, conn: Connection) -> None:
        """Act on one client message arriving on `conn`, which becomes the session's connection.

        A client mistake raises ProtocolError and changes nothing.
        """
        self._still_open()
        self.last_activity = time.time()
        if isinstance(message, Join):
            await self._on_join(message, conn)
            return
        await self._retire(self._attach(conn))
        match message:
            case UtteranceIn() if message.final and await self._typed_echo(message):
                await self._send(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=message.id))
            case UtteranceIn():
                await self._on_utterance(message)
            case Feedback():
                await self._on_feedback(message)
            case Leave():
                await self.close(message.reason or "client_left", kind=AuditKind.left)
                await self._send(Ack(of="leave", meeting_id=self.meeting_id))
            case AudioStart():
                await self._on_audio_start(message)
            case AudioEnd():
                await self._end_audio()
                await self._send(Ack(of="audio_end", meeting_id=self.meeting_id))
            case Ask():
                answer = await self.ask(message.question, message.audience, message.id)
                await self._send(AnswerMessage(meeting_id=self.meeting_id, id=message.id, answer=answer))

    async def _on_join(self, message: Join, conn: Connection) -> None:
        if message.principal is not None and message.principal != self.principal:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's principal is {self.principal.name!r}.")
        if message.engine is not None and message.engine != self.engine.name:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's engine is {self.engine.name!r}.")
        if message.approval is not None and message.approval != self.approval:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's approval is {self.approval!r}.")
        async with self._inbound:
            self._still_open()
            await self._audit(
                AuditKind.joined,
                client_last_utterance_id=message.last_utterance_id,
                last_utterance_id=self.state.last_id,
            )
            # A client that lost its connection may have missed the decision on its latest utterance.
            # Decisions recorded from here on go to `conn` on their own, after the ack (sends are serialized).
            # A held speech still pending goes out once settled; one settled while the client was away, while the
            # meeting only went on with backchannels or its asker, comes before the newer decisions.
            latest = self.decisions[-1] if self.decisions else None
            if latest is not None and latest.utterance_id != self.state.last_id:
                latest = None
            held = self._still_held()
            earlier = self._decision_on(held.utterance_id) if held is not None else None
            missed = {d.utterance_id: d for d in (earlier, latest) if d is not None}
            views = [v for d in missed.values() if (v := for_bot(d, self.speech.get(d.utterance_id))) is not None]
            previous = self._attach(conn)
            self._voice_on = message.voice is not False and self._voice is not None
            if self._voice_on:
                self._warm_voice()
            await self._send(Ack(of="join", meeting_id=self.meeting_id, last_utterance_id=self.state.last_id))
            if message.voice and self._voice is None:
                await self._send(ErrorMessage.of(ProtocolError(ErrorCode.voice_not_supported)))
            for view in views:
                await self._release(*view, resumed=True)
        await self._retire(previous)
        self._log.info(
            "joined", resume=message.last_utterance_id is not None, last_utterance_id=self.state.last_id
        )

    async def _on_utterance(self, message: UtteranceIn) -> None:
        received = time.perf_counter()
        if not message.final:
            # Partial transcripts show progress only: no decision, no record, no id used up.
            await self._send(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=message.id))
            return
        if not message.text.strip():
            raise ProtocolError(ErrorCode.empty_text, utterance_id=message.id)
        if len(message.text) > self._max_text_chars:
            raise ProtocolError(
                ErrorCode.too_large,
                f"The text has {len(message.text)} characters; the limit is {self._max_text_chars}.",
                utterance_id=message.id,
            )
        async with self._inbound:
            self._still_open()
            last = self.state.last_id
            if last is not None and message.id <= last:
                seen = any(u.id == message.id for u in reversed(self.state.utterances[-64:]))
                detail = (
                    f"Utterance {message.id} was already received."
                    if seen or message.id == last
                    else f"Utterance ids must grow: got {message.id} after {last}."
                )
                raise ProtocolError(ErrorCode.bad_utterance_id, detail, utterance_id=message.id)
            utterance = message.utterance()
            await self.barge_in(by=utterance.speaker)  # someone else speaks: the delegate stops
            await self._settle_pending(reason="newer_utterance", newer=utterance.id)
            await self._floor_check(utterance)
            try:
                await self._audit(
                    AuditKind.utterance, utterance.id, **utterance.model_dump(mode="json", exclude={"id"})
                )
            except UnstorableEvent as e:
                raise ProtocolError(ErrorCode.bad_message, f"{e}.", utterance_id=utterance.id) from e
            self.state.add(utterance)
            self._publish(UtteranceEvent(meeting_id=self.meeting_id, utterance=utterance))
            self._asker.observe(self.state)
            self._prepare_answers()
            self._metrics.utterances.inc()
            # The ack goes out before the decision task can run, so a client always sees them in that order.
            await self._send(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=utterance.id))
            self._pending_id = utterance.id
            self._committing = False
            self._pending = asyncio.create_task(
                self._decide(utterance.id, received), name=f"decide-{self.meeting_id}"
            )
            if self._extractor is not None:
                await self._extract_actions(utterance.id)

    async def _on_feedback(self, message: Feedback) -> None:
        if message.action_id is not None:
            await self.resolve_action(message.action_id, message.verdict, message.comment, ack=True)
            return
        utterance_id = message.utterance_id
        assert utterance_id is not None
        if utterance_id in self.speech:  # held for approval: the principal's verdict settles it
            await self.resolve_speech(utterance_id, message.verdict, message.text, message.comment, ack=True)
            return
        async with self._inbound:
            self._still_open()
            if not any(d.utterance_id == utterance_id for d in self.decisions):
                raise ProtocolError(ErrorCode.not_found, f"No decision on utterance {utterance_id}.")
            if message.text is not None:
                raise ProtocolError(
                    ErrorCode.not_pending,
                    f"The decision on utterance {utterance_id} was not held for approval: there is nothing to edit.",
                    utterance_id=utterance_id,
                )
            # A verdict on a decision already sent: recorded, for whoever reviews the meeting.
            await self._audit(AuditKind.feedback, utterance_id, verdict=message.verdict, comment=message.comment)
            await self._send(Ack(of="feedback", meeting_id=self.meeting_id, utterance_id=utterance_id))

    def _prepare_answers(self) -> None:
        """Once the meeting has been asked about, keep its retrieval index current in a worker thread,
        one rebuild at a time, so that the next question does not wait for it."""
        if not self._asked or (self._preparing is not None and not self._preparing.done()):
            return
        if self._asker.stale(self.state):
            self._preparing = asyncio.create_task(
                asyncio.to_thread(self._asker.prepare, self.state), name=f"ask-index-{self.meeting_id}"
            )

    async def ask(self, question: str, audience: Audience = "principal", ask_id: str | int | None = None) -> Answer:
        """Answer a question about the meeting so far; the question and the answer are both audited.

        Not under the inbound lock: an LLM answer may take seconds, and utterances must not wait for it
        (the meeting only grows meanwhile; the answer is about what was said when it was asked).
        """
        async with self._inbound:
            self._still_open()
            await self._audit(AuditKind.ask, self.state.last_id, question=question, audience=audience, id=ask_id)
        self._asked = True
        answer = await self._asker.ask(self.state, question, self.principal, audience)
        record = answer.model_dump(mode="json")
        if any(not self.principal.background[i].shareable for i in answer.background_items):
            # The principal may read their private notes back; the append-only log never holds them.
            record["text"] = "(not recorded: the answer repeats the principal's private notes)"
        await self._audit(AuditKind.answer, self.state.last_id, id=ask_id, **record)
        self._log.info(
            "answer", answered=answer.answered, engine=answer.engine, turns=len(answer.turn_ids),
            latency_ms=round(answer.latency_ms, 2),
        )
        return answer
