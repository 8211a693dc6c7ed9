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


def check_engine(name: str, settings: Settings) -> None:
    """Raise now what building `name` would raise later, without loading a model: a missing extra
    (ModuleNotFoundError, named by `delegate.extras`) or a setting it cannot work without (ConfigError)."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")
    if name != "local":
        from delegate.llm.client import api_key

        api_key(settings)
