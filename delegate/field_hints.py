"""A field name nobody defined, close to one we did: "did you mean `shareable`?" for `sharable`."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from pydantic import BaseModel


def field_names(*modules: ModuleType) -> frozenset[str]:
    """Every field name (and alias) of the pydantic models defined in `modules`."""
    names: set[str] = set()
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseModel) and cls is not BaseModel:
                for name, field in cls.model_fields.items():
                    names.add(name)
                    if isinstance(field.alias, str):
                        names.add(field.alias)
    return frozenset(names)


def did_you_mean(error: Any, known: Iterable[str]) -> str:
    """For pydantic's error of an unknown field whose name is close to a known one: ` (did you mean
    `shareable`?)`; else the empty string."""
    if error.get("type") != "extra_forbidden" or not error.get("loc"):
        return ""
    close = difflib.get_close_matches(str(error["loc"][-1]), sorted(known), n=1, cutoff=0.8)
    return f" (did you mean `{close[0]}`?)" if close else ""
