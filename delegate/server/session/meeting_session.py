"""MeetingSession: one live meeting, composed of its parts, each holding its own state.

A session outlives its connections: a client that drops and comes back finds it as it left it. Its parts,
passed what they need when the session is made: `outbox` (the connection, the audit log, the watchers),
`voice` (voice out, barge-in, echo), `approval_desk` (speech held for the principal), `decisions`
(the pending one, the engine, the record), `action_desk` (action items), `audio` (audio in). What they all
read (whose meeting, the meeting so far, open or not) is the `core`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from types import TracebackType

import structlog

from delegate.actions import Extractor
from delegate.ask.base import Answer, Asker, Audience
from delegate.ask.embedded import EmbeddedAsker
from delegate.decide.base import Engine
from delegate.decide.reading import read_brief_ahead
from delegate.meeting import MeetingState
from delegate.models import Decision, Profile, ProposedAction
from delegate.server.approval import HeldSpeech, for_bot
from delegate.server.metrics import Metrics
from delegate.server.protocol import (
    Ack,
    Admission,
    AdmissionEvent,
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
from delegate.server.session import redaction
from delegate.server.session.actions import ActionDesk
from delegate.server.session.admission import LEAVING, AdmissionDesk
from delegate.server.session.approval_desk import ApprovalDesk
from delegate.server.session.audio_in import AudioIn, TranscriberFactory
from delegate.server.session.core import MeetingCore
from delegate.server.session.decisions import Decisions
from delegate.server.session.later import Later
from delegate.server.session.outbox import CLOSE_REPLACED, CLOSE_RESTART, Connection, Outbox
from delegate.server.session.release import Release
from delegate.server.session.voice_out import VoiceOut, VoiceSource
from delegate.server.watch import Watcher, Watchers, replay
from delegate.store import AuditKind, MeetingRecord, Store, UnstorableEvent

log = structlog.get_logger("delegate.session")

BRIEF_WAIT_S = 2.0
"""How long a meeting that starts (or is taken over) waits for its brief to be read before it answers `join`."""


class MeetingSession:
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
        later: Later | None = None,
    ) -> None:
        self.owner = owner
        self.created_at = time.time()
        self.last_activity = self.created_at
        self.core = MeetingCore(
            meeting_id=meeting_id,
            audit_id=audit_id or meeting_id,
            principal=spec.delegated(),
            # A live meeting happens today: due dates count from it.
            state=MeetingState(
                meeting_id=meeting_id, attendees=spec.all_attendees(), names=dict(spec.names),
                date=datetime.now(UTC).date(),
            ),
            log=log.bind(meeting_id=meeting_id),
        )
        self.outbox = Outbox(self.core, store, Watchers(watch_limit))
        self.voice = VoiceOut(self.core, self.outbox, voice)
        release = Release(self.core, self.outbox, self.voice)
        made: list[Decision] = []
        self.admission = AdmissionDesk(self.core, self.outbox, self.voice, spec.admission)
        self.approval_desk = ApprovalDesk(self.core, self.outbox, spec.approval, approval_timeout_s, made, release)
        self.decisions = Decisions(
            self.core, self.outbox, engine, metrics, self.approval_desk, release, made, gate=self.admission.gate
        )
        self.action_desk = ActionDesk(self.core, self.outbox, actions, spec.approval, metrics, later)
        self.audio = AudioIn(self.core, self.outbox, self.voice, asr, on_final=self._on_utterance)
        self._release = release
        self._spec = spec
        self._store = store
        self._metrics = metrics
        self._max_text_chars = max_text_chars
        self._on_closed = on_closed
        self._asker: Asker = asker or EmbeddedAsker()
        self._asked = False
        self._preparing: asyncio.Task[None] | None = None
        self._ended_reason: str | None = None
        self._log = self.core.log

    # --- what the meeting is -------------------------------------------------------------------------

    @property
    def meeting_id(self) -> str:
        return self.core.meeting_id

    @property
    def audit_id(self) -> str:
        return self.core.audit_id

    @property
    def principal(self) -> Profile:
        return self.core.principal

    @property
    def state(self) -> MeetingState:
        return self.core.state

    @property
    def engine(self) -> Engine:
        return self.decisions.engine

    @property
    def approval(self) -> str:
        return self.approval_desk.approval

    @property
    def closed(self) -> bool:
        return self.core.closed

    @property
    def suspended(self) -> bool:
        return self.core.suspended

    @property
    def actions(self) -> dict[str, ProposedAction]:
        return self.action_desk.actions

    @property
    def speech(self) -> dict[int, HeldSpeech]:
        """Speech held for the principal's approval, by utterance id."""
        return self.approval_desk.speech

    @property
    def refining(self) -> bool:
        return self.action_desk.refining

    @property
    def watchers(self) -> Watchers:
        return self.outbox.watchers

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
        await self.outbox.audit(
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
            admission=self.admission.state,
        )
        # The principal's brief is read by the sentence encoder once, now, not in the meeting's first reply.
        await read_brief_ahead(self.principal, BRIEF_WAIT_S)
        self._log.info("meeting_created", engine=self.engine.name, principal=self.principal.name)

    async def close(self, reason: str, kind: AuditKind = AuditKind.closed) -> None:
        """End the meeting: drop a pending decision, record why, forget the session."""
        async with self.core.inbound:
            if self.closed:
                return
            await self.decisions.settle_pending(reason=reason)
            await self.action_desk.flush()  # the last utterance's actions, before the meeting ends
            await self.approval_desk.expire_all("meeting_ended")
            self.action_desk.cancel_refining()
            await self.voice.stop(reason)
            self.core.closed = True
            self.audio.drop()
            await self.outbox.audit(kind, reason=reason)
            await self._store.unregister(self.audit_id)  # its private items go with it
            await self._store.release(self.audit_id)
            self._ended_reason = reason
            self.outbox.publish(MeetingEnded(meeting_id=self.meeting_id, reason=reason))
            self.watchers.close()
        self._log.info("meeting_closed", reason=reason)
        if self._on_closed is not None:
            self._on_closed(self)

    async def suspend(self, reason: str) -> None:
        """Let the meeting go without ending it (server stopping, ownership lost): it resumes from its log.

        A pending decision is abandoned unrecorded, so the process that takes over decides it again; a
        pending speech is left pending, and the process that takes over records it expired.
        """
        self.approval_desk.cancel_timer()
        await self.decisions.abandon()
        for task in self.action_desk.cancel_refining():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.voice.stop(reason)
        async with self.core.inbound:
            if self.closed:
                return
            await self.action_desk.flush()
            self.core.closed = self.core.suspended = True
            self.audio.drop()
            conn, self.outbox.conn = self.outbox.conn, None
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
        self.core.state = rebuilt.state
        self.decisions.made[:] = rebuilt.decisions
        if rebuilt.admission is not None:
            self.admission.state = rebuilt.admission
            self.admission.followed = self.admission.followed or rebuilt.admission != "in_meeting" or rebuilt.disclosed
        self.admission.disclosed = self.admission.disclosed or rebuilt.disclosed
        self.action_desk.actions.update(rebuilt.actions)
        self.approval_desk.speech.update(rebuilt.speech)
        if rebuilt.created_at is not None:
            self.created_at = rebuilt.created_at

    async def taken_over(self, rebuilt: Rebuilt) -> None:
        """Record that this process took the meeting over; a speech held elsewhere has lost its timer."""
        await self.outbox.audit(
            AuditKind.taken_over,
            rebuilt.state.last_id,
            utterances=len(rebuilt.state),
            decisions=len(rebuilt.decisions),
            actions=len(rebuilt.actions),
            undecided=rebuilt.undecided,
        )
        # Its timer died with the process that held it; the principal may not even be watching here.
        await self.approval_desk.expire_all("taken_over")
        await read_brief_ahead(self.principal, BRIEF_WAIT_S)

    def resume_decision(self, utterance_id: int) -> None:
        self.decisions.start(utterance_id)

    async def _retire(self, previous: Connection | None) -> None:
        # The client came back on a new connection before the old one was noticed dead.
        if previous is not None:
            await previous.close(CLOSE_REPLACED, "replaced by a newer connection")

    @property
    def connected(self) -> bool:
        return self.outbox.connected

    def detach(self, conn: Connection) -> None:
        self.outbox.detach(conn)

    def idle_seconds(self, now: float) -> float:
        """How long the session has had no connection (0 while one is open)."""
        return 0.0 if self.outbox.connected else now - self.outbox.detached_at

    def info(self) -> MeetingInfo:
        return MeetingInfo(
            meeting_id=self.meeting_id,
            principal=self.principal.name,
            engine=self.engine.name,
            attendees=list(self.state.attendees),
            utterances=len(self.state),
            last_utterance_id=self.state.last_id,
            decisions=len(self.decisions.made),
            actions=len(self.actions),
            connected=self.connected,
            created_at=self.created_at,
            last_activity=self.last_activity,
            approval=self.approval,
            speaking=self.principal.speaking,
            admission=self.admission.state,
            background=BackgroundView.of(self.principal.background),
        )

    def watch(self) -> Watcher:
        """A new watcher: the meeting so far, then live. Built and subscribed with no await in between."""
        events = replay(
            self.meeting_id, self.state.utterances, self.decisions.made, self.speech, self.actions.values(),
            ended=self._ended_reason,
        )
        if self.admission.followed:  # where the bot stands now, first: the console shows it before the meeting so far
            events.insert(0, AdmissionEvent(meeting_id=self.meeting_id, state=self.admission.state))
        return self.watchers.subscribe(events)

    # --- inbound ------------------------------------------------------------------------------------

    async def handle(self, message: ClientMessage, conn: Connection) -> None:
        """Act on one client message arriving on `conn`, which becomes the session's connection.

        A client mistake raises ProtocolError and changes nothing.
        """
        self.core.still_open()
        self.last_activity = time.time()
        if isinstance(message, Join):
            await self._on_join(message, conn)
            return
        await self._retire(self.outbox.attach(conn))
        match message:
            case UtteranceIn() if message.final and await self.voice.typed_echo(message):
                await self.outbox.send(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=message.id))
            case UtteranceIn():
                await self._on_utterance(message)
            case Feedback():
                await self._on_feedback(message)
            case Leave():
                await self.close(self.core.redact(message.reason) or "client_left", kind=AuditKind.left)
                await self.outbox.send(Ack(of="leave", meeting_id=self.meeting_id))
            case AudioStart():
                await self.audio.start(message)
            case AudioEnd():
                await self.audio.end()
                await self.outbox.send(Ack(of="audio_end", meeting_id=self.meeting_id))
            case Ask():
                answer = await self.ask(message.question, message.audience, message.id)
                await self.outbox.send(AnswerMessage(meeting_id=self.meeting_id, id=message.id, answer=answer))
            case Admission():
                await self._on_admission(message)

    async def audio_frame(self, pcm: bytes) -> None:
        """One binary frame of the open audio stream."""
        self.last_activity = time.time()
        await self.audio.feed(pcm)

    async def _on_join(self, message: Join, conn: Connection) -> None:
        if message.principal is not None and message.principal != self._spec.principal:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's principal is {self.principal.name!r}.")
        if message.engine is not None and message.engine != self.engine.name:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's engine is {self.engine.name!r}.")
        if message.approval is not None and message.approval != self.approval:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's approval is {self.approval!r}.")
        if message.speaking is not None and message.speaking != self.principal.speaking:
            raise ProtocolError(ErrorCode.conflict, f"This meeting's speaking level is {self.principal.speaking.value!r}.")
        async with self.core.inbound:
            self.core.still_open()
            await self.outbox.audit(
                AuditKind.joined,
                client_last_utterance_id=message.last_utterance_id,
                last_utterance_id=self.state.last_id,
            )
            # A client that lost its connection may have missed the decision on its latest utterance.
            # Decisions recorded from here on go to `conn` on their own, after the ack (sends are serialized).
            # A held speech still pending goes out once settled; one settled while the client was away, while the
            # meeting only went on with backchannels or its asker, comes before the newer decisions.
            latest = self.decisions.last
            if latest is not None and latest.utterance_id != self.state.last_id:
                latest = None
            held = self.approval_desk.still_held()
            earlier = self.approval_desk.decision_on(held.utterance_id) if held is not None else None
            missed = {d.utterance_id: d for d in (earlier, latest) if d is not None}
            views = [v for d in missed.values() if (v := for_bot(d, self.speech.get(d.utterance_id))) is not None]
            previous = self.outbox.attach(conn)
            self.voice.join(message.voice)
            await self.outbox.send(Ack(of="join", meeting_id=self.meeting_id, last_utterance_id=self.state.last_id))
            if message.voice and not self.voice.available:
                await self.outbox.send(ErrorMessage.of(ProtocolError(ErrorCode.voice_not_supported)))
            for view in views:
                await self._release(*view, resumed=True)
        await self._retire(previous)
        self._log.info(
            "joined", resume=message.last_utterance_id is not None, last_utterance_id=self.state.last_id
        )

    async def expect_bot(self, detail: str) -> None:
        """A bot hosted by the server is on its way in: the delegate waits for its admission (`AdmissionDesk`)."""
        async with self.core.inbound:
            self.core.still_open()
            await self.admission.expect_bot(detail)

    async def _on_admission(self, message: Admission) -> None:
        """The bot's admission changed; removed from the meeting, or the meeting ended: the delegate leaves."""
        async with self.core.inbound:
            self.core.still_open()
            await self.admission.change(message.state, self.core.redact(message.detail))
        if message.state in LEAVING:
            await self.close(message.state)
        await self.outbox.send(Ack(of="admission", meeting_id=self.meeting_id))

    async def _on_utterance(self, message: UtteranceIn) -> None:
        """The steps of one utterance, each by the part it belongs to."""
        received = time.perf_counter()
        if not message.final:
            # Partial transcripts show progress only: no decision, no record, no id used up.
            await self.outbox.send(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=message.id))
            return
        self._check_text(message)
        async with self.core.inbound:
            self.core.still_open()
            self._check_id(message.id)
            # The previous utterance's actions, if its beat has not come yet: extracted while it is the latest.
            await self.action_desk.flush()
            utterance = message.utterance()
            await self.voice.barge_in(by=utterance.speaker)  # someone else speaks: the delegate stops
            await self.decisions.settle_pending(reason="newer_utterance", newer=utterance.id)
            await self.approval_desk.floor_check(utterance)
            try:
                await self.outbox.audit(
                    AuditKind.utterance, utterance.id, **utterance.model_dump(mode="json", exclude={"id"})
                )
            except UnstorableEvent as e:
                raise ProtocolError(ErrorCode.bad_message, f"{e}.", utterance_id=utterance.id) from e
            self.state.add(utterance)
            self.outbox.publish(UtteranceEvent(meeting_id=self.meeting_id, utterance=utterance))
            self._asker.observe(self.state)
            self._prepare_answers()
            self._metrics.utterances.inc()
            # The ack goes out before the decision task can run, so a client always sees them in that order.
            await self.outbox.send(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=utterance.id))
            self.decisions.start(utterance.id, received)
            self.action_desk.extract_later(utterance.id)

    def _check_text(self, message: UtteranceIn) -> None:
        if not message.text.strip():
            raise ProtocolError(ErrorCode.empty_text, utterance_id=message.id)
        if len(message.text) > self._max_text_chars:
            raise ProtocolError(
                ErrorCode.too_large,
                f"The text has {len(message.text)} characters; the limit is {self._max_text_chars}.",
                utterance_id=message.id,
            )

    def _check_id(self, utterance_id: int) -> None:
        last = self.state.last_id
        if last is not None and utterance_id <= last:
            seen = any(u.id == utterance_id for u in reversed(self.state.utterances[-64:]))
            detail = (
                f"Utterance {utterance_id} was already received."
                if seen or utterance_id == last
                else f"Utterance ids must grow: got {utterance_id} after {last}."
            )
            raise ProtocolError(ErrorCode.bad_utterance_id, detail, utterance_id=utterance_id)

    async def _on_feedback(self, message: Feedback) -> None:
        if message.action_id is not None:
            await self.action_desk.resolve_action(message.action_id, message.verdict, message.comment, ack=True)
            return
        utterance_id = message.utterance_id
        assert utterance_id is not None
        if utterance_id in self.speech:  # held for approval: the principal's verdict settles it
            await self.approval_desk.resolve_speech(
                utterance_id, message.verdict, message.text, message.comment, ack=True
            )
            return
        async with self.core.inbound:
            self.core.still_open()
            if not any(d.utterance_id == utterance_id for d in self.decisions.made):
                raise ProtocolError(ErrorCode.not_found, f"No decision on utterance {utterance_id}.")
            if message.text is not None:
                raise ProtocolError(
                    ErrorCode.not_pending,
                    f"The decision on utterance {utterance_id} was not held for approval: there is nothing to edit.",
                    utterance_id=utterance_id,
                )
            # A verdict on a decision already sent: recorded, for whoever reviews the meeting.
            await self.outbox.audit(
                AuditKind.feedback, utterance_id, verdict=message.verdict, comment=self.core.redact(message.comment)
            )
            await self.outbox.send(Ack(of="feedback", meeting_id=self.meeting_id, utterance_id=utterance_id))

    # --- the principal's verdicts (REST) and actions found elsewhere ---------------------------------

    async def resolve_speech(
        self, utterance_id: int, verdict: str, text: str | None = None, comment: str = ""
    ) -> HeldSpeech:
        return await self.approval_desk.resolve_speech(utterance_id, verdict, text, comment)

    async def resolve_action(self, action_id: str, verdict: str, comment: str = "") -> ProposedAction:
        return await self.action_desk.resolve_action(action_id, verdict, comment)

    async def propose(self, actions: Iterable[ProposedAction]) -> None:
        """Record and send actions found outside the utterance path (e.g. by a slower extractor)."""
        await self.action_desk.propose(actions)

    # --- asking -------------------------------------------------------------------------------------

    def _prepare_answers(self) -> None:
        """Once the meeting has been asked about, keep its retrieval index current in a worker thread,
        one rebuild at a time, so that the next question does not wait for it."""
        if not self._asked or (self._preparing is not None and not self._preparing.done()):
            return
        if self._asker.stale(self.state):
            self._preparing = asyncio.create_task(
                asyncio.to_thread(self._asker.prepare, self.state), name=f"ask-index-{self.meeting_id}"
            )

    async def ask(self, question: str, audience: Audience = "meeting", ask_id: str | int | None = None) -> Answer:
        """Answer a question about the meeting so far; the question and the answer are both audited, with
        what gives away the principal's private notes redacted (`redaction`).

        Not under the inbound lock: an LLM answer may take seconds, and utterances must not wait for it
        (the meeting only grows meanwhile; the answer is about what was said when it was asked).
        """
        async with self.core.inbound:
            self.core.still_open()
            await self.outbox.audit(
                AuditKind.ask, self.state.last_id, question=self.core.redact(question), audience=audience, id=ask_id
            )
        self._asked = True
        answer = await self._asker.ask(self.state, question, self.principal, audience)
        # The principal may read their private notes back; the append-only log never holds them.
        record = redaction.answer_record(answer, self.principal, self.state.quotable())
        await self.outbox.audit(AuditKind.answer, self.state.last_id, id=ask_id, **record)
        self._log.info(
            "answer", answered=answer.answered, engine=answer.engine, turns=len(answer.turn_ids),
            latency_ms=round(answer.latency_ms, 2),
        )
        return answer
