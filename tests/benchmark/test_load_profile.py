"""The load benchmark's profile summary: py-spy's collapsed stacks become shares of the server's CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.load.profile import FLOOR_MODEL, cpu_by_part, summarise
from benchmark.load.run import SlowestDecision

SITE = "/usr/lib/python3.12/site-packages"
STACKS = [
    # An utterance's extraction, under the session's handler: action extraction, not the handler.
    "Handle._run (asyncio/events.py:89);MeetingSession._on_utterance (delegate/server/session/meeting_session.py:450);"
    "ActionDesk.extract (delegate/server/session/actions.py:60);detect (delegate/actions/detect.py:44) 30",
    # A send under the decision task: the transport, though the decision task is on the stack.
    "Handle._run (asyncio/events.py:89);Decisions._decide_and_tell (delegate/server/session/decisions.py:120);"
    f"WebSocketsSansIOProtocol.send ({SITE}/uvicorn/protocols/websockets/websockets_sansio_impl.py:300) 50",
    "Runner.run (asyncio/runners.py:118) 20",
]


def test_shares_are_of_the_busy_samples_by_innermost_part(tmp_path: Path) -> None:
    collapsed = tmp_path / "profile.txt"
    collapsed.write_text("\n".join(STACKS) + "\n")
    summary = summarise(collapsed)
    assert summary.samples == 100
    assert summary.groups == {
        "websocket transport": 0.5,
        "action extraction": 0.3,
        "event loop (in C) and tasks": 0.2,
    }
    assert summary.self_top[0] == (
        "WebSocketsSansIOProtocol.send (uvicorn/protocols/websockets/websockets_sansio_impl.py)", 0.5
    )
    assert summary.inclusive["MeetingSession._on_utterance"] == 0.3
    assert summary.inclusive["Decisions._decide_and_tell"] == 0.5
    assert sum(share for _, share in summary.self_top) == pytest.approx(1.0)


def test_cpu_per_utterance_is_split_by_part_and_the_floor_model_set_apart(tmp_path: Path) -> None:
    collapsed = tmp_path / "profile.txt"
    collapsed.write_text(
        "\n".join(
            [
                *STACKS,
                "Decisions._decide_and_tell (delegate/server/session/decisions.py:120);floor "
                "(/srv/checkout/delegate/decide/turn_taking.py:410);Encoder._forward "
                "(/srv/checkout/delegate/language/encoder.py:80) 100",
            ]
        )
        + "\n"
    )
    summary = summarise(collapsed)
    assert summary.groups[FLOOR_MODEL] == 0.5
    parts = cpu_by_part(summary, 2.0)
    assert parts[FLOOR_MODEL] == pytest.approx(1.0) and parts["websocket transport"] == pytest.approx(0.5)
    assert parts["outside the floor model"] == pytest.approx(1.0)
    assert ("Encoder._forward (delegate/language/encoder.py)", 0.5) in summary.self_top


def test_the_slowest_decision_says_whether_the_engine_or_the_wait_took_its_time() -> None:
    read = {"latency_ms": 40.0, "reason": "the floor is not theirs now (read against their brief)"}
    engine = SlowestDecision.of("m", 3, 0.05, read)
    assert engine.cause.startswith("the engine") and "encoder" in engine.cause and engine.latency_ms == 50.0
    waited = SlowestDecision.of("m", 4, 0.5, {"latency_ms": 0.4, "reason": "a backchannel"})
    assert waited.cause.startswith("waiting") and waited.engine_ms == 0.4


def test_a_frame_named_by_its_bare_function_name_counts_for_that_function_in_its_file(tmp_path: Path) -> None:
    # py-spy 0.4.2 names frames without their class: `_on_utterance (...)`; a `send` elsewhere is not the outbox's.
    collapsed = tmp_path / "profile.txt"
    collapsed.write_text(
        "run (asyncio/runners.py:118);_on_utterance (delegate/server/session/meeting_session.py:432);"
        "send (delegate/server/session/outbox.py:70);send (delegate/server/stream.py:44) 30\n"
        f"run (asyncio/runners.py:118);send ({SITE}/uvicorn/protocols/websockets/websockets_sansio_impl.py:300) 70\n"
    )
    summary = summarise(collapsed)
    assert summary.inclusive["MeetingSession._on_utterance"] == 0.3
    assert summary.inclusive["Outbox.send"] == 0.3 and summary.inclusive["WebSocketConnection.send"] == 0.3
    assert summary.inclusive["Decisions._decide_and_tell"] == 0.0
