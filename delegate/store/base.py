"""What every store backend agrees on: the audit event, the meeting registry record, the `Store` protocol."""

from __future__ import annotations

import json
import math
import time
from enum import StrEnum
from typing import Any, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, Field

MAX_ID = 2**63 - 1
"""Utterance ids are stored as signed 64-bit integers (SQLite INTEGER, PostgreSQL bigint)."""


class AuditKind(StrEnum):
    meeting_created = "meeting_created"
    joined = "joined"
    utterance = "utterance"
    decision = "decision"
    decision_dropped = "decision_dropped"
    action = "action"
    feedback = "feedback"
    taken_over = "taken_over"
    """A process rebuilt the meeting from its log and now holds it (after a restart or a failover)."""
    left = "left"
    closed = "closed"
    ask = "ask"
    answer = "answer"
    speech = "speech"
    """What the delegate's voice said of a decision: all of it, or up to where it was cut (`said`, `played_ms`)."""
    echo = "echo"
    """A transcript of the delegate's own voice coming back through the bot's audio: not decided on."""
    speech_resolved = "speech_resolved"
    """A speech held for approval was approved, edited, rejected or expired (`status`, `text`, `reason`)."""
    admission = "admission"
    """The bot's admission changed (`state`: joining, waiting_room, in_meeting, removed, ended; `detail`)."""
    disclosure = "disclosure"
    """What the delegate said of itself on entering the meeting (`text`)."""
    edit_refused = "edit_refused"
    """An edit of held speech the guard refused: recorded without its words; the speech stays pending."""


ENDED = frozenset({AuditKind.left, AuditKind.closed})
"""Kinds after which a meeting stays closed."""


class AuditEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    meeting_id: str
    kind: AuditKind
    utterance_id: int | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    ts: float = Field(default_factory=time.time)
    seq: int | None = None
    """Position in the log, set once written."""


class MeetingRecord(BaseModel):
    """A meeting's full spec while it is open: the one place its private background items are kept.

    Unlike the append-only log, the registry is mutable: the record is deleted when the meeting ends.
    """

    model_config = ConfigDict(frozen=True)

    meeting_id: str
    owner: str
    spec: dict[str, Any]
    """The `MeetingSpec` as JSON (the store does not know the wire models)."""
    created_at: float = Field(default_factory=time.time)


class UnstorableEvent(ValueError):
    """An event the log cannot hold as it is (a non-finite number, an id beyond 64 bits); nothing was written."""


def encode_payload(event: AuditEvent) -> str:
    """The payload as strict JSON, or UnstorableEvent: checked in the caller, before the event joins a batch."""
    if event.utterance_id is not None and not 0 <= event.utterance_id <= MAX_ID:
        raise UnstorableEvent(f"utterance id {event.utterance_id} does not fit the log's 64-bit integer")
    try:
        # orjson: every utterance writes two or three records, and the standard encoder was 6% of the
        # server's CPU at 1,000 utterances/s (benchmark.load --profile).
        encoded = orjson.dumps(event.payload, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        encoded = None  # ints past 64 bits, lone surrogates: the standard encoder writes them as before
    # orjson writes NaN and Infinity as null; JSON has neither, and the log refuses them rather than change them.
    if encoded is None or (b"null" in encoded and not _finite(event.payload)):
        try:
            return json.dumps(event.payload, allow_nan=False)
        except ValueError as e:
            raise UnstorableEvent(f"the {event.kind} event has a non-finite number (NaN or Infinity)") from e
    return encoded.decode()


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def encode_record(record: MeetingRecord) -> str:
    try:
        return json.dumps(record.spec, allow_nan=False)
    except ValueError as e:
        raise UnstorableEvent(f"the spec of meeting {record.meeting_id!r} has a non-finite number") from e


class Store(Protocol):
    """The audit log (append-only) and the meeting registry (mutable), and who holds which meeting."""

    @property
    def healthy(self) -> bool:
        """Open and able to write."""
        ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def append(self, event: AuditEvent) -> int:
        """Write one event durably; returns its sequence number once it is committed.

        One event that cannot be written fails alone: the events written with it are not affected."""
        ...

    async def events(self, meeting_id: str) -> list[AuditEvent]: ...

    async def has_meeting(self, meeting_id: str) -> bool: ...

    async def meeting_ids(self, prefix: str, limit: int, offset: int) -> list[str]:
        """Ids in the log that start with `prefix`, newest first (by their first event)."""
        ...

    async def register(self, record: MeetingRecord) -> None:
        """Keep the meeting's full spec (private items included) while it is open."""
        ...

    async def registered(self, meeting_id: str) -> MeetingRecord | None: ...

    async def unregister(self, meeting_id: str) -> None:
        """Forget the spec of a meeting that ended."""
        ...

    async def stale(self, before: float) -> list[str]:
        """Registered (open) meetings whose latest event is older than `before` (epoch seconds)."""
        ...

    async def claim(self, meeting_id: str) -> bool:
        """Become the one process that serves this meeting; False while another process holds it."""
        ...

    async def release(self, meeting_id: str) -> None: ...
