"""`DelegateClient`: the wire protocol (docs/protocol.md) as a typed async client, with resume built in.

One client is one meeting's connection. It sends the protocol's own pydantic messages, parses every server
frame into them, and when the socket drops (a restart, a network blip, another server process taking over)
it reconnects, joins with `last_utterance_id` and sends again whatever the server had not acknowledged.

Two credentials (docs/protocol.md, "Authentication"): the principal's token creates the meeting
(`create_meeting`), which yields the meeting's bot token; the bot's client streams with that one, so that
whoever holds the bot never reads the principal's private notes, approves or edits.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from pydantic import BaseModel, TypeAdapter
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from delegate.ask.base import Answer, Audience
from delegate.models import Decision, Profile, ProposedAction
from delegate.server.protocol import (
    Ack,
    ActionMessage,
    Admission,
    AdmissionState,
    AnswerMessage,
    Approval,
    Ask,
    AudioEnd,
    AudioStart,
    CreateMeeting,
    DecisionMessage,
    DisclosureMessage,
    ErrorCode,
    ErrorMessage,
    Feedback,
    Join,
    Leave,
    ServerMessage,
    SpeechCancel,
    SpeechEnd,
    SpeechStart,
    UtteranceIn,
)

_server_message: TypeAdapter[ServerMessage] = TypeAdapter(ServerMessage)
_actions: TypeAdapter[list[ProposedAction]] = TypeAdapter(list[ProposedAction])

# A library's log: the standard one, for the program using it to configure (the server's structlog set-up
# does not reach a bot's process).
log = logging.getLogger("delegate.client")

GIVE_UP_CODES = frozenset({1008, 4000})
"""Close codes after which reconnecting cannot help: refused (auth, limits) or taken over by a newer connection."""
RETRY_FIRST_S = 0.1
RETRY_MAX_S = 2.0


def retry_delay(attempt: int) -> float:
    """How long to wait before reconnection attempt `attempt` (0, 1, ...): a random share of a doubling cap
    ("full jitter"), so that the thousand clients of a process that died do not all come back in one instant."""
    return random.uniform(0.0, min(RETRY_MAX_S, RETRY_FIRST_S * 2**attempt))


_AUDIO_CHUNK_BYTES = 3200
"""100 ms of 16 kHz 16-bit mono: how `send_pcm` cuts a long buffer, as a live bot would send it."""


class DelegateError(Exception):
    """The server answered a frame with an `error`: `error.code` says which (see the protocol's Errors)."""

    def __init__(self, error: ErrorMessage) -> None:
        self.error = error
        super().__init__(f"{error.code}: {error.detail}")


@dataclass(frozen=True)
class CreatedMeeting:
    """A meeting the principal created, and the credential of its bot."""

    meeting_id: str
    bot_token: str
    """For the meeting's bot (`DelegateClient(..., token=bot_token)`, no `principal`): it streams this meeting
    and asks for the meeting's ears only; the principal's own token stays with the principal."""


async def create_meeting(
    url: str,
    principal: Profile | Mapping[str, Any],
    *,
    token: str | None = None,
    meeting_id: str | None = None,
    attendees: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
    engine: str | None = None,
    approval: Approval | None = None,
    admission: Literal["joining", "in_meeting"] = "in_meeting",
) -> CreatedMeeting:
    """The principal's side (`POST /v1/meetings` with the principal's `token`): start a meeting and get its bot
    token to hand to the bot. `url` as for `DelegateClient` (`ws(s)://` or `http(s)://`). A refusal raises `DelegateError`."""
    body = CreateMeeting(
        principal=Profile.model_validate(principal),
        attendees=list(attendees),
        names=dict(names or {}),
        meeting_id=meeting_id,
        engine=engine,
        approval=approval or "none",
        admission=admission,
    ).model_dump(mode="json", exclude_none=True)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=_http_base(url), headers=headers, timeout=30) as http:
        r = await http.post("/v1/meetings", json=body)
    if r.status_code != 201:
        raise DelegateError(ErrorMessage.model_validate(r.json()))
    created = r.json()
    return CreatedMeeting(meeting_id=created["meeting_id"], bot_token=created["bot_token"])


def _http_base(url: str) -> str:
    base = url.rstrip("/")
    return "http" + base.removeprefix("ws") if base.startswith("ws") else base


def _ws_base(url: str) -> str:
    """The server's WebSocket address from its `ws(s)://` or `http(s)://` one (what `delegate serve` prints)."""
    base = url.rstrip("/")
    scheme, sep, rest = base.partition("://")
    schemes = {"ws": "ws", "wss": "wss", "http": "ws", "https": "wss"}
    if not sep or scheme.lower() not in schemes:
        raise ValueError(f"{url!r}: a delegate server's address starts with ws://, wss://, http:// or https://")
    return f"{schemes[scheme.lower()]}://{rest}"


class ConnectionLost(Exception):
    """The meeting's connection is gone for good: closed by the server for a reason a retry cannot fix, or
    not back within the client's `reconnect_s`."""


class NotAuthorized(ConnectionError):
    """The server wants a bearer token (it has DELEGATE_API_TOKENS) and none, or another, was given."""


@dataclass(frozen=True)
class SpeechChunk:
    """A piece of the delegate's spoken reply to `utterance_id`: 16-bit little-endian mono PCM."""

    utterance_id: int
    pcm: bytes
    sample_rate: int


@dataclass
class Speech:
    """The delegate's spoken reply to `utterance_id`, as far as it went out."""

    utterance_id: int
    text: str
    sample_rate: int
    pcm: bytearray = field(default_factory=bytearray)
    end: SpeechEnd | None = None
    cancel: SpeechCancel | None = None

    @property
    def done(self) -> bool:
        return self.end is not None or self.cancel is not None


Message = ServerMessage | SpeechChunk
OnMessage = Callable[[Message], Awaitable[None] | None]


@dataclass
class _Sent:
    """A text frame the server has not answered yet: sent again after a reconnect."""

    message: BaseModel
    answered: asyncio.Future[Ack]

    @property
    def of(self) -> str:
        return str(getattr(self.message, "type", ""))

    @property
    def utterance_id(self) -> int | None:
        uid = getattr(self.message, "id" if isinstance(self.message, UtteranceIn) else "utterance_id", None)
        return uid if isinstance(uid, int) else None


class DelegateClient:
    """A meeting's connection to a delegate server: `async with DelegateClient(url, meeting_id, ...) as meeting`.

    Joining with a `principal` starts the meeting (or resumes it, if it is open with that principal);
    without one it resumes an open meeting. A meeting bot passes the meeting's bot token (`create_meeting`, or
    the console) and no `principal`; `verdict` and `ask(audience="principal")` take the principal's token. Leaving the block without an exception leaves the meeting
    (`leave`: it ends, the id cannot be used again); with an exception it only closes the socket, so the
    meeting can be resumed. Every server frame goes to `on_message` (plain or async), and the client keeps
    what a bot needs: `decisions` by utterance id, `actions` by id, `speeches` by utterance id. `voice`: the
    replies as speech too (`True`), text only (`False`, the default), or speech where the server can speak (`None`).
    """

    def __init__(
        self,
        url: str,
        meeting_id: str,
        *,
        token: str | None = None,
        principal: Profile | Mapping[str, Any] | None = None,
        attendees: Iterable[str] = (),
        names: Mapping[str, str] | None = None,
        engine: str | None = None,
        approval: Approval | None = None,
        voice: bool | None = False,
        on_message: OnMessage | None = None,
        reconnect_s: float = 30.0,
    ) -> None:
        self.url = f"{_ws_base(url)}/v1/meetings/{meeting_id}/stream"
        self.meeting_id = meeting_id
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._join = Join(
            type="join",
            principal=Profile.model_validate(principal) if principal is not None else None,
            attendees=list(attendees),
            names=dict(names or {}),
            engine=engine,
            approval=approval,
            voice=voice,
        )
        self._on_message = on_message
        self.reconnect_s = reconnect_s
        self.decisions: dict[int, DecisionMessage] = {}
        self.actions: dict[str, ProposedAction] = {}
        self.speeches: dict[int, Speech] = {}
        self.disclosure: str | None = None
        """What the delegate said of itself on entering the meeting (its speech: `speeches[-1]`, with voice)."""
        self.server_last_utterance_id: int | None = None
        """What the server held when this client (re)joined: a resuming client continues after it."""
        self.reconnects = 0
        self._last_sent: int | None = None
        self._ws: ClientConnection | None = None
        self._unanswered: deque[_Sent] = deque()
        self._send_lock = asyncio.Lock()
        self._decision_waiters: dict[int, list[asyncio.Future[Decision]]] = {}
        self._speech_waiters: dict[int, list[asyncio.Future[Speech]]] = {}
        self._answer_waiters: dict[str | int, asyncio.Future[Answer]] = {}
        self._ask_ids = itertools.count(1)
        self._speaking: Speech | None = None
        self._reader: asyncio.Task[None] | None = None
        self._lost: ConnectionLost | None = None
        self._leaving = False
        self._http_url = "http" + self.url.removeprefix("ws").removesuffix(f"/v1/meetings/{meeting_id}/stream")

    # --- the connection ----------------------------------------------------------------------------

    async def __aenter__(self) -> DelegateClient:
        await self._open(self._join)
        self._reader = asyncio.create_task(self._read(), name=f"delegate-client-{self.meeting_id}")
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None and self._lost is None and not self._leaving:
                await self.leave()
        finally:
            await self.close()

    async def close(self) -> None:
        """Close the socket without leaving: the meeting stays open on the server, to be resumed."""
        self._leaving = True  # the socket closing now is no connection lost
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self._ws is not None:
            await self._ws.close()
        self._fail_all(self._lost or ConnectionLost("the client was closed"))

    async def _open(self, join: Join) -> None:
        """Connect and join; the server's `ack` says which utterances it holds."""
        fix = "refused this token" if self._headers else "wants its token: DelegateClient(token=...), e.g. from DELEGATE_TOKEN"
        try:
            ws = await connect(self.url, additional_headers=self._headers, max_size=None)
        except InvalidStatus as e:
            if e.response.status_code not in (401, 403):
                raise
            raise NotAuthorized(f"unauthorized: the server {fix}") from None
        try:
            await ws.send(join.model_dump_json(exclude_none=True))
            while True:
                message = self._parse(await asyncio.wait_for(ws.recv(), timeout=30))
                if isinstance(message, ErrorMessage) or (isinstance(message, Ack) and message.of == "join"):
                    break
        except ConnectionClosed as e:
            if e.rcvd is not None and e.rcvd.code == 1008 and "unauthorized" in e.rcvd.reason.lower():
                raise NotAuthorized(f"unauthorized: the server {fix}") from None
            raise
        if isinstance(message, ErrorMessage):
            await ws.close()
            if message.code == ErrorCode.unauthorized:
                raise NotAuthorized(f"unauthorized: the server {fix}")
            raise DelegateError(message)
        self._ws = ws
        self.server_last_utterance_id = message.last_utterance_id
        if self._last_sent is None or (message.last_utterance_id or -1) > self._last_sent:
            self._last_sent = message.last_utterance_id

    async def _resume(self) -> None:
        """Reconnect until the server takes us back (or `reconnect_s` pass), then send what it has not answered."""
        deadline = asyncio.get_running_loop().time() + self.reconnect_s
        attempts = itertools.count()
        resume = Join(type="join", last_utterance_id=self._last_sent, voice=self._join.voice)
        while True:
            try:
                async with self._send_lock:
                    await self._open(resume)
                    await self._send_unanswered()
                self.reconnects += 1
                log.info("resumed meeting_id=%s last_utterance_id=%s", self.meeting_id, self.server_last_utterance_id)
                await self._catch_up_actions()
                return
            except DelegateError as e:
                if e.error.code != ErrorCode.conflict:  # conflict: another process still lets it go; retry
                    raise ConnectionLost(str(e)) from e
            except (OSError, ConnectionClosed, InvalidHandshake, TimeoutError) as e:
                if isinstance(e, NotAuthorized):
                    raise ConnectionLost(f"the server refused the connection: {e}") from e
            delay = retry_delay(next(attempts))
            if asyncio.get_running_loop().time() + delay > deadline:
                raise ConnectionLost(f"no connection to {self.url} within {self.reconnect_s:g} s")
            await asyncio.sleep(delay)

    async def _send_unanswered(self) -> None:
        assert self._ws is not None
        held = self.server_last_utterance_id
        for sent in list(self._unanswered):
            uid = sent.utterance_id
            if isinstance(sent.message, UtteranceIn) and uid is not None and held is not None and uid <= held:
                # It reached the server before the socket dropped; its ack did not reach us.
                self._unanswered.remove(sent)
                if not sent.answered.done():
                    sent.answered.set_result(Ack(of="utterance", meeting_id=self.meeting_id, utterance_id=uid))
                continue
            await self._ws.send(sent.message.model_dump_json(exclude_none=True))

    async def _catch_up_actions(self) -> None:
        """Action items proposed or resolved while the socket was down: the stream does not send them again."""
        path = f"/v1/meetings/{self.meeting_id}"
        try:
            async with httpx.AsyncClient(base_url=self._http_url, headers=self._headers, timeout=10) as http:
                approval = (await http.get(path)).raise_for_status().json().get("approval", "none")
                found = _actions.validate_json((await http.get(f"{path}/actions")).raise_for_status().content)
        except (httpx.HTTPError, ValueError) as e:
            log.warning("catch_up_failed meeting_id=%s error=%r", self.meeting_id, e)
            return
        for action in found:
            if approval == "all" and action.status != "approved":
                continue  # the principal has not let the bot have it
            if self.actions.get(action.id) != action:
                await self._dispatch(ActionMessage(meeting_id=self.meeting_id, action=action))

    async def _read(self) -> None:
        try:
            while True:
                assert self._ws is not None
                try:
                    data = await self._ws.recv()
                except ConnectionClosed as e:
                    code = e.rcvd.code if e.rcvd is not None else 1006
                    if self._leaving or code == 1000:
                        return
                    if code in GIVE_UP_CODES:
                        raise ConnectionLost(f"the server closed the connection ({code}: {e.rcvd and e.rcvd.reason})") from e
                    log.info("connection_lost meeting_id=%s code=%s", self.meeting_id, code)
                    await self._resume()
                    continue
                await self._dispatch(self._parse(data))
        except ConnectionLost as e:
            self._lost = e
            self._fail_all(e)

    # --- what comes in ------------------------------------------------------------------------------

    def _parse(self, data: str | bytes) -> Message:
        if isinstance(data, bytes):
            speaking = self._speaking
            if speaking is None:  # audio of a reply already cancelled: dropped, as the protocol says
                return SpeechChunk(utterance_id=-1, pcm=data, sample_rate=0)
            return SpeechChunk(utterance_id=speaking.utterance_id, pcm=data, sample_rate=speaking.sample_rate)
        return _server_message.validate_json(data)

    async def _dispatch(self, message: Message) -> None:
        match message:
            case Ack():
                self._answer(message, None)
            case ErrorMessage():
                self._answer(None, message)
            case DecisionMessage():
                self.decisions[message.decision.utterance_id] = message
                for waiter in self._decision_waiters.pop(message.decision.utterance_id, []):
                    if not waiter.done():
                        waiter.set_result(message.decision)
            case ActionMessage():
                self.actions[message.action.id] = message.action
            case DisclosureMessage():
                self.disclosure = message.text
            case AnswerMessage():
                self._asked(message.id)
                waiter = self._answer_waiters.pop(message.id, None) if message.id is not None else None
                if waiter is not None and not waiter.done():
                    waiter.set_result(message.answer)
            case SpeechStart():
                self._speaking = self.speeches[message.utterance_id] = Speech(
                    message.utterance_id, message.text, message.sample_rate
                )
            case SpeechChunk() if message.utterance_id in self.speeches:
                self.speeches[message.utterance_id].pcm += message.pcm
            case SpeechEnd() | SpeechCancel():
                speech = self.speeches.get(message.utterance_id)
                if speech is not None:
                    if isinstance(message, SpeechEnd):
                        speech.end = message
                    else:
                        speech.cancel = message
                    for waiter in self._speech_waiters.pop(message.utterance_id, []):
                        if not waiter.done():
                            waiter.set_result(speech)
                if self._speaking is speech:
                    self._speaking = None
        if self._on_message is not None:
            outcome = self._on_message(message)
            if inspect.isawaitable(outcome):
                await outcome

    def _answer(self, ack: Ack | None, error: ErrorMessage | None) -> None:
        """Match an `ack` or `error` to the frame it answers: by type and utterance id, else the oldest
        one still unanswered (the server answers text frames in order, exactly once each)."""
        match: _Sent | None = None
        for sent in self._unanswered:
            if ack is not None and sent.of == ack.of and (ack.utterance_id is None or sent.utterance_id == ack.utterance_id):
                match = sent
                break
            if error is not None and (error.utterance_id is None or sent.utterance_id == error.utterance_id):
                match = sent
                break
        if match is None:  # an ack of a transcribed utterance, or an error of a binary frame
            if error is not None:
                log.warning("server_error meeting_id=%s code=%s detail=%s", self.meeting_id, error.code, error.detail)
            return
        self._unanswered.remove(match)
        if match.answered.done():
            return
        if ack is not None:
            match.answered.set_result(ack)
        else:
            assert error is not None
            match.answered.set_exception(DelegateError(error))
            if isinstance(match.message, Ask) and match.message.id is not None:
                waiter = self._answer_waiters.pop(match.message.id, None)
                if waiter is not None and not waiter.done():
                    waiter.set_exception(DelegateError(error))
            uid = match.utterance_id
            if isinstance(match.message, UtteranceIn) and uid is not None:
                for waiter in self._decision_waiters.pop(uid, []):
                    if not waiter.done():
                        waiter.set_exception(DelegateError(error))

    def _asked(self, ask_id: str | int | None) -> None:
        """An `answer` answers its `ask` (no `ack` comes for one): it is no longer unanswered."""
        sent = next((s for s in self._unanswered if isinstance(s.message, Ask) and s.message.id == ask_id), None)
        if sent is not None:
            self._unanswered.remove(sent)
            if not sent.answered.done():
                sent.answered.set_result(Ack(of="ask", meeting_id=self.meeting_id))

    def _fail_all(self, error: Exception) -> None:
        waiters: list[asyncio.Future[Any]] = [s.answered for s in self._unanswered]
        waiters += [w for ws in self._decision_waiters.values() for w in ws]
        waiters += [w for ws in self._speech_waiters.values() for w in ws]
        waiters += list(self._answer_waiters.values())
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(error)
                waiter.exception()  # retrieved: nobody may be awaiting it any more
        self._unanswered.clear()

    # --- what goes out ------------------------------------------------------------------------------

    async def _send(self, message: BaseModel) -> asyncio.Future[Ack]:
        """Send a text frame; the future resolves with its `ack` (or raises the `error` that answered it)."""
        if self._lost is not None:
            raise self._lost
        answered: asyncio.Future[Ack] = asyncio.get_running_loop().create_future()
        async with self._send_lock:
            self._unanswered.append(_Sent(message, answered))
            if self._ws is not None:
                with contextlib.suppress(ConnectionClosed):  # the reader reconnects and sends it again
                    await self._ws.send(message.model_dump_json(exclude_none=True))
        return answered

    @property
    def next_utterance_id(self) -> int:
        return 0 if self._last_sent is None else self._last_sent + 1

    async def send(
        self, speaker: str, text: str, *, id: int | None = None, start: float | None = None,
        end: float | None = None, final: bool = True, timeout: float = 10.0,
    ) -> int:
        """Send one utterance (ids count on from the last one sent or held by the server); returns its id
        once the server acknowledged it. Raises `DelegateError` if the server refused it."""
        uid = self.next_utterance_id if id is None else id
        message = UtteranceIn(type="utterance", id=uid, speaker=speaker, text=text, start=start, end=end, final=final)
        if final:
            self._last_sent = uid
        await asyncio.wait_for(await self._send(message), timeout)
        return uid

    async def decision(self, utterance_id: int, timeout: float = 10.0) -> Decision:
        """The decision on `utterance_id` (at once if it came already)."""
        known = self.decisions.get(utterance_id)
        if known is not None:
            return known.decision
        waiter: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._decision_waiters.setdefault(utterance_id, []).append(waiter)
        return await asyncio.wait_for(waiter, timeout)

    async def say(self, speaker: str, text: str, *, timeout: float = 10.0, **fields: Any) -> Decision:
        """Send one final utterance and wait for the delegate's decision on it."""
        uid = self.next_utterance_id if fields.get("id") is None else int(fields["id"])
        waiter = asyncio.ensure_future(self.decision(uid, timeout))
        try:
            await self.send(speaker, text, timeout=timeout, **fields)
        except BaseException:
            waiter.cancel()
            raise
        return await waiter

    async def ask(self, question: str, audience: Audience = "meeting", timeout: float = 10.0) -> Answer:
        """Ask about the meeting so far; `principal` as audience may draw on the principal's private notes."""
        ask_id = f"q{next(self._ask_ids)}"
        waiter: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._answer_waiters[ask_id] = waiter
        sent = await self._send(Ask(type="ask", id=ask_id, question=question, audience=audience))
        sent.add_done_callback(lambda f: f.cancelled() or f.exception())  # its error reaches `waiter` too
        return await asyncio.wait_for(waiter, timeout)

    async def verdict(
        self, verdict: Literal["approve", "reject"], *, utterance_id: int | None = None,
        action_id: str | None = None, text: str | None = None, comment: str = "", timeout: float = 10.0,
    ) -> None:
        """The principal's verdict on a held speech (`utterance_id`; `text` edits it) or a proposed action."""
        message = Feedback(
            type="feedback", verdict=verdict, utterance_id=utterance_id, action_id=action_id, text=text, comment=comment
        )
        await asyncio.wait_for(await self._send(message), timeout)

    async def start_audio(self, sample_rate: int = 16000, speaker: str | None = None, timeout: float = 10.0) -> None:
        """Open an audio stream: the server transcribes the PCM that follows (`send_pcm`)."""
        await asyncio.wait_for(
            await self._send(AudioStart(type="audio_start", sample_rate=sample_rate, speaker=speaker)), timeout
        )

    async def send_pcm(self, pcm: bytes) -> None:
        """16-bit little-endian mono PCM of the open audio stream, in 100 ms frames (at 16 kHz)."""
        for at in range(0, len(pcm), _AUDIO_CHUNK_BYTES):
            async with self._send_lock:
                if self._ws is not None:
                    with contextlib.suppress(ConnectionClosed):
                        await self._ws.send(pcm[at : at + _AUDIO_CHUNK_BYTES])

    async def end_audio(self, timeout: float = 60.0) -> None:
        """Close the audio stream once its last words are transcribed and decided on."""
        await asyncio.wait_for(await self._send(AudioEnd(type="audio_end")), timeout)

    async def speech(self, utterance_id: int, timeout: float = 30.0) -> Speech:
        """The delegate's spoken reply to `utterance_id`, once all of it came (`end`) or it was cut (`cancel`)."""
        known = self.speeches.get(utterance_id)
        if known is not None and known.done:
            return known
        waiter: asyncio.Future[Speech] = asyncio.get_running_loop().create_future()
        self._speech_waiters.setdefault(utterance_id, []).append(waiter)
        return await asyncio.wait_for(waiter, timeout)

    async def admission(self, state: AdmissionState, detail: str = "", timeout: float = 10.0) -> None:
        """Tell the delegate where the bot stands with the meeting (a meeting-bot service's state); `removed` or
        `ended` ends the meeting, and the server closes the socket."""
        if state in ("removed", "ended"):
            self._leaving = True
        await asyncio.wait_for(await self._send(Admission(type="admission", state=state, detail=detail)), timeout)

    async def leave(self, reason: str = "", timeout: float = 10.0) -> None:
        """End the meeting (its id cannot be used again); the server closes the socket."""
        answered = await self._send(Leave(type="leave", reason=reason))
        self._leaving = True
        await asyncio.wait_for(answered, timeout)
