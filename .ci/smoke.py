"""Smoke test of the installed product: every command the README documents, run outside the checkout.

`.ci/run` builds the wheel, installs it into a fresh virtual environment and runs this file with that
environment's python from an empty temporary directory, once with the base install and once more after
adding extras:

    cd "$(mktemp -d)" && python /path/to/checkout/.ci/smoke.py --wheel /path/to/meeting_delegate-*.whl

(`--wheel` is optional: without it the wheel's contents are not checked, as in the container image.)

The extras present are read from the environment (those whose requirements are all installed). A command whose extras are installed must succeed and show its result; one whose extras are missing
must fail with exit code 1 and one line naming the extra to install. Adding a documented command is one
line in COMMANDS. From the checkout this reads only what a user would bring along (a WAV to listen to)
and the scripted OpenAI-compatible server of `testkit.fake_openai` (shipped in the wheel's `testkit`
package; run in this process on 127.0.0.1; one copy serves both the tests and this run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import wave
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "meeting-delegate"
WAV = REPO / "audio_fixtures" / "name_cue.wav"
PRINCIPAL = REPO / "audio_fixtures" / "principal_sirui.json"
SCRIPTED_SPEECH = "I will check the release status."

# Tracked files under the packages' folders that are not read at run time, so need not ship.
NOT_SHIPPED = {"audio_fixtures/make.sh"}
# Top-level folders mapped into a package (the symlinks delegate/prompt_files, benchmark/audio_fixtures).
MAPPED = {"prompts": "delegate/prompt_files", "audio_fixtures": "benchmark/audio_fixtures"}


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Command:
    """One documented command line: `argv[0]` is `delegate` (the console script) or a `-m` module."""

    argv: list[str]
    needs: frozenset[str] = frozenset()
    check: Callable[[Result, Path], str | None] | None = None
    """Given the run and the working directory: None when the output is right, else what is wrong."""
    llm: bool = False
    """Point the OpenAI client at the scripted server, and require that it was asked."""

    @property
    def label(self) -> str:
        return " ".join(self.argv)


def json_has(path: str, *keys: str) -> Callable[[Result, Path], str | None]:
    def check(result: Result, cwd: Path) -> str | None:
        file = cwd / path
        if not file.is_file():
            return f"{path} was not written"
        data = json.loads(file.read_text())
        missing = [k for k in keys if k not in data]
        return f"{path} lacks {missing}" if missing else None

    return check


def prints(*texts: str) -> Callable[[Result, Path], str | None]:
    def check(result: Result, cwd: Path) -> str | None:
        missing = [t for t in texts if t not in result.stdout]
        return f"output lacks {missing}" if missing else None

    return check


def scripted_speech_in(path: str) -> Callable[[Result, Path], str | None]:
    def check(result: Result, cwd: Path) -> str | None:
        file = cwd / path
        if not file.is_file():
            return f"{path} was not written"
        return None if SCRIPTED_SPEECH in file.read_text() else f"no response of the scripted LLM in {path}"

    return check


def asr_quality(result: Result, cwd: Path) -> str | None:
    """Every set (the espeak-ng fixtures, real recorded speech) recognised, streamed, at under 30% WER."""
    sets = json.loads((cwd / "asr.json").read_text())["sets"]
    worse = [f"word error rate {s['wer']:.2f} on {s['set']}" for s in sets if s["wer"] >= 0.3]
    return "; ".join(worse) or (None if sets else "no set of clips was recognised")


AUDIO, LLM, VOICE = frozenset({"audio"}), frozenset({"llm"}), frozenset({"voice"})
PIPECAT = frozenset({"pipecat"})


def wav_written(path: str) -> Callable[[Result, Path], str | None]:
    """A WAV file at least as long as the recording listened to (the replies mixed in)."""

    def check(result: Result, cwd: Path) -> str | None:
        if not (cwd / path).is_file():
            return f"{path} was not written"
        with wave.open(str(cwd / path)) as out, wave.open(str(WAV)) as meeting:
            if out.getnframes() / out.getframerate() < meeting.getnframes() / meeting.getframerate():
                return f"{path} is shorter than the recording"
        return None

    return check


def voice_heard(result: Result, cwd: Path) -> str | None:
    figures = json.loads((cwd / "voice.json").read_text())
    if not figures["final_latency_s"]["n"] or figures["finals_lost"]:
        return f"{figures['finals_lost']} of {figures['turns']} turns got no final transcript"
    return None


def voice_replied(result: Result, cwd: Path) -> str | None:
    figures = json.loads((cwd / "v2v.json").read_text())
    if not figures["voice_to_voice_s"]["n"]:
        return f"none of {figures['cues']} cues got a spoken reply"
    return None

COMMANDS = [
    Command(["benchmark.replay", "--limit", "40", "--out", "r/replay"], check=json_has("r/replay/report.json", "response_rate")),
    Command(["benchmark.replay", "--engine", "oracle", "--variants", "matched", "--limit", "20", "--out", "r/oracle"], check=json_has("r/oracle/report.json", "loose_recall")),
    Command(["benchmark.replay", "--engine", "shuffled", "--variants", "matched", "--limit", "20", "--out", "r/shuffled"], check=json_has("r/shuffled/report.json", "loose_recall")),
    Command(["benchmark.replay", "--engine", "llm", "--mode", "snapshot", "--limit", "15", "--out", "r/llm"], LLM, scripted_speech_in("r/llm/cases.jsonl"), llm=True),
    Command(["benchmark.replay", "--engine", "hybrid", "--judge", "llm", "--limit", "40", "--out", "r/hybrid"], LLM, scripted_speech_in("r/hybrid/cases.jsonl"), llm=True),
    Command(["benchmark.actions", "--json", "actions.json"], check=json_has("actions.json")),
    Command(["benchmark.actions", "--refine", "--json", "actions-refined.json"], LLM, json_has("actions-refined.json"), llm=True),
    Command(["benchmark.latency", "--sizes", "100,200", "--json", "latency.json"], check=json_has("latency.json", "latency_ms")),
    Command(["benchmark.load", "--meetings", "2", "--rate", "2", "--duration", "3", "--json", "load.json"], check=json_has("load.json")),
    Command(["benchmark.pipecat", "--data", str(REPO / "benchmark" / "fixtures" / "fixture_01_release_planning.json"), "--json", "pipecat.json"], PIPECAT, json_has("pipecat.json", "agree")),
    Command(["benchmark.console_latency", "--utterances", "20", "--rate", "10", "--json", "console.json"], check=json_has("console.json", "watcher_p95_ms")),
    Command(["benchmark.asr", "--json", "asr.json"], AUDIO, asr_quality),
    Command(["benchmark.voice", "--meetings", "2", "--clips", "name_cue", "--stagger", "1", "--no-voice", "--json", "voice.json"], AUDIO, voice_heard),
    Command(["delegate", "listen", str(WAV), "--principal", str(PRINCIPAL)], AUDIO, prints("(delegate) says", "would have spoken 1 time")),
    Command(["delegate", "listen", str(WAV), "--principal", str(PRINCIPAL), "--speak", "replies.wav"], AUDIO | VOICE, wav_written("replies.wav")),
    Command(["benchmark.voice", "--meetings", "1", "--clips", "cue_named,planning,cue_implicit", "--stagger", "0", "--json", "v2v.json"], AUDIO | VOICE, voice_replied),
    Command(["benchmark.intelligibility", "--help"], check=prints("--voice")),
    Command(["delegate", "serve", "--help"], check=prints("--host", "--port")),
    Command(["delegate", "audit", "--help"], check=prints("meeting_id")),
    Command(["delegate", "ask", "--help"], check=prints("question")),
    Command(["benchmark.qa", "--help"], check=prints("--questions", "--calibrate")),
    Command(["benchmark.chaos", "--help"], check=prints("--meetings", "--kill-at")),
    Command(["benchmark.fairness", "--help"], check=prints("--long-chars")),
    Command(["benchmark.garbles", "--help"], check=prints("--out")),
    Command(["benchmark.garble_match", "--help"], check=prints("--tune")),
    Command(["benchmark.answer_judge", "--help"], check=prints("--fit")),
    Command(["delegate.train", "turn-taking", "--help"], check=prints("--out")),
]


def scripted_llm(prompt: str) -> str:
    """The scripted model: answers the judge's prompts in their schema, and speaks on every engage prompt."""
    if '{"verdicts"' in prompt:
        return json.dumps({"verdicts": [{"index": 0, "covered": True}]})
    if '"points"' in prompt:
        return json.dumps({"points": [{"point": "the reply", "attribution": "context", "expected_index": None}]})
    if '"actions"' in prompt:
        return json.dumps({"actions": []})
    return json.dumps({"thoughts": "a scripted delegate", "speak": SCRIPTED_SPEECH})


def load_fake_openai() -> ModuleType:
    import testkit.fake_openai  # the installed package's, as a user running the LLM paths offline would

    return testkit.fake_openai


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> Result:
    bin_dir = Path(sys.executable).parent
    full = [str(bin_dir / "delegate"), *argv[1:]] if argv[0] == "delegate" else [sys.executable, "-m", *argv]
    done = subprocess.run(full, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def missing_extra_failure(result: Result, needs: frozenset[str]) -> str | None:
    """None when the command stopped the way it must without its extra: exit 1, one line naming it."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    named = any(f"pip install '{DISTRIBUTION}[{extra}]'" in result.stderr for extra in needs)
    if result.code == 1 and len(lines) == 1 and named and "Traceback" not in result.stdout:
        return None
    return f"expected one line naming the {'/'.join(sorted(needs))} extra, got exit {result.code}: {result.stderr[-800:]}"


def check_commands(extras: frozenset[str], cwd: Path, env: dict[str, str], llm: Any) -> list[str]:
    failures: list[str] = []
    for command in COMMANDS:
        started = time.monotonic()
        command_env = dict(env)
        if command.llm and llm is not None:
            llm.reset()
            command_env |= {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "smoke", "DELEGATE_LLM_MODEL": "scripted"}
        result = run(command.argv, cwd, command_env)
        if not command.needs <= extras:
            problem = missing_extra_failure(result, command.needs - extras)
        elif result.code != 0:
            problem = f"exit {result.code}: {result.stderr[-1500:] or result.stdout[-1500:]}"
        else:
            problem = command.check(result, cwd) if command.check else None
            if problem is None and command.llm and not llm.prompts:
                problem = "the scripted LLM server was never asked"
        report(command.label, problem, started, failures)
    return failures


def report(label: str, problem: str | None, started: float, failures: list[str]) -> None:
    took = f"{time.monotonic() - started:5.1f} s"
    print(f"{'ok  ' if problem is None else 'FAIL'} {took}  {label}" + (f"\n     {problem}" if problem else ""), flush=True)
    if problem is not None:
        failures.append(f"{label}: {problem}")


def check_installed_copy() -> str | None:
    """The packages must come from the environment, not from the checkout."""
    import benchmark
    import delegate

    for package in (delegate, benchmark):
        where = Path(package.__file__ or "").resolve()
        if REPO in where.parents or not where.is_relative_to(Path(sys.prefix).resolve()):
            return f"{package.__name__} imported from {where}, not from the installed wheel"
    return None


def check_wheel(wheel: Path) -> str | None:
    """Every tracked file of the packages' folders is in the wheel: a new data file cannot be left out."""
    tracked = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "delegate", "benchmark", *MAPPED],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = []
    for path in tracked:
        if path in NOT_SHIPPED or (REPO / path).is_symlink():
            continue
        top, _, rest = path.partition("/")
        if (MAPPED.get(top, top) + "/" + rest) not in names:
            missing.append(path)
    return f"tracked files missing from {wheel.name}: {missing}" if missing else None


def check_version(cwd: Path, env: dict[str, str]) -> str | None:
    result = run(["delegate", "--version"], cwd, env)
    expected = f"{DISTRIBUTION} {metadata.version(DISTRIBUTION)}"
    return None if result.stdout.strip() == expected else f"printed {result.stdout!r}, expected {expected!r}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pcm_chunks(path: Path, ms: int = 100) -> list[bytes]:
    with wave.open(str(path)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2), path
        frames = w.readframes(w.getnframes())
    step = 16000 * ms // 1000 * 2
    return [frames[i : i + step] for i in range(0, len(frames), step)]


async def meeting_over_websocket(port: int, audio: bool, voice: bool) -> str | None:
    """One meeting: typed utterances get decisions (spoken too, with the voice extra); audio is transcribed,
    or refused naming its extra."""
    from websockets.asyncio.client import connect

    principal = json.loads(PRINCIPAL.read_text())
    speech_bytes = 0
    async with connect(f"ws://127.0.0.1:{port}/v1/meetings/smoke-1/stream") as ws:

        async def until(kind: str, timeout: float = 120) -> dict[str, Any]:
            nonlocal speech_bytes
            while True:
                raw = await asyncio.wait_for(ws.recv(), timeout)
                if isinstance(raw, bytes):  # the delegate's voice
                    speech_bytes += len(raw)
                    continue
                frame = json.loads(raw)
                if frame["type"] == kind or frame["type"] == "error":
                    return frame

        await ws.send(json.dumps({"type": "join", "principal": principal, "attendees": ["Host"]}))
        await until("ack")
        lines = ["Morning all, let's begin.", "Sirui, how is the data collection going?"]
        decisions = []
        for i, text in enumerate(lines):
            await ws.send(json.dumps({"type": "utterance", "id": i, "speaker": "Host", "text": text}))
            decisions.append((await until("decision"))["decision"])
        if decisions[0]["speak"] or "two hundred recordings" not in decisions[1]["speak"]:
            return f"unexpected decisions {decisions}"
        if voice:
            end = await until("speech_end")
            if end["type"] != "speech_end" or abs(speech_bytes / 2 / 22050 * 1000 - end["duration_ms"]) > 1:
                return f"the spoken reply: {end}, {speech_bytes} bytes of PCM"

        await ws.send(json.dumps({"type": "audio_start", "sample_rate": 16000}))
        answer = await until("ack")
        if not audio:
            if answer["type"] != "error" or f"{DISTRIBUTION}[audio]" not in answer["detail"]:
                return f"audio_start without the audio extra answered {answer}"
        else:
            if answer["type"] != "ack":
                return f"audio_start answered {answer}"
            for chunk in pcm_chunks(WAV):
                await ws.send(chunk)
            await ws.send(json.dumps({"type": "audio_end"}))
            heard: list[str] = []
            scenarios: list[str] = []
            ended = False
            last_final: int | None = None
            decided: set[int] = set()
            # The last final may come with the audio_end flush, its decision after the ack: wait for both.
            while not ended or (last_final is not None and last_final not in decided):
                raw = await asyncio.wait_for(ws.recv(), 120)
                if isinstance(raw, bytes):
                    continue
                frame = json.loads(raw)
                if frame["type"] == "transcript" and frame["utterance"]["final"]:
                    heard.append(frame["utterance"]["text"])
                    last_final = frame["utterance"]["id"]
                elif frame["type"] == "decision":
                    scenarios.append(frame["decision"]["scenario"])
                    decided.add(frame["decision"]["utterance_id"])
                elif frame["type"] == "ack" and frame["of"] == "audio_end":
                    ended = True
                elif frame["type"] == "error":
                    return f"audio stream error {frame}"
            # The recording names Sirui in its last turn; what to say was already said above, so only
            # the cue is checked here.
            if not any("Sirui" in text for text in heard) or scenarios[-1:] != ["explicit_cue"]:
                return f"audio: heard {heard}, decided {scenarios}"
        await ws.send(json.dumps({"type": "leave"}))
        await until("ack")
    return None


def check_service(extras: frozenset[str], cwd: Path, env: dict[str, str]) -> str | None:
    """`delegate serve` on loopback: /healthz with the version, the console's page, one meeting over the
    WebSocket, then `delegate audit`."""
    import httpx

    port, db = free_port(), cwd / f"audit-{'-'.join(sorted(extras)) or 'base'}.sqlite"
    server_env = env | {"DELEGATE_DB_PATH": str(db)}
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "delegate"), "serve", "--port", str(port)],
        cwd=cwd, env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline, health = time.monotonic() + 120, None
        while health is None:
            if server.poll() is not None or time.monotonic() > deadline:
                return f"the server did not come up: {server.stderr.read()[-1500:] if server.stderr else ''}"
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()
            except httpx.HTTPError:
                time.sleep(0.5)
        if health.get("status") != "ok" or health.get("version") != metadata.version(DISTRIBUTION):
            return f"/healthz answered {health}"
        for path, text in [("/", "console.js"), ("/static/console/console.js", "text/event-stream")]:
            page = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
            if page.status_code != 200 or text not in page.text:
                return f"the console: GET {path} answered {page.status_code}, without {text!r}"
        problem = asyncio.run(meeting_over_websocket(port, audio="audio" in extras, voice="voice" in extras))
        if problem:
            return problem
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    audit = run(["delegate", "audit", "smoke-1", "--db", str(db)], cwd, env)
    if audit.code != 0 or "how is the data collection going" not in audit.stdout or "two hundred" not in audit.stdout:
        return f"delegate audit: exit {audit.code}, {audit.stdout[-800:]}{audit.stderr[-800:]}"
    return None


def installed_extras() -> frozenset[str]:
    """The extras whose requirements are all installed in this environment."""
    from packaging.requirements import Requirement

    extras = set(metadata.metadata(DISTRIBUTION).get_all("Provides-Extra") or [])
    requirements = [Requirement(r) for r in metadata.requires(DISTRIBUTION) or []]

    def installed(name: str) -> bool:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return False
        return True

    return frozenset(
        extra
        for extra in extras
        if all(
            installed(r.name)
            for r in requirements
            if r.marker is not None and r.marker.evaluate({"extra": extra})
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="The wheel that was installed, to check what it holds.")
    args = parser.parse_args()
    extras = installed_extras()
    cwd = Path.cwd()
    if REPO in [cwd, *cwd.parents]:
        print(f"run this from outside the checkout, not {cwd}", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DELEGATE_", "PYTHON"))}
    env["MPLBACKEND"] = "Agg"
    installed = f"{DISTRIBUTION} {metadata.version(DISTRIBUTION)}"
    print(f"smoke test of {installed}, extras: {', '.join(sorted(extras)) or 'none'}, in {cwd}", flush=True)

    failures: list[str] = []
    checks: list[tuple[str, Callable[[], str | None]]] = [
        ("packages imported from the installed wheel", check_installed_copy),
        ("delegate --version", lambda: check_version(cwd, env)),
    ]
    if args.wheel:
        checks.append(("every tracked data file is in the wheel", lambda: check_wheel(args.wheel)))
    for label, check in checks:
        started = time.monotonic()
        report(label, check(), started, failures)

    llm = None
    if "llm" in extras:
        llm = load_fake_openai().ScriptedOpenAI(scripted_llm).start()
    try:
        failures += check_commands(extras, cwd, env, llm)
    finally:
        if llm is not None:
            llm.stop()
    started = time.monotonic()
    report("delegate serve: /healthz, the console, one meeting over the WebSocket, then delegate audit", check_service(extras, cwd, env), started, failures)

    print(f"smoke: {len(COMMANDS) + len(checks) + 1 - len(failures)} passed, {len(failures)} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
