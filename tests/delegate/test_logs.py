"""structlog's console output: colour for a person at a terminal, plain text into files and pipes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

LOG_ONE_EVENT = (
    "from delegate.logs import configure_logging; configure_logging('info', json=False); "
    "import structlog; structlog.get_logger().warning('meeting_started', meeting_id='m-1')"
)


def test_a_pipe_gets_plain_text() -> None:
    done = subprocess.run([sys.executable, "-c", LOG_ONE_EVENT], capture_output=True, text=True, timeout=60, check=True)
    assert "meeting_started" in done.stderr and "meeting_id=m-1" in done.stderr
    assert "\x1b[" not in done.stderr


def test_a_terminal_gets_colour() -> None:
    leader, follower = pty.openpty()
    try:
        subprocess.run([sys.executable, "-c", LOG_ONE_EVENT], stderr=follower, timeout=60, check=True)
        os.close(follower)
        follower = -1
        printed = b""
        while b"meeting_started" not in printed or not printed.endswith(b"\n"):
            printed += os.read(leader, 4096)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert b"meeting_started" in printed and b"\x1b[" in printed
