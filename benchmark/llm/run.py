"""One benchmark run's model server: a shared client under the cache and ledger, how many calls go at once, what it cost.

Every LLM caller of a run (the engine, the LLM judge, the answer judge, the refiner) asks through the one client
made here, so the ledger counts all of them and the cache answers all of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from delegate.config import Settings
from delegate.llm.ledger import Ledger

if TYPE_CHECKING:
    from delegate.llm.client import LLMClient

DEFAULT_CACHE = Path("reports") / "llm-cache"
DEFAULT_CONCURRENCY = 4
FORMATS_FILE = "formats.json"
"""Beside the cached answers: the response format each server took."""


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
        from delegate.llm.client import assume_format, make_client
        from delegate.llm.ledger import LedgerTransport

        if self._client is None:
            self._client = make_client(self.settings, LedgerTransport(self.ledger, self.cache, self.refresh))
            known = self._known_formats().get(self._server)
            if known is not None:
                assume_format(self._client, known)
        return self._client

    @property
    def _server(self) -> str:
        return self.settings.llm_base_url or "https://api.openai.com/v1"

    def _known_formats(self) -> dict[str, str]:
        path = self.cache / FORMATS_FILE if self.cache is not None else None
        if path is None or not path.exists():
            return {}
        try:
            return dict(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            return {}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    def remember(self) -> None:
        """Keep the format the server took beside the cache: the next run asks with it at once (a refusal is a call)."""
        from delegate.llm.client import format_used

        if self.cache is None or self._client is None:
            return
        known = self._known_formats() | {self._server: format_used(self._client)}
        self.cache.mkdir(parents=True, exist_ok=True)
        (self.cache / FORMATS_FILE).write_text(json.dumps(known, indent=1), encoding="utf-8")

    def figures(self, model: str | None = None) -> dict[str, object]:
        """Calls, cache hits, tokens, waits, cost, and how answers were bound (`delegate.llm.client.FORMATS`: a format
        other than the first means the server refused the stricter ones)."""
        from delegate.llm.client import FORMATS, format_used

        return self.ledger.figures(model or self.settings.llm_model, self.price_in, self.price_out) | {
            "response_format": format_used(self._client) if self._client is not None else FORMATS[0],
            "concurrency": self.concurrency,
            "cache": str(self.cache) if self.cache is not None else None,
        }
