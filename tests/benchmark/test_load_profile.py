"""The load benchmark's profile summary: py-spy's collapsed stacks become shares of the server's CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.load.profile import summarise

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
