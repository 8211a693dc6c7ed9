"""One benchmark run's model server: a shared client under the cache and ledger, how many calls go at once, what it cost.

Every LLM caller of a run (the engine, the LLM judge, the answer judge, the refiner) asks through the one client
made here, so the ledger counts all of them and the cache answers all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from delegate.config import Settings
from delegate.llm.ledger import Ledger

if TYPE_CHECKING:
    from delegate.llm.client import LLMClient

DEFAULT_CACHE = Path("reports") / "llm-cache"
DEFAULT_CONCURRENCY = 4


@dataclass
class LLMRun:
    settings: Settings
    concurrency: int = DEFAULT_CONCURRENCY
    cache: Path | None = DEFAULT_CACHE
    refresh: bool = False
    price_in: float | None = None
    price_out: float | None = None
    ledger: Ledger = field(default_factory=Ledger)
    _client: LLMClient | None = None

    @property
    def client(self) -> LLMClient:
        from delegate.llm.client import make_client
        from delegate.llm.ledger import LedgerTransport

        if self._client is None:
            self._client = make_client(self.settings, LedgerTransport(self.ledger, self.cache, self.refresh))
        return self._client

    def figures(self, model: str | None = None) -> dict[str, object]:
        """Calls, cache hits, tokens, waits, cost, and how answers were bound (`delegate.llm.client.FORMATS`: a format
        other than the first means the server refused the stricter ones)."""
        from delegate.llm.client import FORMATS, format_used

        return self.ledger.figures(model or self.settings.llm_model, self.price_in, self.price_out) | {
            "response_format": format_used(self._client) if self._client is not None else FORMATS[0],
            "concurrency": self.concurrency,
            "cache": str(self.cache) if self.cache is not None else None,
        }
