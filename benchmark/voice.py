"""`python -m benchmark.voice`: N meetings stream speech in real time to one loopback server; how late is what they hear?

Each client joins a meeting (principal: audio_fixtures/principal_sirui.json), opens an audio stream and
sends the fixture clips back to back as 16 kHz PCM in 100 ms chunks, each chunk when it has been spoken
(real time, on an absolute schedule so a busy client does not drift). Clients start spread over
`--stagger` seconds and each begins with a different clip, as meetings do not speak in step.

Measured by the clients against the clips' references (turn start and end times):
- final_latency_s: end of a turn's speech (the moment its last sample was due) to the arrival of its
  final `transcript` frame;
- finals_lost: turns that got no final transcript (by the end of the stream plus a grace period);
- voice_to_voice_s (the server speaking, the default): end of a cue's speech to the first byte of the
  reply's audio, over the cue clips (`cue_named` names the principal, `cue_implicit` asks without a name),
  overall and per kind; `replies_missed`: cues whose reply never started. Each cue clip is followed by
  `REPLY_ROOM_S` of silence, room for the reply before the next clip speaks over it;
- streams_refused: `audio_start` answered by `asr_busy`; a refused client then sends one typed
  utterance and counts whether it got its decision (`refused_text_ok`);
and from the server's /metrics: partials shed, CPU and peak RSS. The machine's load average and the CPU
used by other processes are reported beside the figures, since they make every latency longer.

The server runs in a subprocess (or at `--url`, which must be loopback) with its own audit database.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
import typer
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedError

from benchmark.asr import AUDIO_FIXTURES, Clip, load_clips
from benchmark.load import local_server
from benchmark.typer_call import call
from delegate.extras import run_cli
from delegate.server.auth import is_loopback

SAMPLE_RATE = 16_000
CHUNK_S = 0.1
GRACE_S = 15.0
"""How long a client waits, after its last chunk, for the finals still due."""
PRINCIPAL = AUDIO_FIXTURES / "principal_sirui.json"
CUES = {"cue_named": "named", "cue_implicit": "implicit"}
"""Clips whose last turn is a cue the principal's delegate answers aloud, and the kind of cue."""
REPLY_ROOM_S = 6.0
"""Silence streamed after a cue clip: about as long as the spoken reply (which speech would cut)."""
DEFAULT_CLIPS = "standup,cue_named,planning,cue_implicit"


class Percentiles(BaseModel):
    n: int
    p50: float | None
    p95: float | None
    max: float | None

    @classmethod
    def of(cls, values: list[float]) -> Percentiles:
        if not values:
            return cls(n=0, p50=None, p95=None, max=None)
        a = np.array(values)
        return cls(
            n=len(values),
            p50=round(float(np.percentile(a, 50)), 3),
            p95=round(float(np.percentile(a, 95)), 3),
            max=round(float(a.max()), 3),
        )


class VoiceReport(BaseModel):
    meetings: int
    clips: list[str]
    audio_s: float
    """Audio each client streams."""
    stagger_s: float
    asr_max_streams: int | None
    """The server's capacity, from its /metrics."""
    final_latency_s: Percentiles
    voice_to_voice_s: Percentiles | None = None
    """End of a cue's speech to the first byte of the reply's audio (None when the server does not speak)."""
    voice_to_voice_named_s: Percentiles | None = None
    voice_to_voice_implicit_s: Percentiles | None = None
    cues: int = 0
    """Cue turns streamed to meetings that were heard."""
    replies_missed: int | None = None
    """Cues whose spoken reply never started."""
    turns: int
    finals: int
    finals_lost: int
    partials: int
    """Partial transcripts received."""
    partials_shed: int
    streams_refused: int
    refused_text_ok: int
    """Refused meetings whose typed utterance still got its decision."""
    queue_wait_final_s_mean: float | None
    server_cpu_pct: float | None
    """Server process CPU over the run, in percent of one core."""
    server_rss_mb: float | None
    """Peak resident memory of the server process."""
    load_avg: list[float]
    """1-minute load average at the start and at the end of the run (the server and clients included)."""
    other_cpu_pct: float | None
    """CPU used by processes other than the server and this benchmark, in percent of one core."""
    cores: int
    duration_s: float
    errors: dict[str, int]


@dataclass(frozen=True)
class Turn:
    """A reference turn in the client's stream time (its clips back to back)."""

    clip: str
    text: str
    start: float
    end: float
    cue: str | None = None
    """For a cue the delegate should answer aloud: its kind (`CUES`)."""


@dataclass
class ClientRun:
    """What one client sent and received, with wall-clock times: what the measurements read."""

    meeting_id: str
    turns: list[Turn]
    t0: float = 0.0
    """Wall clock of stream time 0: the sample at stream time t was due at t0 + t."""
    refused: bool = False
    refused_text_ok: bool = False
    frames: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    audio_frames: list[tuple[float, int]] = field(default_factory=list)
    """Binary frames received (arrival time, bytes): the server's speech."""
    errors: list[str] = field(default_factory=list)


# --- measurements: each reads the clients' runs ----------------------------------------------------


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def _finals(run: ClientRun) -> list[tuple[int, float, int]]:
    """(turn index, arrival, utterance id) of each final transcript, given to the turn it overlaps most."""
    out = []
    for t, frame in run.frames:
        if frame.get("type") != "transcript" or not frame["utterance"].get("final"):
            continue
        u = frame["utterance"]
        overlaps = [_overlap(u["start"], u["end"], turn.start, turn.end) for turn in run.turns]
        if overlaps and max(overlaps) > 0:
            out.append((int(np.argmax(overlaps)), t, u["id"]))
    return out


def final_arrivals(run: ClientRun) -> dict[int, float]:
    """Turn index -> arrival of its last final transcript."""
    arrivals: dict[int, float] = {}
    for k, t, _ in _finals(run):
        arrivals[k] = max(arrivals.get(k, t), t)
    return arrivals


def final_latencies(runs: list[ClientRun]) -> list[float]:
    out = []
    for run in runs:
        for k, arrived in final_arrivals(run).items():
            out.append(arrived - (run.t0 + run.turns[k].end))
    return out


def reply_starts(run: ClientRun) -> dict[int, float | None]:
    """Cue turn index -> arrival of the first byte of the spoken reply to it (None: no reply started).

    The reply is the `speech_start` for an utterance transcribed from the cue; its audio is the binary
    frames that follow it."""
    ids: dict[int, int] = {}
    for k, _, uid in _finals(run):
        if run.turns[k].cue:
            ids[uid] = k
    starts: dict[int, float | None] = {k: None for k, turn in enumerate(run.turns) if turn.cue}
    for t, frame in run.frames:
        k = ids.get(frame.get("utterance_id", -1)) if frame["type"] == "speech_start" else None
        if k is not None and starts[k] is None:
            starts[k] = next((at for at, _ in run.audio_frames if at >= t), None)
    return starts


def voice_to_voice(runs: list[ClientRun], kind: str | None = None) -> list[float]:
    """End of a cue's speech to the first byte of its reply, over the cues of `kind` (all with None)."""
    out = []
    for run in runs:
        for k, first in reply_starts(run).items():
            if first is not None and kind in (None, run.turns[k].cue):
                out.append(first - (run.t0 + run.turns[k].end))
    return out


MEASURES: dict[str, Callable[[list[ClientRun]], list[float]]] = {"final_latency_s": final_latencies}
"""Latency measurements over the clients' runs (those not refused), by the report field they fill."""
VOICE_MEASURES: dict[str, Callable[[list[ClientRun]], list[float]]] = {
    "voice_to_voice_s": voice_to_voice,
    **{f"voice_to_voice_{kind}_s": partial(voice_to_voice, kind=kind) for kind in CUES.values()},
}
"""The same, measured when the server speaks."""


# --- clients ---------------------------------------------------------------------------------------


def _auth(token: str) -> dict[str, str]:
    """The bearer header; none for a server without tokens (an empty `Bearer ` is not a valid header)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def _stream(clips: list[Clip], first: int, voice: bool) -> tuple[bytes, list[Turn]]:
    """The clips back to back, starting with clip `first`: the PCM and its turns in stream time.

    With `voice`, the last turn of a cue clip is a cue, and silence follows the clip (`REPLY_ROOM_S`)."""
    from delegate.asr.whisper import read_audio

    pcm = b""
    turns: list[Turn] = []
    for clip in clips[first:] + clips[:first]:
        offset = len(pcm) / 2 / SAMPLE_RATE
        turns += [Turn(clip.name, s.text, offset + s.start, offset + s.end) for s in clip.segments]
        pcm += read_audio(clip.path)
        if voice and clip.name in CUES:
            turns[-1] = Turn(clip.name, turns[-1].text, turns[-1].start, turns[-1].end, CUES[clip.name])
            pcm += bytes(int(REPLY_ROOM_S * SAMPLE_RATE) * 2)
    return pcm, turns


async def _receive(ws: ClientConnection, run: ClientRun) -> None:
    try:
        async for raw in ws:
            now = time.perf_counter()
            if isinstance(raw, bytes):
                run.audio_frames.append((now, len(raw)))
                continue
            frame = json.loads(raw)
            run.frames.append((now, frame))
            if frame["type"] == "error":
                run.errors.append(frame["code"])
    except ConnectionClosedError as e:  # e.g. a server too busy to answer pings: counted, not raised
        run.errors.append(f"closed:{e.rcvd.code if e.rcvd else e.sent.code if e.sent else 'none'}")


async def _next(ws: ClientConnection, kind: str, timeout: float = 60) -> dict[str, Any]:
    """The next frame that is an ack of `kind` or an error (other frames are skipped)."""
    async with asyncio.timeout(timeout):
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "error" or (frame["type"] == "ack" and frame.get("of") == kind):
                return frame


async def _open(ws: ClientConnection, run: ClientRun, attendees: list[str]) -> None:
    principal = json.loads(PRINCIPAL.read_text())
    await ws.send(json.dumps({"type": "join", "principal": principal, "attendees": attendees}))
    ack = await _next(ws, "join")
    if ack["type"] != "ack":
        raise RuntimeError(f"join refused: {ack}")
    await ws.send(json.dumps({"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"}))
    ack = await _next(ws, "audio_start")
    if ack["type"] == "error":
        if ack["code"] != "asr_busy":
            raise RuntimeError(f"audio_start refused: {ack}")
        run.refused = True
        run.errors.append("asr_busy")


async def _typed_after_refusal(ws: ClientConnection, run: ClientRun) -> None:
    await ws.send(json.dumps({"type": "utterance", "id": 0, "speaker": "Peter", "text": "Sirui, any news?"}))
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(30):
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "decision":
                    run.refused_text_ok = True
                    return


class _Gate:
    """Every client has its answer to `audio_start` (or failed) before any starts streaming."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._in: set[str] = set()
        self.all_in = asyncio.Event()
        self.start: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    def arrive(self, client: str) -> None:
        self._in.add(client)
        if len(self._in) >= self._n:
            self.all_in.set()


async def _client(
    url: str, token: str, run: ClientRun, pcm: bytes, attendees: list[str], gate: _Gate, delay: float
) -> ClientRun:
    ws_url = url.replace("http", "ws", 1).rstrip("/") + f"/v1/meetings/{run.meeting_id}/stream"
    step = int(SAMPLE_RATE * CHUNK_S) * 2
    try:
        async with connect(
            ws_url, additional_headers=_auth(token), open_timeout=30, max_size=None
        ) as ws:
            try:
                await _open(ws, run, attendees)
            finally:
                gate.arrive(run.meeting_id)
            if run.refused:
                await _typed_after_refusal(ws, run)
                return run
            receiver = asyncio.create_task(_receive(ws, run))
            run.t0 = await gate.start + delay
            for k, offset in enumerate(range(0, len(pcm), step)):
                # Chunk k holds stream time [0.1 k, 0.1 (k + 1)): it can be sent once its end was spoken.
                await asyncio.sleep(max(0.0, run.t0 + (k + 1) * CHUNK_S - time.perf_counter()))
                await ws.send(pcm[offset : offset + step])
            deadline = time.perf_counter() + GRACE_S
            while len(final_arrivals(run)) < len(run.turns) and time.perf_counter() < deadline:
                await asyncio.sleep(0.05)
            await ws.send(json.dumps({"type": "audio_end"}))
            await ws.send(json.dumps({"type": "leave", "reason": "benchmark over"}))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(receiver, 15)
            receiver.cancel()
    except (OSError, TimeoutError) as e:
        run.errors.append(f"connection:{type(e).__name__}")
    except Exception as e:  # a closed connection or a bad frame: count it, keep the others going
        run.errors.append(f"client:{type(e).__name__}")
    finally:
        gate.arrive(run.meeting_id)  # one that failed before its answer must not hold the others
    return run


async def _warm_up(url: str, token: str, clip: Clip, voice: bool) -> None:
    """One short stream first, so that the models' loading and first decodes (and synthesis) are not measured."""
    from delegate.asr.whisper import read_audio

    pcm = read_audio(clip.path)[: int(SAMPLE_RATE * (clip.segments[0].end + 1.0)) * 2]
    ws_url = url.replace("http", "ws", 1).rstrip("/") + f"/v1/meetings/warmup-{secrets.token_hex(4)}/stream"
    async with connect(ws_url, additional_headers=_auth(token), open_timeout=30) as ws:
        run = ClientRun("warmup", [])
        await _open(ws, run, [])
        if run.refused:
            return
        for offset in range(0, len(pcm), 3200):
            await ws.send(pcm[offset : offset + 3200])
        await ws.send(json.dumps({"type": "audio_end"}))
        spoke = heard = False  # a decision to speak; its audio
        async with asyncio.timeout(120):
            while True:
                frame = await ws.recv()
                if isinstance(frame, bytes):
                    heard = True
                    continue
                message = json.loads(frame)
                spoke = spoke or (message["type"] == "decision" and bool(message["decision"].get("speak")))
                if message["type"] == "error" or (message["type"] == "ack" and message.get("of") == "audio_end"):
                    break
        if voice and spoke and not heard:  # the reply spoken once (given up on after a minute)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(60):
                    while not isinstance(await ws.recv(), bytes):
                        pass
        await ws.send(json.dumps({"type": "leave", "reason": "warm-up over"}))


# --- server figures --------------------------------------------------------------------------------


async def _scrape(http: httpx.AsyncClient) -> dict[str, float]:
    """Sample values of the server's /metrics by name (labels joined in), e.g. `process_cpu_seconds_total`."""
    values: dict[str, float] = {}
    with contextlib.suppress(httpx.HTTPError):
        text = (await http.get("/metrics")).text
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                values[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return values


def _cpu_busy() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat (Linux)."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return (sum(fields) - idle) / tick, sum(fields) / tick


async def run_voice(
    url: str, token: str, clips: list[Clip], meetings: int, stagger: float, voice: bool = False
) -> VoiceReport:
    """`voice`: the server speaks (its voice on), so the cue clips' replies are measured."""
    run_id = secrets.token_hex(4)
    attendees = sorted({a for c in clips for a in c.attendees if a != "Sirui Zhao"})
    streams = [_stream(clips, k % len(clips), voice) for k in range(meetings)]
    runs = [ClientRun(f"voice-{run_id}-{k}", turns) for k, (_, turns) in enumerate(streams)]
    async with httpx.AsyncClient(base_url=url, headers=_auth(token), timeout=10) as http:
        cues = [c for c in clips if c.name in CUES]
        await _warm_up(url, token, cues[0] if voice and cues else clips[0], voice and bool(cues))
        before = await _scrape(http)
        machine0, own0, load0 = _cpu_busy(), time.process_time(), os.getloadavg()[0]
        wall0 = time.perf_counter()
        rss: list[float] = []

        async def sample() -> None:
            while True:
                rss.append((await _scrape(http)).get("process_resident_memory_bytes", 0.0))
                await asyncio.sleep(1.0)

        sampler = asyncio.create_task(sample())
        gate = _Gate(meetings)
        tasks = [
            asyncio.create_task(_client(url, token, run, pcm, attendees, gate, k * stagger / meetings))
            for k, (run, (pcm, _)) in enumerate(zip(runs, streams, strict=True))
        ]
        await gate.all_in.wait()
        gate.start.set_result(time.perf_counter() + 0.5)
        audio_s = max(len(pcm) for pcm, _ in streams) / 2 / SAMPLE_RATE
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=audio_s + stagger + GRACE_S + 120)
        elapsed = time.perf_counter() - wall0
        sampler.cancel()
        after = await _scrape(http)
        machine1, own1, load1 = _cpu_busy(), time.process_time(), os.getloadavg()[0]

    def delta(name: str) -> float | None:
        if name not in after:
            return None
        return after[name] - before.get(name, 0.0)

    server_cpu = delta("process_cpu_seconds_total")
    other = None
    if machine0 and machine1 and server_cpu is not None:
        other = max(0.0, (machine1[0] - machine0[0]) - server_cpu - (own1 - own0))
    waits, count = delta("delegate_asr_queue_wait_seconds_sum{kind=final}"), delta(
        "delegate_asr_queue_wait_seconds_count{kind=final}"
    )
    codes: dict[str, int] = {}
    for run in runs:
        for code in run.errors:
            codes[code] = codes.get(code, 0) + 1
    heard = [run for run in runs if not run.refused]
    turns = sum(len(run.turns) for run in heard)
    found = sum(len(final_arrivals(run)) for run in heard)
    capacity = after.get("delegate_asr_capacity")
    return VoiceReport(
        meetings=meetings,
        clips=[c.name for c in clips],
        audio_s=round(audio_s, 2),
        stagger_s=stagger,
        asr_max_streams=None if capacity is None else int(capacity),
        **{name: Percentiles.of(measure(heard)) for name, measure in MEASURES.items()},
        **({name: Percentiles.of(measure(heard)) for name, measure in VOICE_MEASURES.items()} if voice else {}),
        cues=sum(1 for run in heard for turn in run.turns if turn.cue),
        replies_missed=sum(1 for run in heard for first in reply_starts(run).values() if first is None)
        if voice
        else None,
        turns=turns,
        finals=sum(1 for run in heard for _, f in run.frames if f["type"] == "transcript" and f["utterance"]["final"]),
        finals_lost=turns - found,
        partials=sum(
            1 for run in heard for _, f in run.frames if f["type"] == "transcript" and not f["utterance"]["final"]
        ),
        partials_shed=int(delta("delegate_asr_partials_shed_total") or 0),
        streams_refused=sum(run.refused for run in runs),
        refused_text_ok=sum(run.refused_text_ok for run in runs),
        queue_wait_final_s_mean=round(waits / count, 3) if waits is not None and count else None,
        server_cpu_pct=None if server_cpu is None else round(100 * server_cpu / elapsed, 1),
        server_rss_mb=round(max(rss) / 2**20, 1) if rss and max(rss) else None,
        load_avg=[round(load0, 2), round(load1, 2)],
        other_cpu_pct=None if other is None else round(100 * other / elapsed, 1),
        cores=os.cpu_count() or 1,
        duration_s=round(elapsed, 1),
        errors={k: v for k, v in codes.items() if k != "asr_busy"},
    )


def _print(r: VoiceReport) -> None:
    def s(p: Percentiles) -> str:
        if not p.n:
            return "-"
        return f"p50 {p.p50:.2f} s  p95 {p.p95:.2f} s  max {p.max:.2f} s  (n={p.n})"

    print(f"meetings {r.meetings} streaming {'+'.join(r.clips)} ({r.audio_s:.0f} s each) in real time, "
          f"starts spread over {r.stagger_s:g} s; server capacity {r.asr_max_streams}")
    print(f"final latency        {s(r.final_latency_s)}")
    if r.voice_to_voice_s is not None:
        print(f"voice to voice       {s(r.voice_to_voice_s)}")
        for kind in CUES.values():
            p = getattr(r, f"voice_to_voice_{kind}_s")
            print(f"  {kind:18} {s(p)}")
        print(f"replies              {r.cues - (r.replies_missed or 0)} to {r.cues} cues, missed {r.replies_missed}")
    print(f"finals               {r.finals} for {r.turns} turns, lost {r.finals_lost}")
    print(f"partials             {r.partials} sent, {r.partials_shed} shed")
    print(f"streams refused      {r.streams_refused} (typed utterance answered in {r.refused_text_ok})")
    wait = "-" if r.queue_wait_final_s_mean is None else f"{r.queue_wait_final_s_mean:.3f} s"
    print(f"final queue wait     mean {wait}")
    cpu = "-" if r.server_cpu_pct is None else f"{r.server_cpu_pct:.0f} % of a core"
    rss = "-" if r.server_rss_mb is None else f"{r.server_rss_mb:.0f} MiB"
    print(f"server               CPU {cpu}, RSS peak {rss}")
    other = "-" if r.other_cpu_pct is None else f"{r.other_cpu_pct:.0f} % of a core"
    print(f"machine              {r.cores} cores, load {r.load_avg[0]:.2f} -> {r.load_avg[1]:.2f}, "
          f"other processes {other}")
    print(f"errors               {sum(r.errors.values())}  {r.errors or ''}".rstrip())


app = typer.Typer(rich_markup_mode=None, add_completion=False, context_settings={"max_content_width": 120})


@app.command(help=__doc__.splitlines()[0])
def _command(
    meetings: int = typer.Option(4, "--meetings", min=1, help="Concurrent meetings streaming audio."),
    clips: str = typer.Option(DEFAULT_CLIPS, "--clips", help="Fixture clips each meeting streams, back to back."),
    voice: bool = typer.Option(
        True, "--voice/--no-voice", help="The server speaks: measure voice to voice over the cue clips."
    ),
    stagger: float = typer.Option(6.0, "--stagger", min=0.0, help="Seconds over which the meetings' starts are spread."),
    max_streams: int = typer.Option(
        None, "--max-streams", min=1, help="DELEGATE_ASR_MAX_STREAMS of the server started (default: its own)."
    ),
    workers: int = typer.Option(
        None, "--workers", min=1, help="DELEGATE_ASR_WORKERS of the server started (default: its own)."
    ),
    url: str = typer.Option(
        None, "--url", help="A running server (loopback only; its voice on unless --no-voice), e.g. http://127.0.0.1:8000."
    ),
    token: str = typer.Option("", "--token", help="Bearer token for --url."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures to this file."),
) -> VoiceReport:
    if url and not is_loopback(urlsplit(url).hostname or ""):
        typer.echo(f"benchmark.voice: --url must be a loopback address, not {url}", err=True)
        raise typer.Exit(2)
    # Here, so that without the audio extra this command says which extra to install before any server runs.
    importlib.import_module("delegate.asr.whisper")
    by_name = {c.name: c for c in load_clips(AUDIO_FIXTURES)}
    names = [n.strip() for n in clips.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        typer.echo(f"benchmark.voice: --clips must name clips among {', '.join(by_name)}", err=True)
        raise typer.Exit(2)
    selected = [by_name[n] for n in names]
    if url:
        report = asyncio.run(run_voice(url, token, selected, meetings, stagger, voice))
    else:
        env = {"DELEGATE_ASR_MAX_STREAMS": str(max_streams)} if max_streams else {}
        if workers:
            env["DELEGATE_ASR_WORKERS"] = str(workers)
        with local_server("local", voice=voice, env=env) as (server, key):
            report = asyncio.run(run_voice(server, key, selected, meetings, stagger, voice))
    _print(report)
    if json_out:
        json_out.write_text(report.model_dump_json(indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> VoiceReport:
    """Run from the command line, or from code with `argv`; exits (SystemExit) on bad options."""
    return call(app, argv)


if __name__ == "__main__":
    run_cli(main)
