"""`python -m benchmark.fairness`: does one client pipelining long utterances slow other meetings down?

A loopback server (subprocess, as `benchmark.load` starts it) serves `--quiet` meetings that each send a
short utterance every `1/--rate` s and time its round trip (sent to decision received). The same run is
made twice: alone, then with one *noisy* meeting that sends `--long-chars`-character utterances back to
back, without waiting, from a process of its own. Prints (and with `--json` writes) the quiet meetings' round-trip percentiles for both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import numpy as np
from websockets.asyncio.client import ClientConnection, connect

from benchmark.load import local_server

PRINCIPAL = {
    "name": "Alice Smith",
    "aliases": ["Alice"],
    "intents": ["Know when the migration lands"],
    "background": [{"context": "if asked about the migration", "information": "The migration ends Friday."}],
}
WORDS = "the migration database server deploy team send report friday review tests numbers plan".split()


async def _open(url: str, token: str, meeting_id: str, **options: object) -> ClientConnection:
    ws = await connect(
        url.replace("http", "ws", 1) + f"/v1/meetings/{meeting_id}/stream",
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=None,
        **options,  # type: ignore[arg-type]
    )
    await ws.send(json.dumps({"type": "join", "principal": PRINCIPAL, "voice": False}))
    await ws.recv()
    return ws


async def _quiet(url: str, token: str, meeting_id: str, rate: float, duration: float) -> list[float]:
    ws = await _open(url, token, meeting_id)
    latencies: list[float] = []
    end = time.perf_counter() + duration
    uid = 0
    while time.perf_counter() < end:
        sent = time.perf_counter()
        await ws.send(json.dumps({"type": "utterance", "id": uid, "speaker": "Bob", "text": "Alice, any news?"}))
        while True:
            frame = json.loads(await ws.recv())
            if frame["type"] == "decision":
                break
        latencies.append((time.perf_counter() - sent) * 1000)
        uid += 1
        await asyncio.sleep(max(0.0, 1 / rate - (time.perf_counter() - sent)))
    await ws.close()
    return latencies


def _noisy_process(url: str, token: str, chars: int, seconds: float, sent: Any) -> None:
    sent.value = asyncio.run(_noisy(url, token, chars, seconds))


async def _noisy(url: str, token: str, chars: int, seconds: float) -> int:
    ws = await _open(url, token, "noisy")
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=chars // 5))[:chars] for _ in range(8)]

    async def drain() -> None:
        with contextlib.suppress(Exception):
            async for _ in ws:
                pass

    reader = asyncio.create_task(drain())
    uid = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        text = texts[uid % len(texts)]
        await ws.send(json.dumps({"type": "utterance", "id": uid, "speaker": "Eve", "text": text}))
        uid += 1
        await asyncio.sleep(0)  # pipelined: no waiting for acks or decisions
        if uid % 4 == 0:
            await asyncio.sleep(0.05)  # keep the socket's buffers from growing without bound
    reader.cancel()
    await ws.close()
    return uid


def _figures(latencies: list[float]) -> dict[str, float]:
    a = np.array(latencies)
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 2),
        "p95_ms": round(float(np.percentile(a, 95)), 2),
        "max_ms": round(float(a.max()), 2),
        "round_trips": len(latencies),
    }


async def _run(url: str, token: str, args: argparse.Namespace, noisy: bool) -> dict[str, float]:
    # The noisy client runs in a process of its own: on the timing clients' loop it would delay them itself.
    sent = multiprocessing.Value("i", 0)
    noise = multiprocessing.Process(
        target=_noisy_process, args=(url, token, args.long_chars, args.duration + 1.0, sent), daemon=True
    )
    if noisy:
        noise.start()
        await asyncio.sleep(0.5)
    runs = await asyncio.gather(
        *(_quiet(url, token, f"quiet-{noisy}-{k}", args.rate, args.duration) for k in range(args.quiet))
    )
    if noisy:
        await asyncio.to_thread(noise.join, 30)
    return _figures([x for run in runs for x in run]) | ({"noisy_utterances": sent.value} if noisy else {})


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    p = argparse.ArgumentParser(prog="python -m benchmark.fairness", description=__doc__)
    p.add_argument("--quiet", type=int, default=5, help="Meetings whose round trips are timed.")
    p.add_argument("--rate", type=float, default=5.0, help="Utterances per second in each quiet meeting.")
    p.add_argument("--duration", type=float, default=15.0, help="Seconds of each run.")
    p.add_argument("--long-chars", type=int, default=19_000, help="Characters of each noisy utterance.")
    p.add_argument("--json", type=Path, help="Write the figures to this file.")
    args = p.parse_args(argv)
    with local_server("local") as (url, token):
        result = {
            "alone": asyncio.run(_run(url, token, args, noisy=False)),
            "with_noisy_neighbour": asyncio.run(_run(url, token, args, noisy=True)),
        }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
