"""The `delegate` command line: shared data directory, options on every command, one clear line on bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from benchmark.asr import AUDIO_FIXTURES
from delegate.__main__ import app
from delegate.config import Settings
from delegate.store import AuditEvent, AuditKind, SQLiteStore
from testkit.cluster import free_port

runner = CliRunner()


def test_the_audit_log_lives_in_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("DELEGATE_DB_PATH", raising=False)
    monkeypatch.setenv("DELEGATE_DATA_DIR", str(tmp_path))
    assert Settings().db_path == tmp_path / "audit.sqlite"
    other = tmp_path / "elsewhere"
    assert Settings(data_dir=other).db_path == other / "audit.sqlite"

    async def write() -> None:
        store = SQLiteStore(Settings().db_path)
        store.open()
        await store.append(AuditEvent(meeting_id="m1", kind=AuditKind.utterance, utterance_id=0, payload={"speaker": "Bob", "text": "hi"}))
        await store.close()

    asyncio.run(write())
    monkeypatch.chdir(tmp_path.parent)  # `audit` run from another directory finds the same log
    result = runner.invoke(app, ["audit", "m1"])
    assert result.exit_code == 0 and "Bob: hi" in result.output
    assert runner.invoke(app, ["audit", "m1", "--data-dir", str(tmp_path)]).exit_code == 0


def test_listen_with_a_corrupt_recording_says_so_in_one_line(tmp_path):
    wav = tmp_path / "broken.wav"
    wav.write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot really audio")
    result = runner.invoke(app, ["listen", str(wav), "--principal", str(AUDIO_FIXTURES / "principal_sirui.json")])
    assert result.exit_code == 2
    assert "cannot read it as audio" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) <= 3


def test_listen_with_an_invalid_profile_says_so_in_one_line(tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text('{"name": "Ann", "background": [{"context": "c"}]}')
    result = runner.invoke(app, ["listen", str(AUDIO_FIXTURES / "name_cue.wav"), "--principal", str(profile)])
    assert result.exit_code == 2
    assert "not a valid profile: background.0.information" in " ".join(result.output.split())


def test_unknown_engine_is_refused_before_anything_starts():
    result = runner.invoke(app, ["serve", "--engine", "gpt9"])
    assert result.exit_code == 2 and "unknown engine 'gpt9'" in result.output


def test_help_shows_the_options_of_every_command():
    for command, options in {"serve": ["--engine", "--data-dir", "--db"], "listen": ["--engine", "--attendee"]}.items():
        result = runner.invoke(app, [command, "--help"], terminal_width=120)
        assert result.exit_code == 0
        for option in options:
            assert option in result.output, (command, option)


def test_data_dir_default_is_not_the_working_directory():
    assert Settings().db_path.parent != Path(".")


def _help(module: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_is_wrapped_not_cut_and_shows_flags_as_flags():
    replay = _help("benchmark.replay")
    assert "…" not in replay
    assert "--derive / --no-derive" in replay and "matched,mismatched,noisy_name" in replay
    load = _help("benchmark.load")
    assert "--meetings <int" in load and "[default: 10" in load


def test_events_go_to_stderr_and_results_to_stdout(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "DELEGATE_LLM_TIMEOUT_S": "0.3", "DELEGATE_LLM_RETRIES": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmark.replay", "--engine", "llm", "--limit", "3", "--mode", "snapshot", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert "response rate" in done.stdout
    assert "llm_fallback" in done.stderr and "llm_fallback" not in done.stdout
    assert "HTTP Request" not in done.stderr + done.stdout  # httpx request lines are off by default


# Mistakes a new user makes: each ends in one clear line (at most 3 in all) and a non-zero exit, never a traceback.

REPO = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, env: dict[str, str] | None = None, unset: tuple[str, ...] = (), without: tuple[str, ...] = ()
) -> tuple[int, list[str]]:
    """`python -m delegate ARGS` from this checkout, `unset` variables not set and `without` modules not
    importable; (exit code, non-empty lines of stdout and stderr)."""
    import os
    import subprocess
    import sys

    code = (
        "import runpy, sys\n"
        f"for name in {list(without)!r}: sys.modules[name] = None\n"
        "sys.argv = ['delegate', *sys.argv[1:]]\n"
        "runpy.run_module('delegate', run_name='__main__', alter_sys=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=180, check=False,
        env={k: v for k, v in os.environ.items() if k not in unset} | {"DELEGATE_VOICE": "false", **(env or {})},
    )
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


def assert_one_clear_line(code: int, lines: list[str], says: str) -> None:
    assert code != 0 and len(lines) <= 3 and not any("Traceback" in line for line in lines), (code, lines)
    assert says in " ".join(lines), lines


def test_serve_with_an_llm_engine_without_the_llm_extra_names_it(tmp_path):
    code, lines = run_cli("serve", "--engine", "llm", "--port", str(free_port()), "--data-dir", str(tmp_path), without=("openai",))
    assert_one_clear_line(code, lines, "needs the llm extra: pip install 'meeting-delegate[llm]'")


def test_listen_with_an_llm_engine_without_a_key_says_so_before_transcribing(tmp_path):
    no_key = ("OPENAI_API_KEY", "DELEGATE_LLM_API_KEY", "OPENAI_BASE_URL", "DELEGATE_LLM_BASE_URL")
    wav, profile = AUDIO_FIXTURES / "name_cue.wav", AUDIO_FIXTURES / "principal_sirui.json"
    code, lines = run_cli("listen", str(wav), "--principal", str(profile), "--engine", "llm", unset=no_key)
    assert_one_clear_line(code, lines, "an LLM engine needs OPENAI_API_KEY")


def test_a_setting_that_is_not_valid_is_named(tmp_path):
    code, lines = run_cli("serve", "--data-dir", str(tmp_path), env={"DELEGATE_PORT": "abc"})
    assert_one_clear_line(code, lines, "DELEGATE_PORT: Input should be a valid integer")


def test_serve_on_a_port_in_use_fails_before_starting_up(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, lines = run_cli("serve", "--port", str(port), "--data-dir", str(tmp_path))
    assert_one_clear_line(code, lines, f"cannot listen on 127.0.0.1:{port}")
    assert "--port" in lines[-1], lines
    assert not any("startup complete" in line for line in lines), lines


def test_audit_of_a_tenant_meeting_needs_its_token_and_says_so(tmp_path):
    import httpx

    from testkit.live import ALICE, start_server

    db = tmp_path / "audit.sqlite"
    live = start_server(Settings(db_path=db, api_tokens="tok-a,tok-b", log_level="warning", voice=False))
    try:
        created = httpx.post(f"{live.url}/v1/meetings", json={"meeting_id": "standup", "principal": ALICE},
                             headers={"Authorization": "Bearer tok-a"}, timeout=30)
        assert created.status_code == 201, created.text
    finally:
        live.stop()

    code, lines = run_cli("audit", "standup", "--db", str(db))
    assert_one_clear_line(code, lines, "no meeting 'standup'")
    assert "--token" in lines[-1]
    code, lines = run_cli("audit", "standup", "--db", str(db), "--token", "tok-b")
    assert_one_clear_line(code, lines, "no meeting 'standup'")
    code, lines = run_cli("audit", "standup", "--db", str(db), "--token", "tok-a")
    assert code == 0 and "meeting_created" in lines[0] and "Alice Smith" in lines[0], lines


def test_ask_a_server_with_tokens_names_the_token_options(tmp_path):
    import httpx

    from testkit.live import ALICE, start_server

    live = start_server(Settings(db_path=tmp_path / "audit.sqlite", api_tokens="tok-a", log_level="warning", voice=False))
    try:
        created = httpx.post(f"{live.url}/v1/meetings", json={"meeting_id": "standup", "principal": ALICE},
                             headers={"Authorization": "Bearer tok-a"}, timeout=30)
        assert created.status_code == 201, created.text
        ask = ("ask", "standup", "Who is here?", "--url", live.url)
        code, lines = run_cli(*ask, unset=("DELEGATE_TOKEN",))
        assert_one_clear_line(code, lines, "unauthorized")
        assert "--token TOKEN or DELEGATE_TOKEN" in lines[-1], lines
        code, lines = run_cli(*ask, env={"DELEGATE_TOKEN": "tok-b"})
        assert_one_clear_line(code, lines, "a token it does not know")
        code, lines = run_cli(*ask, env={"DELEGATE_TOKEN": "tok-a"})
        assert code == 0, lines
    finally:
        live.stop()


def test_audit_of_an_unknown_meeting_or_a_file_that_is_no_audit_log_says_so_in_one_line(tmp_path):
    import sqlite3

    import httpx

    from testkit.live import ALICE, start_server

    db = tmp_path / "audit.sqlite"
    live = start_server(Settings(db_path=db, api_tokens="", log_level="warning", voice=False))
    try:
        created = httpx.post(f"{live.url}/v1/meetings", json={"meeting_id": "standup", "principal": ALICE}, timeout=30)
        assert created.status_code == 201, created.text
    finally:
        live.stop()
    code, lines = run_cli("audit", "retro", "--db", str(db))
    assert_one_clear_line(code, lines, f"no meeting 'retro' in the audit log at {db}")
    code, lines = run_cli("audit", "standup", "--db", str(db))
    assert code == 0 and "meeting_created" in lines[0], lines

    (tmp_path / "notes.txt").write_text("not a database\n" * 100, encoding="utf-8")
    sqlite3.connect(tmp_path / "other.sqlite").close()  # a SQLite file of no tables
    for path, says in [
        (tmp_path / "notes.txt", "is not an audit database (file is not a database)"),
        (tmp_path / "other.sqlite", "is not an audit database (no such table: events)"),
        (tmp_path, "is a folder: --db takes the audit database file, --data-dir the folder it is in"),
    ]:
        code, lines = run_cli("audit", "standup", "--db", str(path))
        assert_one_clear_line(code, lines, says)


def test_listen_takes_the_brief_by_the_name_of_brief(tmp_path):
    profile = tmp_path / "brief.json"
    profile.write_text('{"name": "Ann", "background": [{"context": "c"}]}')
    result = runner.invoke(app, ["listen", str(AUDIO_FIXTURES / "name_cue.wav"), "--brief", str(profile)])
    assert result.exit_code == 2  # read as the principal's profile: refused for what is in it, not for the option
    assert "not a valid profile: background.0.information" in " ".join(result.output.split())


def test_serve_prints_where_it_listens_and_the_console_answers_there(tmp_path):
    import os
    import re
    import select
    import subprocess
    import sys
    import time

    import httpx

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "delegate", "serve", "--port", str(port), "--data-dir", str(tmp_path)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "DELEGATE_VOICE": "false", "DELEGATE_API_TOKENS": ""},
    )
    try:
        assert server.stdout is not None
        said: list[str] = []
        deadline = time.monotonic() + 120
        while not any("listening on" in line for line in said) and server.poll() is None:
            ready, _, _ = select.select([server.stdout], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"serve said nothing of its address: {said}"
            said.append(server.stdout.readline())
        (line,) = [line for line in said if "listening on" in line]
        address, console = re.findall(r"http://[^\s;]+", line)
        assert address == f"http://127.0.0.1:{port}" and console == f"http://127.0.0.1:{port}/", line
        assert httpx.get(f"{address}/healthz", timeout=10).json()["status"] == "ok"
        page = httpx.get(console, timeout=10)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    finally:
        server.terminate()
        server.wait(timeout=60)
