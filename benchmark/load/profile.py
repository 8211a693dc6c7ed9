"""A sampling profile of the server during a load run (py-spy, a separate process that reads the server's
stacks), summed up as the functions that take the server's CPU.

py-spy writes collapsed stacks (`frame;frame;frame count`); only samples where the server was busy count
(idle waits are left out by py-spy), so a share is a share of the CPU the server used.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

_FRAME = re.compile(r"^(?P<func>.+?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
_GROUPS: dict[str, tuple[str, ...]] = {
    # A sample belongs to the innermost frame of its stack that one of these names (else: "other").
    "action extraction": ("delegate/actions/", "session/actions.py"),
    "decision (engine)": ("delegate/decide/", "delegate/guard.py", "delegate/language/"),
    "audit writes": ("delegate/store/",),
    "metrics": ("prometheus_client/",),
    "logging": ("structlog/", "delegate/logs.py"),
    "serialising (pydantic, json)": ("model_dump_json", "pydantic/", "json/", "orjson"),
    "websocket transport": ("websockets/", "uvicorn/", "starlette/", "fastapi/", "server/stream.py"),
    "event loop (in C) and tasks": ("asyncio/", "uvloop/"),
}
INCLUSIVE: dict[str, str] = {
    # The file tells apart functions of one name: py-spy may name a frame by its bare name (`send (…)`).
    "MeetingSession._on_utterance": "session/meeting_session.py",
    "Decisions._decide_and_tell": "session/decisions.py",
    "ActionDesk.extract": "session/actions.py",
    "Later._passes": "session/later.py",
    "Outbox.audit": "session/outbox.py",
    "Outbox.send": "session/outbox.py",
    "Outbox.publish": "session/outbox.py",
    "SQLiteStore._commit": "store/sqlite.py",
    "Metrics.decision": "server/metrics.py",
    "parse_client_message": "server/protocol.py",
    "WebSocketConnection.send": "server/stream.py",
}
"""Functions whose inclusive share (their own time and what they call) the summary reports."""


PY_SPY_MISSING = "--profile needs py-spy on the PATH: pip install py-spy"


class ProfileSummary(BaseModel):
    samples: int
    self_top: list[tuple[str, float]]
    """Functions by the share of samples spent in them (not in what they call), highest first."""
    groups: dict[str, float]
    """Share of samples by the part of the server at the innermost frame that names one."""
    inclusive: dict[str, float]
    """Share of samples whose stack passes through each function of `INCLUSIVE`."""


FLOOR_MODEL = "floor model and sentence encoder"
"""A sample anywhere under the floor model's inference (its features, trees and reader: `turn_taking.floor`), or in
the sentence encoder (which also reads briefs when a meeting starts, and the latest turn against the items a reply
may use)."""
_FLOOR_FRAMES = ("floor (delegate/decide/turn_taking.py)", "read_brief (delegate/decide/turn_taking.py)")


def cpu_by_part(summary: ProfileSummary, cpu_ms_per_utterance: float) -> dict[str, float]:
    """The server's CPU per utterance split by the profile's parts, with the part outside the floor model."""
    parts = {group: round(share * cpu_ms_per_utterance, 4) for group, share in summary.groups.items()}
    parts["outside the floor model"] = round(cpu_ms_per_utterance - parts.get(FLOOR_MODEL, 0.0), 4)
    return parts


def _frames(stack: str) -> list[str]:
    out = []
    for frame in stack.split(";"):
        m = _FRAME.match(frame.strip())
        if m is None:
            out.append(frame.strip())
            continue
        path = m["file"]
        for marker in ("site-packages/", "/lib/python3"):
            if marker in path:
                path = path.split(marker, 1)[1]
        if "/delegate/" in path:  # a checkout, wherever it is: from the package on
            path = "delegate/" + path.rsplit("/delegate/", 1)[1]
        out.append(f"{m['func']} ({path})")
    return out


def summarise(collapsed: Path, top: int = 15) -> ProfileSummary:
    self_time: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = _frames(stack)
        if frames:
            self_time[frames[-1]] += n
        groups[_group(frames)] += n
        for func, where in INCLUSIVE.items():
            named = (f"{func} (", f"{func.rsplit('.', 1)[-1]} (")  # qualified (CPython 3.11+), or bare (py-spy 0.4.2)
            if any(frame.startswith(named) and where in frame for frame in frames):
                inclusive[func] += n
    share = (lambda n: round(n / total, 3)) if total else (lambda n: 0.0)
    return ProfileSummary(
        samples=total,
        self_top=[(f, share(n)) for f, n in self_time.most_common(top)],
        groups={g: share(n) for g, n in groups.most_common()},
        inclusive={f: share(inclusive[f]) for f in INCLUSIVE},
    )


def _group(frames: list[str]) -> str:
    if any(frame.startswith(_FLOOR_FRAMES) or "language/encoder.py" in frame for frame in frames):
        return FLOOR_MODEL
    for frame in reversed(frames):
        for group, markers in _GROUPS.items():
            if any(marker in frame for marker in markers):
                return group
    return "other"


@contextlib.contextmanager
def recording(pid: int, out: Path, rate: int = 100) -> Iterator[None]:
    """py-spy samples process `pid` until the block ends, writing collapsed stacks to `out`."""
    exe = shutil.which("py-spy")
    if exe is None:
        raise RuntimeError(PY_SPY_MISSING)
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [exe, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--nonblocking", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield
    finally:
        # py-spy writes its file when interrupted (SIGINT), as on Ctrl-C.
        proc.send_signal(2)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if not out.exists():
            raise RuntimeError(f"py-spy wrote no profile: {err.decode(errors='replace').strip()[-300:]}")
