"""docs/meetings.md: the example bot's pipeline, run verbatim in a real pipecat pipeline with Piper's TTS."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")
pytest.importorskip("piper", reason="needs the voice extra")

from pipecat.frames.frames import (  # noqa: E402
    OutputTransportMessageUrgentFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.tests.utils import SleepFrame, run_test  # noqa: E402

from testkit.live import ALICE  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "meetings.md"


def _example() -> dict[str, object]:
    (code,) = re.findall(r"```python\n(import asyncio.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    namespace: dict[str, object] = {"__name__": "example_bot"}
    exec(compile(code, str(DOC), "exec"), namespace)  # defines the functions; main() needs a Daily room
    return namespace


async def test_the_example_bots_pipeline_speaks_when_the_principal_is_named() -> None:
    delegate, tts = _example()["delegate_pipeline"](ALICE, attendees=["Bob"])  # type: ignore[operator]
    delegate.name_speaker("p-1", "Bob")
    delegate.announce_on_start = True  # here no participant joins to call `announce()`
    down, _ = await run_test(Pipeline([delegate, tts]), frames_to_send=[
        TranscriptionFrame(text="Morning all.", user_id="p-1", timestamp=""),
        TranscriptionFrame(text="Alice, where does the migration stand?", user_id="p-1", timestamp=""),
        SleepFrame(4.0),
    ])
    # The TTS takes the TTSSpeakFrames and sends audio on.
    assert not any(isinstance(f, TTSSpeakFrame) for f in down)
    assert delegate.spoken[0].startswith("Hello, this is Alice Smith's AI delegate")
    assert delegate.spoken[1:] == ["The migration finishes on Friday."]
    audio = [f for f in down if isinstance(f, TTSAudioRawFrame)]
    assert sum(len(f.audio) for f in audio) / 2 / audio[0].sample_rate > 1.0  # the reply, spoken
    data = [f.message for f in down if isinstance(f, OutputTransportMessageUrgentFrame)]
    assert [d["decision"]["scenario"] for d in data if d["type"] == "decision"] == ["none", "explicit_cue"]
    # Bob's first words came while the disclosure was being said: it stopped for him (barge-in).
    assert [(d["utterance_id"], d["by"]) for d in data if d["type"] == "speech_cancel"] == [(-1, "Bob")]


async def test_against_a_server_the_example_bot_streams_the_meeting_the_principal_started(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from delegate.client import create_meeting
    from delegate.config import Settings
    from delegate.store.base import AuditKind
    from testkit.live import start_server

    server = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="principal-token", log_level="warning", voice=False))
    try:
        url = f"ws://127.0.0.1:{server.port}"
        created = await create_meeting(url, ALICE, token="principal-token", meeting_id="doc-bot", attendees=["Bob", "Carol"])
        monkeypatch.setenv("DELEGATE_BOT_TOKEN", created.bot_token)
        pipeline = _example()["delegate_pipeline"]  # type: ignore[index]
        delegate, tts = pipeline(ALICE, ["Bob", "Carol"], server=url, meeting_id="doc-bot")  # type: ignore[operator]
        delegate.name_speaker("p-1", "Bob")
        await run_test(Pipeline([delegate, tts]), frames_to_send=[
            TranscriptionFrame(text="Alice, where does the migration stand?", user_id="p-1", timestamp=""),
            SleepFrame(3.0),
        ])
        audit = httpx.get(f"{server.url}/v1/meetings/doc-bot/audit", headers={"Authorization": "Bearer principal-token"})
        assert audit.status_code == 200, audit.text
        events = [json.loads(line) for line in audit.text.splitlines() if line]
        created_event = next(e for e in events if e["kind"] == AuditKind.meeting_created)
        assert {"Bob", "Carol"} <= set(created_event["payload"]["attendees"]), created_event
        heard = [e["payload"] for e in events if e["kind"] == AuditKind.utterance]
        assert any(p.get("speaker") == "Bob" and "migration" in p.get("text", "") for p in heard), heard
    finally:
        server.stop()


def test_the_example_bot_without_the_voice_extra_says_so_in_one_line(tmp_path) -> None:
    """Run as the doc says (`python bot.py ROOM_URL brief.json`), with pipecat and without Piper."""
    import json
    import subprocess
    import sys

    (code,) = re.findall(r"```python\n(import asyncio.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (tmp_path / "bot.py").write_text(code, encoding="utf-8")
    (tmp_path / "brief.json").write_text(json.dumps(ALICE), encoding="utf-8")
    blocked = "import runpy, sys\nsys.modules['piper'] = None\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    done = subprocess.run(
        [sys.executable, "-c", blocked, str(tmp_path / "bot.py"), "https://example.daily.co/room", str(tmp_path / "brief.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    # pipecat's own start-up banner (a pipecat program's) may come first; then ours, one line.
    *before, last = done.stderr.strip().splitlines()
    assert last == "the delegate's voice (text-to-speech) needs the voice extra: pip install 'meeting-delegate[voice]'"
    assert all("| pipecat:" in line and "INFO" in line for line in before), before


def _run_bot(tmp_path: Path, *args: str, blocked: tuple[str, ...] = (), timeout: float = 120) -> tuple[int, list[str]]:
    """The doc's bot run as it says (`python bot.py ...`), `blocked` modules not importable: (exit code, stderr lines)."""
    import os
    import subprocess
    import sys

    (code,) = re.findall(r"```python\n(import asyncio.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (tmp_path / "bot.py").write_text(code, encoding="utf-8")
    run = (
        "import runpy, sys\n"
        f"for name in {list(blocked)!r}: sys.modules[name] = None\n"
        "sys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    here = {**os.environ, "PYTHONPATH": str(DOC.parents[1])}  # this checkout's `delegate`, as the other tests import it
    done = subprocess.run(
        [sys.executable, "-c", run, "bot.py", *args], cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
        check=False, env=here,
    )
    return done.returncode, done.stderr.strip().splitlines()


def _only_pipecats_logs_and(lines: list[str], last: str) -> None:
    """Nothing but pipecat's (and Daily's) own log lines come before the bot's one line, and no traceback."""
    *before, said = lines
    assert said.startswith(last), lines
    assert not any("Traceback" in line for line in lines), lines
    assert all(" | " in line or "Warning" in line or line.startswith(("{", " ")) for line in before), before


def test_the_example_bot_without_arguments_prints_its_usage(tmp_path) -> None:
    code, lines = _run_bot(tmp_path)
    assert code != 0
    _only_pipecats_logs_and(lines, "usage: python bot.py ROOM_URL brief.json [ws://127.0.0.1:8000 [ATTENDEE ...]]")


def test_the_example_bot_without_daily_names_pipecats_daily_extra_in_one_line(tmp_path) -> None:
    (tmp_path / "brief.json").write_text(json.dumps(ALICE), encoding="utf-8")
    code, lines = _run_bot(tmp_path, "https://example.daily.co/room", "brief.json", blocked=("daily",))
    assert code == 1
    _only_pipecats_logs_and(lines, "pipecat's Daily transport (the example bot's) needs the daily extra: pip install 'pipecat-ai[daily]'")
    assert lines[-1].endswith("'pipecat-ai[daily]'")


def test_the_example_bot_that_cannot_join_stops_with_one_line(tmp_path) -> None:
    pytest.importorskip("daily", reason="needs pipecat's daily extra")
    (tmp_path / "brief.json").write_text(json.dumps(ALICE), encoding="utf-8")
    # Nothing listens on port 9 of loopback: the room cannot be looked up, as with a wrong room URL or no network.
    code, lines = _run_bot(tmp_path, "http://127.0.0.1:9/no-room", "brief.json", timeout=150)
    assert code == 1
    _only_pipecats_logs_and(lines, "the bot could not join: Error joining http://127.0.0.1:9/no-room")
