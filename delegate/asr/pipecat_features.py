"""smart-turn's feature extractor from pipecat-ai, imported without pipecat's start-up banner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def whisper_features() -> Callable[..., Any]:
    """pipecat's `compute_whisper_log_mel_features`. Importing pipecat logs a banner at INFO through loguru;
    `delegate listen` and the server print their own output, so it is kept out (pipecat's later logs are not)."""
    from loguru import logger

    logger.disable("pipecat")
    try:
        from pipecat.audio.turn.smart_turn._whisper_features import compute_whisper_log_mel_features
    finally:
        logger.enable("pipecat")
    return compute_whisper_log_mel_features
