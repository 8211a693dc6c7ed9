"""`delegate attend` as a user runs it (a real process), against the fake Attendee and a real delegate server."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from delegate.integrations.attend import serving
from delegate.store import AuditKind, read_events
from testkit.attendee_fake import FakeAttendee
from testkit.live import ALICE

QUESTION = "Alice, when does the database migration finish?"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_delegate_attend_runs_a_meeting_through_attendee_and_says_how_it_ended(
    make_server: Any, tmp_path: Path
) -> None:
    server = make_server()
    brief = tmp_path / "brief.json"
    brief.write_text(json.dumps(ALICE))
    fake = FakeAttendee()
    async with serving(fake.app(), "127.0.0.1", 0) as port:
        bridge_port = free_port()
        env = {**os.environ, "ATTENDEE_URL": f"http://127.0.0.1:{port}", "ATTENDEE_API_KEY": fake.api_key,
               "ATTENDEE_WEBHOOK_SECRET": fake.webhook_secret}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "delegate", "attend", "https://meet.google.com/abc-def-ghi", "--via", "attendee",
            "--brief", str(brief), "--server", server.url, "--public-url", f"http://127.0.0.1:{bridge_port}",
            "--listen", f"127.0.0.1:{bridge_port}", "--attendee", "Bob Jones", "--meeting-id", "cli-1",
            "--hear", "transcript", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        try:
            bot = await asyncio.wait_for(fake.created.get(), 60)
            first = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()  # type: ignore[union-attr]
            assert first.startswith(f"meeting cli-1: attendee bot {bot.id} is joining")
            for state, event in [("waiting_room", "put_in_waiting_room"), ("joined_recording", "joined_meeting")]:
                assert await bot.change_state(state, event) == 200
            assert await bot.transcript("16778240", "Bob", QUESTION) == 200
            assert await bot.change_state("ended", "meeting_ended") == 200
            out, err = await asyncio.wait_for(process.communicate(), 30)
        finally:
            if process.returncode is None:
                process.kill()
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "meeting cli-1: ended; 1 turn; the audit log: delegate audit cli-1"
    assert fake.api_key not in (out + err).decode()
    events = read_events(server.settings.db_path, "cli-1")
    turns = [e.payload for e in events if e.kind == AuditKind.utterance]
    assert [(t["speaker"], t["text"]) for t in turns] == [("Bob Jones", QUESTION)]  # "Bob" as the principal listed him
    decision = next(e.payload for e in events if e.kind == AuditKind.decision)
    assert "Friday" in decision["speak"]
    assert bot.left


async def test_delegate_attend_without_the_services_keys_names_them(tmp_path: Path) -> None:
    brief = tmp_path / "brief.json"
    brief.write_text(json.dumps(ALICE))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALL_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "delegate", "attend", "https://zoom.us/j/1", "--via", "recall", "--brief", str(brief),
        "--public-url", "https://bridge.example", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2 and not out
    assert err.decode().strip().splitlines() == [
        "delegate: set RECALL_API_KEY, RECALL_WEBHOOK_SECRET in the environment (docs/meetings.md, the recall section)"]


async def test_delegate_attend_when_the_service_is_out_of_reach_says_so_and_ends_the_meeting(
    make_server: Any, tmp_path: Path
) -> None:
    server = make_server()
    brief = tmp_path / "brief.json"
    brief.write_text(json.dumps(ALICE))
    nowhere = free_port()
    env = {**os.environ, "ATTENDEE_URL": f"http://127.0.0.1:{nowhere}", "ATTENDEE_API_KEY": "k",
           "ATTENDEE_WEBHOOK_SECRET": "c2VjcmV0"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "delegate", "attend", "https://meet.google.com/abc-def-ghi", "--via", "attendee",
        "--brief", str(brief), "--server", server.url, "--public-url", "https://bridge.example",
        "--listen", f"127.0.0.1:{free_port()}", "--meeting-id", "cli-2", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2 and not out
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"delegate: cannot reach http://127.0.0.1:{nowhere}"), lines
    events = read_events(server.settings.db_path, "cli-2")
    assert events[-1].kind == AuditKind.left and events[-1].payload["reason"] == "the service did not send its bot"
