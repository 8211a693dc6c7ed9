"""Decision engines, chosen by name: the one registry of what each engine name brings with it.

An engine name also says which asker answers the meeting's questions and whether its action items are
refined by the LLM: `local` is offline throughout; `llm` and `hybrid` use one LLM client for all three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from delegate.config import Settings
from delegate.decide.base import Engine

if TYPE_CHECKING:
    from delegate.llm.client import LLMClient


@dataclass(frozen=True)
class EngineKind:
    name: str
    uses_llm: bool
    """Decides, answers questions and refines action items with the LLM (the embedded parts as fallback)."""
    gated: bool = False
    """The embedded part answers what it is sure of; the LLM only the rest (`hybrid`)."""


ENGINES: dict[str, EngineKind] = {
    "local": EngineKind("local", uses_llm=False),
    "llm": EngineKind("llm", uses_llm=True),
    "hybrid": EngineKind("hybrid", uses_llm=True, gated=True),
}
ENGINE_NAMES = tuple(ENGINES)


def engine_kind(name: str) -> EngineKind:
    """The registry's entry for `name`; raises ValueError for an unknown name."""
    kind = ENGINES.get(name)
    if kind is None:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")
    return kind


def build_engine(name: str, settings: Settings | None = None, client: LLMClient | None = None) -> Engine:
    """The engine called `name` (an LLM one on `client`, or a client of its own); ValueError for an unknown name."""
    kind = engine_kind(name)
    settings = settings or Settings()
    from delegate.decide.local import LocalEngine

    local = LocalEngine(read=settings.floor_reader, text=settings.floor_text)
    if not kind.uses_llm:
        return local
    from delegate.decide.llm import LLMEngine

    llm = LLMEngine(settings, fallback=local, client=client)
    if not kind.gated:
        return llm
    from delegate.decide.hybrid import HybridEngine

    return HybridEngine(local, llm)


def check_engine(name: str, settings: Settings) -> None:
    """Raise now what building `name` would raise later, without loading a model: a missing extra
    (ModuleNotFoundError, named by `delegate.extras`) or a setting it cannot work without (ConfigError)."""
    if engine_kind(name).uses_llm:
        from delegate.llm.client import api_key

        api_key(settings)
