"""Asking the delegate about the meeting: the embedded asker, the LLM one, and the retrieval they share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from delegate.ask.base import Asker
from delegate.ask.embedded import EmbeddedAsker
from delegate.config import Settings
from delegate.decide import engine_kind

if TYPE_CHECKING:
    from delegate.llm.client import LLMClient


def build_asker(engine: str, settings: Settings, client: LLMClient | None = None) -> Asker:
    """The asker of a meeting decided by `engine` (the registry says which); ValueError for an unknown name."""
    kind = engine_kind(engine)
    if not kind.uses_llm:
        return EmbeddedAsker()
    from delegate.ask.llm import LLMAsker

    return LLMAsker(settings, client=client, hybrid=kind.gated)
