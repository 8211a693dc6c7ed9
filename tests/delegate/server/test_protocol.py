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
