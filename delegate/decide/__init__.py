"""Decision engines: the embedded default (`local`) and the LLM-backed ones, chosen by name."""

from __future__ import annotations

from delegate.config import Settings
from delegate.decide.base import Engine

ENGINE_NAMES = ("local", "llm", "hybrid")


def build_engine(name: str, settings: Settings | None = None) -> Engine:
    """The engine called `name`; raises ValueError for an unknown name."""
    settings = settings or Settings()
    if name == "local":
        from delegate.decide.local import LocalEngine

        return LocalEngine()
    if name == "llm":
        from delegate.decide.llm import LLMEngine
        from delegate.decide.local import LocalEngine

        return LLMEngine(settings, fallback=LocalEngine())
    if name == "hybrid":
        from delegate.decide.hybrid import HybridEngine
        from delegate.decide.llm import LLMEngine
        from delegate.decide.local import LocalEngine

        local = LocalEngine()
        return HybridEngine(local, LLMEngine(settings, fallback=local))
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")
