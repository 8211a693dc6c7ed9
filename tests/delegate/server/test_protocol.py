"""Parsing client frames: each kind of bad frame gets its own error code and a sentence."""

from __future__ import annotations

import json

import pytest

from delegate.server.protocol import (
    ERROR_TEXT,
    DecisionMessage,
    ErrorCode,
    Feedback,
    Join,
    ProtocolError,
    UtteranceIn,
    parse_client_message,
)


def test_messages_parse_into_their_models() -> None:
    u = parse_client_message('{"type": "utterance", "id": 4, "speaker": "Bob", "text": "Hi", "start": 1.5}')
    assert isinstance(u, UtteranceIn) and u.utterance().start == 1.5 and u.final
    j = parse_client_message(
        json.dumps({"type": "join", "principal": {"name": "Alice"}, "last_utterance_id": 3})
    )
    assert isinstance(j, Join) and j.spec() is not None and j.last_utterance_id == 3
    assert Join(type="join").spec() is None
    f = parse_client_message('{"type": "feedback", "verdict": "reject", "action_id": "a1"}')
    assert isinstance(f, Feedback)


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("", ErrorCode.bad_json),
        ("{", ErrorCode.bad_json),
        ("[" * 100_000, ErrorCode.bad_json),
        ('"just a string"', ErrorCode.bad_message),
        ("{}", ErrorCode.bad_message),
        ('{"type": 7}', ErrorCode.unknown_type),
        ('{"type": "UTTERANCE"}', ErrorCode.unknown_type),
        ('{"type": "utterance", "speaker": "Bob", "text": "x"}', ErrorCode.bad_message),
        ('{"type": "utterance", "id": 1, "speaker": "", "text": "x"}', ErrorCode.bad_message),
        ('{"type": "utterance", "id": 1, "speaker": "Bob", "text": "x", "extra": 1}', ErrorCode.bad_message),
        ('{"type": "feedback", "verdict": "maybe", "action_id": "a"}', ErrorCode.bad_message),
        (
            '{"type": "feedback", "verdict": "approve", "action_id": "a", "utterance_id": 1}',
            ErrorCode.bad_message,
        ),
        ('{"type": "utterance", "id": 1, "speaker": "Bob", "text": "\\ud800"}', ErrorCode.bad_encoding),
    ],
)
def test_bad_frames_get_their_code(frame: str, code: ErrorCode) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_client_message(frame)
    assert err.value.code == code
    assert err.value.detail


def test_missing_field_is_named() -> None:
    with pytest.raises(ProtocolError) as err:
        parse_client_message('{"type": "utterance", "id": 1, "speaker": "Bob"}')
    assert err.value.detail.startswith("text:")


def test_every_error_code_has_a_sentence() -> None:
    assert set(ERROR_TEXT) == set(ErrorCode)


def test_server_messages_carry_their_type() -> None:
    frame = json.loads(
        DecisionMessage(
            meeting_id="m",
            decision={
                "utterance_id": 1,
                "scenario": "none",
                "reason": "r",
                "confidence": 0.1,
                "engine": "local",
            },
        ).model_dump_json()
    )
    assert frame["type"] == "decision" and frame["decision"]["utterance_id"] == 1


def test_a_client_reads_what_a_newer_server_sends_but_the_server_refuses_unknown_fields() -> None:
    from pydantic import TypeAdapter

    from delegate.server.protocol import ServerMessage

    frame = {"type": "decision", "meeting_id": "m", "approval": "none", "since": "v2",
             "decision": {"utterance_id": 3, "scenario": "none", "speak": "", "reason": "quiet", "confidence": 0.9,
                          "engine": "local", "added_later": [1]}}
    message = TypeAdapter(ServerMessage).validate_json(json.dumps(frame))
    assert message.type == "decision" and message.decision.utterance_id == 3
    with pytest.raises(ProtocolError):
        parse_client_message(json.dumps({"type": "leave", "reason": "bye", "since": "v2"}))


@pytest.mark.parametrize(
    "frame",
    [
        '{"type": "utterance", "id": 4, "speaker": "Bob", "text": "Hi", "start": 1.5, "end": 2}',
        '{"type": "utterance", "id": 4, "speaker": "Bob", "text": "Hi", "final": false, "names_unheard": ["Ana"]}',
        '{"type": "utterance", "speaker": "Bob", "text": "Hi", "id": 4, "id": 5}',
        '{"type": "utterance", "id": 4.0, "speaker": "Bob", "text": "Hi"}',
        '{"type": "utterance", "id": "4", "speaker": "Bob", "text": "Hi"}',
        '{"type": "utterance", "id": 4, "speaker": "Bob", "text": "Hi", "start": NaN}',
        '{"type": "utterance", "id": 4, "speaker": "Bob", "text": "Hi", "final": 1}',
        '{"type": "utterance", "id": 18446744073709551616, "speaker": "Bob", "text": "Hi"}',
        '{"type": "utterance", "id": 4, "speaker": "Bob", "text": "caf\\u00e9 \u00e9t\u00e9"}',
        '  {"type": "leave", "reason": "done"}  ',
        '{"type": "audio_start", "sample_rate": 16000.0}',
        '{"type": "join", "principal": {"name": "Ana", "background": [{"context": "c", "information": "i", '
        '"shareable": false}]}, "attendees": ["Ana", "Bo"], "engine": "local", "voice": false}',
        '{"type": "join", "principal": {"name": "Ana", "background": [{"context": "c", "information": "i", '
        '"shareable": "no"}]}}',
        '{"type": "feedback", "verdict": "approve", "utterance_id": 3, "comment": "ok"}',
        '{"type": "ask", "id": "q1", "question": "What did Bo commit to?", "audience": "principal"}',
    ],
)
def test_a_frame_read_once_is_the_message_or_the_error_of_reading_it_twice(frame: str) -> None:
    # The fast path reads the text straight into the models; the long one parses JSON, then validates.
    from pydantic import TypeAdapter, ValidationError

    from delegate.server.protocol import ClientMessage

    try:
        expected: object = TypeAdapter(ClientMessage).validate_python(json.loads(frame))
    except (ValidationError, ValueError) as e:
        expected = type(e)
    try:
        got: object = parse_client_message(frame)
    except ProtocolError:
        got = ValidationError if expected is ValidationError else ProtocolError
    assert got == expected
