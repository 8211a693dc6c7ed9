"""Reading deferred: a model asked, inside `deferred()`, for a text it has not read yet raises `NotReadYet`
instead of reading it on the caller's thread.

The caller (an engine on the event loop) then has the texts read elsewhere, batched with other meetings'
(`delegate.decide.reading`), and asks again: the second time everything is in the model's cache. Any model
that reads words and keeps what it read (the sentence encoder; a floor model that reads the turn) joins the
seam by calling `check_deferred(missing, read)` before its heavy part.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

Read = Callable[[list[str]], object]
"""Reads texts and keeps the result where the next call finds it (a cache); its return value is not used."""

_deferred: ContextVar[bool] = ContextVar("delegate_reading_deferred", default=False)


class NotReadYet(LookupError):
    """Texts a model has not read, and how to read them (off the caller's thread, then ask again)."""

    def __init__(self, texts: list[str], read: Read) -> None:
        super().__init__(f"{len(texts)} text(s) not read yet")
        self.texts = texts
        self.read = read


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside the block, reading a text not read yet raises `NotReadYet` (the context follows into threads)."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)


def check_deferred(missing: list[str], read: Read) -> None:
    """Raise `NotReadYet` for `missing` when reading is deferred here; do nothing otherwise."""
    if missing and _deferred.get():
        raise NotReadYet(missing, read)
