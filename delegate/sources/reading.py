"""Reading a source file into typed records, each failure named with its file and item."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from delegate.sources.items import SourceError

M = TypeVar("M", bound=BaseModel)


def load_json(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise SourceError(f"{path}: cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise SourceError(f"{path}: not UTF-8 text (byte {e.start})") from e
    except json.JSONDecodeError as e:
        raise SourceError(f"{path}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    if not isinstance(raw, dict):
        raise SourceError(f"{path}: expected a JSON object at the top level")
    return raw


def records(path: Path, raw: dict[str, Any], key: str, model: type[M], required: bool = True) -> list[M]:
    """`raw[key]` as a list of `model`; a bad record is named by its index and its `id` (or `key`) when it has one."""
    values = raw.get(key)
    if values is None:
        if required:
            raise SourceError(f"{path}: no {key!r} list")
        return []
    if not isinstance(values, list):
        raise SourceError(f"{path}: {key!r} is not a list")
    out = []
    for i, value in enumerate(values):
        try:
            out.append(model.model_validate(value))
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(the record)"
            name = value.get("id") or value.get("key") if isinstance(value, dict) else None
            label = f"{key}[{i}]" + (f" ({name})" if name else "")
            raise SourceError(f"{path}: {label}: {loc}: {first['msg']}") from e
    return out
