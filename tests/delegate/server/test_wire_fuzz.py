"""Property-based fuzzing of the wire against a real server on loopback (Hypothesis).

Whatever frames a client sends (text or binary, valid-ish or garbage), each one is answered with an
`ack` or a named `error` (never `internal`), no frame reaches another meeting, and the server goes on.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from delegate.config import Settings
from delegate.server.protocol import CLIENT_TYPES, ErrorCode
from testkit.live import ALICE, LiveServer, start_server

ANSWERS = frozenset({"ack", "error"})
SIDE_FRAMES = frozenset({"decision", "action", "transcript"})
"""Frames a session sends on its own, besides the one answer every client frame gets."""
NAMED = frozenset(code.value for code in ErrorCode) - {"internal"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db = Path(tmp_path_factory.mktemp("fuzz")) / "audit.sqlite"
    server = start_server(
        Settings(db_path=db, api_tokens="", log_level="warning", engine="local", max_frame_bytes=4096, voice=False)
    )
    # The first `audio_start` loads the speech model (seconds on a busy machine): load it here, once, so
    # that an example's answer is waited for as a client would, not for a model load.
    with connect(server.ws_url("fuzz-warm-up")) as ws:
        ws.send(json.dumps({"type": "join", "principal": ALICE}))
        json.loads(ws.recv(timeout=30))
        ws.send(json.dumps({"type": "audio_start"}))
        assert json.loads(ws.recv(timeout=300))["type"] == "ack"
        ws.send(json.dumps({"type": "audio_end"}))
    yield server
    server.stop()


_ids = itertools.count()

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
KEYS = ["id", "speaker", "text", "final", "start", "end", "principal", "attendees", "names", "engine",
        "last_utterance_id", "verdict", "action_id", "utterance_id", "comment", "reason", "sample_rate",
        "background", "shareable", "sharable", "private", "meeting_id"]  # fmt: skip


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from([*sorted(CLIENT_TYPES), "UTTERANCE", "", "decision"]) | json_values)
    message: dict[str, Any] = {"type": kind} if draw(st.booleans()) or kind else {}
    if kind == "utterance" and draw(st.booleans()):
        message |= {
            "id": draw(st.integers(min_value=-2, max_value=2**64) | json_values),
            "speaker": draw(st.sampled_from(["Bob", "", "x" * 300]) | json_values),
            "text": draw(st.sampled_from(["Alice, are you there?", " ", "I'll send the logs by Friday"])),
        }
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True)):
        message[key] = draw(json_values)
    if kind == "join" and draw(st.booleans()):
        principal = json.loads(json.dumps(ALICE))
        if draw(st.booleans()):
            principal["background"][0][draw(st.sampled_from(["sharable", "private", "Shareable"]))] = False
        message["principal"] = principal
    return message


frames = st.one_of(
    messages().map(json.dumps),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=200),
    st.binary(max_size=256),
    st.just("x" * 5000),
    st.just(b"\x00" * 5000),
)


def answer(ws: ClientConnection, meeting_id: str) -> dict[str, Any] | None:
    """The next `ack` or `error` (side frames skipped, each checked to belong to this meeting)."""
    while True:
        try:
            frame = json.loads(ws.recv(timeout=30))
        except ConnectionClosed:
            return None
        assert frame.get("meeting_id", meeting_id) == meeting_id, frame
        if frame["type"] in ANSWERS:
            return frame
        assert frame["type"] in SIDE_FRAMES, frame


def quiet(ws: ClientConnection) -> bool:
    try:
        ws.recv(timeout=0.05)
    except TimeoutError:
        return True
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.booleans(), st.lists(frames, min_size=1, max_size=8))
def test_any_frames_get_an_answer_and_touch_no_other_meeting(
    live: LiveServer, joined: bool, sent: list[str | bytes]
) -> None:
    n = next(_ids)
    mine, theirs = f"fuzz-{n}", f"bystander-{n}"
    with connect(live.ws_url(theirs)) as bystander, connect(live.ws_url(mine)) as ws:
        bystander.send(json.dumps({"type": "join", "principal": ALICE}))
        assert answer(bystander, theirs) == {**answer_of("join", theirs), "last_utterance_id": None}
        if joined:
            ws.send(json.dumps({"type": "join", "principal": ALICE}))
            assert answer(ws, mine)["type"] == "ack"
        audio_open = False
        for frame in sent:
            try:
                ws.send(frame)
            except ConnectionClosed:
                break
            if audio_open and isinstance(frame, bytes) and len(frame) <= live.settings.max_frame_bytes:
                continue  # PCM of an open stream is answered by transcripts when there are words, not acked
            got = answer(ws, mine)
            if got is None:  # the server closed: after `leave`, or on a frame past the transport's size
                break
            assert got["type"] == "ack" or got["code"] in NAMED, got
            if got["type"] == "ack" and got["of"] in ("audio_start", "audio_end"):
                audio_open = got["of"] == "audio_start"
        # Nothing of that reached the bystander, whose meeting goes on.
        assert quiet(bystander)
        bystander.send(json.dumps({"type": "utterance", "id": 0, "speaker": "Bob", "text": "Alice, hi?"}))
        assert answer(bystander, theirs) == {**answer_of("utterance", theirs), "utterance_id": 0}


def answer_of(kind: str, meeting_id: str) -> dict[str, Any]:
    return {"type": "ack", "of": kind, "meeting_id": meeting_id, "utterance_id": None, "action_id": None,
            "last_utterance_id": None}  # fmt: skip
