"""A field name nobody defined, close to one we did: "did you mean `shareable`?" for `sharable`."""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any

from pydantic import BaseModel


@functools.cache
def _known_fields() -> tuple[str, ...]:
    """Every field name (and alias) of the input models a client or a file may send."""
    from delegate import models
    from delegate.server import protocol

    names: set[str] = set()
    for module in (models, protocol):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseModel) and cls is not BaseModel:
                for name, field in cls.model_fields.items():
                    names.add(name)
                    if isinstance(field.alias, str):
                        names.add(field.alias)
    return tuple(sorted(names))


def did_you_mean(error: Any) -> str:
    """For pydantic's error of an unknown field whose name is close to a known one: ` (did you mean
    `shareable`?)`; else the empty string."""
    if error.get("type") != "extra_forbidden" or not error.get("loc"):
        return ""
    unknown = str(error["loc"][-1])
    close = difflib.get_close_matches(unknown, _known_fields(), n=1, cutoff=0.8)
    return f" (did you mean `{close[0]}`?)" if close else ""
