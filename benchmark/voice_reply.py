"""`python -m benchmark.voice_reply`: voice to voice. From the end of a spoken cue in the audio a meeting bot
streams, to the first byte of the delegate's spoken reply.

Each meeting (principal: audio_fixtures/principal_sirui.json) opens an audio stream and sends, in real time
(100 ms chunks on an absolute schedule), 0.5 s of silence, the espeak-ng cue "Sirui, could you give us an
update on the data collection?" (from audio_fixtures/name_cue.wav) and silence after it. `voice_to_voice_s`
is the time from the moment the cue's last spoken sample was due (its reference end time) to the arrival of
the reply's first binary PCM frame: the end-of-turn silence the recogniser waits for, recognition, the
decision, the first sentence's synthesis, and the network. `--meetings` meetings run at once, `--rounds`
times over (a delegate does not say the same thing twice in a meeting, so each round is a fresh meeting).

The server runs in a subprocess with its voice on (or at `--url`, loopback only). `run_voice_reply` is the
measurement, for other benchmarks to call.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from pathlib import Path

import typer
from pydantic import BaseModel
from websockets.asyncio.client import connect

from benchmark.asr import AUDIO_FIXTURES
from benchmark.load import local_server
from delegate.extras import run_cli

SAMPLE_RATE = 16_000
CHUNK = SAMPLE_RATE // 10 * 2
CUE_CLIP = "name_cue"
CUE_FROM_S = 5.0
"""The cue starts at 5.305 s in the clip; the clip is cut just before it."""
LEAD_S = 0.5
TIMEOUT_S = 30.0


class VoiceReplyReport(BaseModel):
    meetings: int
    rounds: int
    replies: int
    missed: int
    """Cues that got no spoken reply within the timeout."""
    voice_to_voice_p50_s: float | None
    voice_to_voice_p95_s: float | None
    voice_to_voice_max_s: float | None
    load_average: tuple[float, float, float]


def _cue() -> tuple[bytes, float]:
    """The cue's PCM (with silence before and after) and when its speech ends, in seconds from the start."""
    from delegate.asr import read_audio

    refs = json.loads((AUDIO_FIXTURES / "references.json").read_text())
    end = refs["clips"][CUE_CLIP]["segments"][-1]["end"] - CUE_FROM_S + LEAD_S
    pcm = read_audio(AUDIO_FIXTURES / refs["clips"][CUE_CLIP]["file"])
    return bytes(int(LEAD_S * SAMPLE_RATE) * 2) + pcm[int(CUE_FROM_S * SAMPLE_RATE) * 2 :], end


async def _one(url: str, token: str, pcm: bytes, cue_end: float) -> float | None:
    ws_url = url.replace("http", "ws", 1) + f"/v1/meetings/v2v-{uuid.uuid4().hex[:10]}/stream"
    principal = json.loads((AUDIO_FIXTURES / "principal_sirui.json").read_text())
    async with connect(ws_url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None) as ws:
        await ws.send(json.dumps({"type": "join", "principal": principal, "attendees": ["Peter"]}))
        await ws.send(json.dumps({"type": "audio_start", "sample_rate": SAMPLE_RATE, "speaker": "Peter"}))
        first: asyncio.Future[float] = asyncio.get_running_loop().create_future()

        async def receive() -> None:
            async for frame in ws:
                if isinstance(frame, bytes) and not first.done():
                    first.set_result(time.monotonic())

        receiver = asyncio.create_task(receive())
        start = time.monotonic()
        silence = bytes(CHUNK)
        i = 0
        try:
            while not first.done() and time.monotonic() - start < cue_end + TIMEOUT_S:
                chunk = pcm[i * CHUNK : (i + 1) * CHUNK] or silence  # silence after the cue, as in a meeting
                await ws.send(chunk)
                i += 1
                await asyncio.sleep(max(0.0, start + i * 0.1 - time.monotonic()))
            if not first.done():
                return None
            return first.result() - (start + cue_end)
        finally:
            receiver.cancel()
            await ws.send(json.dumps({"type": "leave"}))


async def run_voice_reply(url: str, token: str, meetings: int, rounds: int) -> VoiceReplyReport:
    import numpy as np

    pcm, cue_end = _cue()
    latencies: list[float] = []
    missed = 0
    for _ in range(rounds):
        results = await asyncio.gather(*(_one(url, token, pcm, cue_end) for _ in range(meetings)))
        latencies += [r for r in results if r is not None]
        missed += sum(r is None for r in results)
    a = np.array(latencies) if latencies else None
    return VoiceReplyReport(
        meetings=meetings,
        rounds=rounds,
        replies=len(latencies),
        missed=missed,
        voice_to_voice_p50_s=None if a is None else round(float(np.percentile(a, 50)), 3),
        voice_to_voice_p95_s=None if a is None else round(float(np.percentile(a, 95)), 3),
        voice_to_voice_max_s=None if a is None else round(float(a.max()), 3),
        load_average=os.getloadavg(),
    )


def main(
    meetings: int = typer.Option(1, "--meetings", min=1, help="Meetings at once."),
    rounds: int = typer.Option(10, "--rounds", min=1, help="How many times over (fresh meetings each time)."),
    url: str = typer.Option(None, "--url", help="A running server with its voice on (loopback), e.g. http://127.0.0.1:8000."),
    token: str = typer.Option("", "--token", help="Bearer token for --url."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures here as JSON."),
) -> None:
    """Voice to voice: end of a spoken cue to the first byte of the spoken reply, over a loopback server."""
    if url:
        report = asyncio.run(run_voice_reply(url, token, meetings, rounds))
    else:
        with local_server("local", voice=True) as (server_url, server_token):
            asyncio.run(run_voice_reply(server_url, server_token, 1, 1))  # warm-up: models loaded, first decodes paid
            report = asyncio.run(run_voice_reply(server_url, server_token, meetings, rounds))
    typer.echo(
        f"voice_to_voice_s p50 {report.voice_to_voice_p50_s} p95 {report.voice_to_voice_p95_s} "
        f"max {report.voice_to_voice_max_s} ({report.replies} replies, {report.missed} missed; "
        f"{meetings} meeting(s) at once x {rounds}; load average {' '.join(f'{x:.2f}' for x in report.load_average)})"
    )
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(report.model_dump_json(indent=2), encoding="utf-8")


def cli() -> None:
    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    app.command()(main)
    app()


if __name__ == "__main__":
    run_cli(cli)
