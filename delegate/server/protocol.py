"""The wire protocol: every WebSocket frame and REST body as a pydantic model, and the closed set of error codes."""

from __future__ import annotations

import contextlib
import functools
import json
import re
import sys
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from delegate import models
from delegate.ask.base import Answer, Audience
from delegate.extras import missing_extra
from delegate.field_hints import did_you_mean, field_names
from delegate.models import (
    BackgroundItem,
    Decision,
    Profile,
    ProposedAction,
    Speaking,
    Utterance,
    UtteranceId,
)

MEETING_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
"""A meeting id, to be used with `fullmatch` (`$` would let a trailing newline through)."""


class ErrorCode(StrEnum):
    bad_json = "bad_json"
    unknown_type = "unknown_type"
    bad_message = "bad_message"
    too_large = "too_large"
    bad_utterance_id = "bad_utterance_id"
    bad_encoding = "bad_encoding"
    empty_text = "empty_text"
    binary_not_supported = "binary_not_supported"
    audio_not_supported = "audio_not_supported"
    bad_audio = "bad_audio"
    asr_busy = "asr_busy"
    not_joined = "not_joined"
    bad_meeting_id = "bad_meeting_id"
    bad_engine = "bad_engine"
    conflict = "conflict"
    meeting_closed = "meeting_closed"
    unauthorized = "unauthorized"
    forbidden = "forbidden"
    not_found = "not_found"
    too_many = "too_many"
    join_timeout = "join_timeout"
    rate_limited = "rate_limited"
    engine_error = "engine_error"
    voice_not_supported = "voice_not_supported"
    not_pending = "not_pending"
    private_text = "private_text"
    not_configured = "not_configured"
    internal = "internal"


ERROR_TEXT: dict[ErrorCode, str] = {
    ErrorCode.bad_json: "The frame is not valid JSON.",
    ErrorCode.unknown_type: "The frame's `type` is not a message this server knows.",
    ErrorCode.bad_message: "The message is missing a field or has a field of the wrong kind.",
    ErrorCode.too_large: "The frame or the text is larger than this server accepts.",
    ErrorCode.bad_utterance_id: "Utterance ids are integers from 0 to 2^53 - 1 that grow with every final utterance.",
    ErrorCode.bad_encoding: "The text cannot be encoded as UTF-8 (lone surrogates).",
    ErrorCode.empty_text: "A final utterance needs some text.",
    ErrorCode.binary_not_supported: "Binary frames carry audio, and no audio stream is open.",
    ErrorCode.audio_not_supported: "This server cannot transcribe audio; send typed utterances.",
    ErrorCode.bad_audio: "The audio stream cannot be transcribed as declared.",
    ErrorCode.asr_busy: (
        "This server transcribes as many audio streams as it can at once; send typed utterances, "
        "or start audio again later."
    ),
    ErrorCode.not_joined: "Send `join` first: this meeting does not exist yet.",
    ErrorCode.bad_meeting_id: "Meeting ids are 1-128 letters, digits, `_`, `.`, `:` or `-`.",
    ErrorCode.bad_engine: "No engine of that name.",
    ErrorCode.conflict: "A meeting with this id is already open, or it has another principal.",
    ErrorCode.meeting_closed: "This meeting has ended; start a new one with a new id.",
    ErrorCode.unauthorized: "A valid bearer token is required.",
    ErrorCode.forbidden: (
        "This credential may not do that: the meeting bot's token streams its meeting and asks for the meeting's "
        "ears only; the principal's token reads private notes, approves and edits."
    ),
    ErrorCode.not_found: "No such meeting, decision or action.",
    ErrorCode.too_many: "This token has as many open meetings or connections as the server allows.",
    ErrorCode.join_timeout: "No `join` came in time after the connection opened.",
    ErrorCode.rate_limited: "Text frames come faster than this server allows; this one was not processed.",
    ErrorCode.engine_error: "The engine failed on this utterance; the session goes on.",
    ErrorCode.voice_not_supported: "This server cannot speak (no text-to-speech installed); replies come as text only.",
    ErrorCode.not_pending: "This speech is no longer pending: it was approved, rejected or expired.",
    ErrorCode.private_text: "The text gives away an item the principal marked private; nothing was sent.",
    ErrorCode.not_configured: "This server is not set up for that: a setting is missing (the detail names it).",
    ErrorCode.internal: "The server failed on this message; the session goes on.",
}


class ProtocolError(Exception):
    """A client mistake (or a recoverable server fault) to answer with an `error` frame or a 4xx."""

    def __init__(self, code: ErrorCode, detail: str | None = None, utterance_id: int | None = None) -> None:
        self.code = code
        self.detail = detail or ERROR_TEXT[code]
        self.utterance_id = utterance_id
        super().__init__(f"{code}: {self.detail}")


def check_meeting_id(meeting_id: str) -> None:
    """Raises `bad_meeting_id` unless the whole of `meeting_id` is a meeting id (a path's, once decoded)."""
    if not MEETING_ID.fullmatch(meeting_id):
        raise ProtocolError(ErrorCode.bad_meeting_id)


def unavailable(error: ModuleNotFoundError, code: ErrorCode) -> ProtocolError:
    """A feature whose extra is not installed: the client is told which one, in one sentence."""
    missing = missing_extra(error)
    if missing is None:
        raise error
    return ProtocolError(code, f"This server cannot do that: {missing}.")


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Outbound(BaseModel):
    """What the server sends: a client reading it ignores fields a newer server added (the server refuses
    unknown fields in what it reads, never in what it writes)."""

    model_config = ConfigDict(frozen=True, extra="ignore")


Approval = Literal["none", "speech", "all"]
"""A meeting's approval setting: `speech` holds what the delegate would say until the principal approves
it; `all` holds proposed action items too."""

SpeechStatus = Literal["pending", "approved", "edited", "rejected", "expired"]
"""Where a held speech stands; `approved`/`edited` were sent to the bot, the others never were."""

ApprovalStatus = Literal["none", "pending", "approved", "edited", "rejected", "expired"]
"""A decision's approval: `none` when it was not held (silent, or the meeting holds nothing)."""

MAX_EDIT_CHARS = 2000

AdmissionState = Literal["joining", "waiting_room", "in_meeting", "removed", "ended"]
"""Where the meeting's bot stands with the meeting itself: asking to join, waiting to be admitted, in it,
removed by someone, or the meeting ended. The delegate says nothing before `in_meeting`; `removed` and
`ended` end the delegate's meeting too."""

ADMISSION_ORDER: dict[str, int] = {"joining": 0, "waiting_room": 1, "in_meeting": 2, "removed": 3, "ended": 3}
"""A state only moves forward (a bot let back into the waiting room, e.g. by a breakout, keeps `in_meeting`)."""


# --- client -> server ------------------------------------------------------------------------------


class MeetingSpec(_Message):
    """What a meeting needs to start: whom the delegate stands in for, who attends, which engine."""

    principal: Profile
    attendees: list[str] = Field(default_factory=list)
    names: dict[str, str] = Field(default_factory=dict)
    """Display names for speaker labels."""
    engine: str | None = None
    """Engine name; default: the server's `DELEGATE_ENGINE`."""
    approval: Approval = "none"
    """What waits for the principal's approval before the bot's client gets it."""
    speaking: Speaking | None = None
    """How forward the delegate is in this meeting (`addressed`, `balanced`, `forward`); default: the brief's."""
    admission: Literal["joining", "in_meeting"] = "in_meeting"
    """Where the bot starts: `joining` for a bot a meeting-bot service is still bringing in (it reports each
    step with `admission` frames); `in_meeting` for a client that is in the meeting already."""

    def delegated(self) -> Profile:
        """The principal the delegate stands in for here: the meeting's speaking level, if it sets one, over the brief's."""
        return self.principal if self.speaking is None else self.principal.model_copy(update={"speaking": self.speaking})

    def all_attendees(self) -> list[str]:
        """The attendees, the principal always among them, listed or not."""
        me = self.principal.speaker_label
        return list(self.attendees) if me in self.attendees else [*self.attendees, me]


class BriefRequest(BaseModel):
    """`POST /v1/briefs` body: draft a brief from the server's sources folder for one calendar event, or for a
    title, time and attendee list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    principal: str = Field(min_length=3, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")
    """The principal's e-mail address: what only they saw is private."""
    event_id: str | None = Field(default=None, max_length=200)
    title: str | None = Field(default=None, min_length=1, max_length=500)
    start: datetime | None = None
    attendees: list[str] = Field(default_factory=list, max_length=200)
    """E-mail addresses or names from the contacts."""

    @model_validator(mode="after")
    def _event_or_title(self) -> BriefRequest:
        if (self.event_id is None) == (self.title is None):
            raise ValueError("give either event_id or title (with start and attendees)")
        return self


class BriefAttendee(BaseModel):
    model_config = ConfigDict(frozen=True)

    email: str
    name: str


class BriefDraft(BaseModel):
    """A draft brief for the principal to review: the profile, whom the meeting has, what was left out."""

    model_config = ConfigDict(frozen=True)

    profile: Profile
    title: str
    event_id: str | None = None
    attendees: list[BriefAttendee]
    superseded: dict[str, str]
    """Item id left out -> the later item that corrects it."""


class SourcesInfo(BaseModel):
    """What `POST /v1/briefs` drafts from: the server's DELEGATE_SOURCES_DIR, or without one the shipped
    example workplace, whose principal the console offers."""

    model_config = ConfigDict(frozen=True)

    example: bool
    principal: str | None = None


class SourceEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    summary: str
    start: datetime
    private: bool


class CreateMeeting(MeetingSpec):
    """`POST /v1/meetings` body; without `meeting_id` the server picks one."""

    meeting_id: str | None = Field(default=None, pattern=f"^{MEETING_ID.pattern}$")


class Join(_Message):
    """First frame of a connection: creates the meeting, or (with `last_utterance_id`) resumes it."""

    type: Literal["join"]
    principal: Profile | None = None
    attendees: list[str] = Field(default_factory=list)
    names: dict[str, str] = Field(default_factory=dict)
    engine: str | None = None
    approval: Approval | None = None
    """Starting a meeting: its approval setting (default `none`); resuming: must match it, if given."""
    speaking: Speaking | None = None
    """Starting a meeting: how forward the delegate is in it (default: the brief's `speaking`, itself `balanced`)."""
    last_utterance_id: UtteranceId | None = None
    """Resume: the last utterance id this client sent before it lost the connection."""
    voice: bool | None = None
    """Receive the delegate's replies as speech (`speech_start`, binary PCM, `speech_end`) as well as text.
    Default: yes when the server can speak; `false`: text only. Holds for this connection."""
    admission: Literal["joining", "in_meeting"] | None = None
    """Starting a meeting: where its bot starts (`MeetingSpec.admission`, default `in_meeting`)."""

    def spec(self) -> MeetingSpec | None:
        if self.principal is None:
            return None
        return MeetingSpec(
            principal=self.principal,
            attendees=self.attendees,
            names=self.names,
            engine=self.engine,
            approval=self.approval or "none",
            speaking=self.speaking,
            admission=self.admission or "in_meeting",
        )


class UtteranceIn(Utterance):
    """An `Utterance` on the wire: the same fields and limits, plus the message `type`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["utterance"]

    def utterance(self) -> Utterance:
        # Every field of `Utterance` carries over (a new one needs no change here); a typed turn is a final one.
        return Utterance(**self.model_dump(exclude={"type", "final"}))


class AudioStart(_Message):
    type: Literal["audio_start"]
    sample_rate: int = Field(default=16000, gt=0, strict=True)
    """Of the binary frames that follow: 16-bit little-endian mono PCM."""
    speaker: str | None = Field(default=None, min_length=1, max_length=200)
    """Who speaks in this stream, when the client knows (per-participant audio); else `unknown`."""


class AudioEnd(_Message):
    type: Literal["audio_end"]


class Verdict(_Message):
    """`POST /v1/meetings/{id}/speech/{utterance_id}` and `/actions/{action_id}` body: the principal's word."""

    verdict: Literal["approve", "reject"]
    text: str | None = Field(default=None, min_length=1, max_length=MAX_EDIT_CHARS)
    """Approve a held speech with this text instead of the delegate's (an edit; speech only)."""
    comment: str = Field(default="", max_length=2000)

    @model_validator(mode="after")
    def _edit_approves(self) -> Verdict:
        if self.text is not None:
            if self.verdict != "approve":
                raise ValueError("text (an edit) goes with verdict approve")
            if not self.text.strip():
                raise ValueError("text: an edit needs some text")
        return self


class Feedback(Verdict):
    """The principal's verdict on a proposed action (`action_id`) or on a decision (`utterance_id`);
    on a held speech, it approves (with `text`: edits) or rejects it."""

    type: Literal["feedback"]
    action_id: str | None = Field(default=None, max_length=200)
    utterance_id: UtteranceId | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Feedback:
        if (self.action_id is None) == (self.utterance_id is None):
            raise ValueError("give exactly one of action_id or utterance_id")
        if self.text is not None and self.action_id is not None:
            raise ValueError("text edits a held speech (utterance_id), not an action")
        return self


class Admission(_Message):
    """The bot's admission changed (a meeting-bot service says so): `in_meeting` lets the delegate speak and
    makes it disclose what it is; `removed` or `ended` ends the meeting."""

    type: Literal["admission"]
    state: AdmissionState
    detail: str = Field(default="", max_length=500)
    """What the service said (its own state or event name), for the audit."""


class Leave(_Message):
    type: Literal["leave"]
    reason: str = Field(default="", max_length=500)


class AskRequest(_Message):
    """`POST /v1/meetings/{id}/ask` body: a question about the meeting so far."""

    question: str = Field(min_length=1, max_length=2000)
    audience: Audience = "meeting"
    """Who will read the answer. `meeting` (the default: a bot may relay it) keeps the principal's notes and
    anything private out of it; only `principal` may have the private notes, and only with the principal's
    credential (a bot token is answered `forbidden`)."""


Via = Literal["attendee", "recall"]
"""The meeting-bot services the delegate has a bridge to."""

BotState = Literal["requested", "waiting_room", "in_meeting", "removed", "ended", "failed"]
"""Where a bot the server hosts stands: asked for (the service is bringing it in), waiting to be admitted, in the
meeting, removed, gone (the meeting ended or it was asked to leave), or `failed` (the detail says why)."""


class AttendRequest(_Message):
    """`POST /v1/meetings/{id}/attend` body: send a meeting-bot service's bot into the call for this meeting; the
    server runs its bridge. The service's keys are the server's (its environment), never the request's."""

    meeting_url: str = Field(min_length=8, max_length=2000, pattern=r"^https://\S+$")
    """The Zoom, Meet or Teams meeting's link."""
    via: Via
    listen: Literal["audio", "transcript"] = "audio"
    """Attendee only: the meeting's audio into the delegate's own recogniser (`audio`), or Attendee's transcript."""


class Ask(AskRequest):
    """A question about the meeting so far, answered by an `answer` frame carrying the same `id`."""

    type: Literal["ask"]
    id: str | int | None = None


ClientMessage = Annotated[
    Join | UtteranceIn | AudioStart | AudioEnd | Feedback | Leave | Ask | Admission, Field(discriminator="type")
]
CLIENT_TYPES = frozenset({"join", "utterance", "audio_start", "audio_end", "feedback", "leave", "ask", "admission"})
_client_adapter: TypeAdapter[ClientMessage] = TypeAdapter(ClientMessage)


# --- server -> client ------------------------------------------------------------------------------


class Ack(_Outbound):
    type: Literal["ack"] = "ack"
    of: str
    """The `type` of the message acknowledged."""
    meeting_id: str
    utterance_id: int | None = None
    action_id: str | None = None
    last_utterance_id: int | None = None
    """On `join`: the last utterance the server holds; a resuming client sends the ones after it."""


class DecisionMessage(_Outbound):
    type: Literal["decision"] = "decision"
    meeting_id: str
    decision: Decision
    resumed: bool = False
    """Made while the client was away, sent again on resume."""
    approval: ApprovalStatus = "none"
    """To the bot: `none` (not held), `approved`/`edited` (`speak` is the text to say), `rejected`/`expired`
    (`speak` is empty). To a watcher: the decision as proposed, with where its approval stands."""


class ActionMessage(_Outbound):
    type: Literal["action"] = "action"
    meeting_id: str
    action: ProposedAction


class TranscriptMessage(_Outbound):
    type: Literal["transcript"] = "transcript"
    meeting_id: str
    utterance: Utterance


class ErrorMessage(_Outbound):
    type: Literal["error"] = "error"
    code: ErrorCode
    detail: str
    utterance_id: int | None = None

    @classmethod
    def of(cls, error: ProtocolError) -> ErrorMessage:
        return cls(code=error.code, detail=error.detail, utterance_id=error.utterance_id)


class FieldError(_Outbound):
    loc: str
    """Where in the body, dotted (`principal.background.1.information`)."""
    message: str


class ValidationFailure(ErrorMessage):
    """A REST body refused as invalid (422): `detail` names the first problem, `fields` lists them all."""

    fields: list[FieldError]


class AnswerMessage(_Outbound):
    """The answer to an `ask` frame (`id` echoes the question's)."""

    type: Literal["answer"] = "answer"
    meeting_id: str
    id: str | int | None = None
    answer: Answer


class SpeechStart(_Outbound):
    """The delegate starts saying `text` (its reply to `utterance_id`): binary frames of 16-bit little-endian
    mono PCM at `sample_rate` follow, paced about as fast as they play, until `speech_end` or `speech_cancel`."""

    type: Literal["speech_start"] = "speech_start"
    meeting_id: str
    utterance_id: int
    text: str
    sample_rate: int


class SpeechEnd(_Outbound):
    """All the reply's audio has been sent: `duration_ms` of it."""

    type: Literal["speech_end"] = "speech_end"
    meeting_id: str
    utterance_id: int
    duration_ms: int


class SpeechCancel(_Outbound):
    """The reply's audio stops here (no more of its binary frames): someone else spoke (`barge_in`), a newer
    reply takes its place (`superseded`), or the voice failed (`failed`). It may follow `speech_end` while the
    last audio sent still plays. `played_ms`: how much of it had been heard by then, by the server's clock."""

    type: Literal["speech_cancel"] = "speech_cancel"
    meeting_id: str
    utterance_id: int
    played_ms: int
    reason: Literal["barge_in", "superseded", "failed"] = "barge_in"


class AdmissionEvent(_Outbound):
    """Where the bot stands with the meeting (to watchers; the bot's own `admission` frame is answered by an `ack`)."""

    type: Literal["admission"] = "admission"
    meeting_id: str
    state: AdmissionState
    detail: str = ""


class DisclosureMessage(_Outbound):
    """What the delegate says of itself on entering the meeting, before anything else (docs/meetings.md);
    with voice, its speech follows (`speech_start` with `utterance_id` -1)."""

    type: Literal["disclosure"] = "disclosure"
    meeting_id: str
    text: str


ServerMessage = (
    Ack | DecisionMessage | ActionMessage | TranscriptMessage | ErrorMessage | AnswerMessage
    | SpeechStart | SpeechEnd | SpeechCancel | DisclosureMessage
)


class SpeechResult(_Outbound):
    """A held speech as it stands (the answer to `POST .../speech/{utterance_id}`)."""

    utterance_id: int
    status: SpeechStatus
    text: str
    """Approved or edited: what the bot was sent; rejected, expired or pending: what the delegate proposed."""


# --- server -> watcher (`GET /v1/meetings/{id}/events`) -----------------------------------------------


class UtteranceEvent(_Outbound):
    type: Literal["utterance"] = "utterance"
    meeting_id: str
    utterance: Utterance


class SpeechPending(_Outbound):
    """The delegate would say `text` after `utterance_id`; the bot gets nothing until the principal approves."""

    type: Literal["speech_pending"] = "speech_pending"
    meeting_id: str
    utterance_id: int
    text: str
    expires_at: float
    """Epoch seconds; the floor moving on expires it sooner."""


class SpeechResolved(_Outbound):
    type: Literal["speech_resolved"] = "speech_resolved"
    meeting_id: str
    utterance_id: int
    status: SpeechStatus
    text: str
    reason: str | None = None
    """Why it expired: one of `approval.EXPIRY_REASONS`."""


class MeetingEnded(_Outbound):
    type: Literal["meeting_ended"] = "meeting_ended"
    meeting_id: str
    reason: str


class Live(_Outbound):
    """Sent once, after the replay: what follows happens now."""

    type: Literal["live"] = "live"
    meeting_id: str


class BotStatus(_Outbound):
    """A bot the server hosts for the meeting (`POST /v1/meetings/{id}/attend`), as it stands."""

    via: Via
    state: BotState
    detail: str = ""
    """One line: why it failed or left, or the service's own state."""
    bot_id: str | None = None
    """The service's id of the bot, once the service made it."""


class BotEvent(BotStatus):
    """To watchers: the hosted bot's state changed (its steps in the meeting also come as `admission`)."""

    type: Literal["bot"] = "bot"
    meeting_id: str


WatchEvent = (
    UtteranceEvent | DecisionMessage | SpeechPending | SpeechResolved | ActionMessage | MeetingEnded | Live
    | AdmissionEvent | DisclosureMessage | BotEvent
)


class BackgroundView(_Outbound):
    """A background item as the owner's console shows it: a private one keeps its place, never its words."""

    context: str | None = None
    information: str | None = None
    shareable: bool

    @classmethod
    def of(cls, items: list[BackgroundItem]) -> list[BackgroundView]:
        return [
            cls(context=b.context, information=b.information, shareable=True) if b.shareable
            else cls(shareable=False)
            for b in items
        ]


class MeetingInfo(_Outbound):
    """`GET /v1/meetings/{id}`: the session as it stands."""

    meeting_id: str
    principal: str
    engine: str
    attendees: list[str]
    utterances: int
    last_utterance_id: int | None
    decisions: int
    actions: int
    connected: bool
    created_at: float
    last_activity: float
    ended: bool = False
    """The meeting is over (left or idle): served from the audit log."""
    approval: Approval = "none"
    speaking: Speaking = Speaking.balanced
    """How forward the delegate is in this meeting (its own setting, else the brief's)."""
    admission: AdmissionState = "in_meeting"
    bot: BotStatus | None = None
    """The bot this server hosts for the meeting (`POST /v1/meetings/{id}/attend`), if any."""
    background: list[BackgroundView] | None = None
    """The principal's background in its order (`used_background` indexes it), private items as blanks;
    None for a meeting logged before the positions of its private items were recorded."""


class MeetingSummary(_Outbound):
    meeting_id: str
    open: bool
    """Open (held by a server process, connected or not), or ended."""


class MeetingList(_Outbound):
    """`GET /v1/meetings`: the caller's meetings, newest first, a page at a time."""

    meetings: list[MeetingSummary]
    limit: int
    offset: int
    next_offset: int | None
    """Pass as `offset` for the next page; None on the last one."""


# --- parsing -----------------------------------------------------------------------------------------


@functools.cache
def _input_fields() -> frozenset[str]:
    return field_names(models, sys.modules[__name__])


def field_hint(error: Any) -> str:
    """` (did you mean `shareable`?)` for a refused field close to one of the protocol's or a brief's."""
    return did_you_mean(error, _input_fields())


def _first_error(err: ValidationError) -> str:
    errors = err.errors(include_url=False)
    # A misspelt field also leaves the one meant missing: name the misspelling, which says both.
    e = next((e for e in errors if field_hint(e)), errors[0])
    loc = ".".join(str(p) for p in e["loc"] if p not in CLIENT_TYPES) or "(message)"
    return f"{loc}: {e['msg']}{field_hint(e)}"


def _check_encodable(raw: Any) -> None:
    # JSON may escape lone surrogates (`"\ud800"`): valid JSON, but no UTF-8 text to store or log.
    try:
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        raise ProtocolError(ErrorCode.bad_encoding) from e


def parse_client_message(text: str) -> ClientMessage:
    """One text frame (decoded from valid UTF-8) as a client message, or a ProtocolError naming what is wrong."""
    if "\\u" not in text:
        # A good frame is read once, straight from its text; any other goes the long way below, which names
        # what is wrong (and checks escapes): the same message or the same error either way.
        with contextlib.suppress(ValidationError):
            return _client_adapter.validate_json(text)
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ProtocolError(ErrorCode.bad_json, f"The frame is not valid JSON: {e}") from e
    if not isinstance(raw, dict):
        raise ProtocolError(ErrorCode.bad_message, "A frame is a JSON object with a `type` field.")
    kind = raw.get("type")
    if kind is None:
        raise ProtocolError(ErrorCode.bad_message, "type: Field required")
    if not isinstance(kind, str) or kind not in CLIENT_TYPES:
        raise ProtocolError(
            ErrorCode.unknown_type,
            f"Unknown type {str(kind)[:40]!r}; expected one of {', '.join(sorted(CLIENT_TYPES))}.",
        )
    if "\\u" in text:  # only a `\u` escape can smuggle a surrogate into a valid UTF-8 frame
        _check_encodable(raw)
    try:
        return _client_adapter.validate_python(raw)
    except ValidationError as e:
        raise ProtocolError(ErrorCode.bad_message, _first_error(e)) from e
