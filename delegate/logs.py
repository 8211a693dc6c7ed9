"""structlog set-up: events go to stderr (results and tables own stdout), one JSON object each for the server."""

from __future__ import annotations

import logging
import sys

import structlog

_CHATTY = ("httpx", "httpcore", "openai", "faster_whisper")
"""Libraries that log every request or step at INFO: quiet unless the level asks for debug."""


def configure_logging(level: str = "info", json: bool = True) -> None:
    numeric = logging.getLevelNamesMapping()[level.upper()]
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            # Colour only for a person at a terminal: a file or a pipe gets plain text.
            structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
