"""`python -m benchmark.console_latency`: how long a decision takes to appear on the principal's console.

One bot streams a fixture meeting's utterances over the WebSocket at R per second while a watcher reads
`GET /v1/meetings/{id}/events` (server-sent events, as the console page does). Latency: the bot sending an
utterance to the watcher receiving that utterance's `decision` event. With `--browser` the console page
itself also watches, in headless Chromium: latency to the moment the page drew the decision beside its
utterance (the page stamps each row; same machine, same clock). The server runs in a subprocess on
loopback with its own audit database (bearer tokens on), as `benchmark.load` starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import numpy as np
import typer
from pydantic import BaseModel
from websockets.asyncio.client import connect

from benchmark.load import local_server, principal_of
from benchmark.scoring.data import BenchMeeting, load
from benchmark.typer_call import call
from delegate.extras import run_cli
from testkit.browser import NO_BROWSER, available, headless_chromium

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

GRACE_S = 5.0


class ConsoleLatencyReport(BaseModel):
    utterances: int
    approval: str
    rate: float
    engine: str
    watcher_p50_ms: float | None
    watcher_p95_ms: float | None
    watcher_p99_ms: float | None
    """Utterance sent by the bot to its `decision` event read by the watcher."""
    bot_p50_ms: float | None
    bot_p95_ms: float | None
    """Utterance sent to the bot's own `decision` frame, for the decisions it got at once (not held)."""
    page_p50_ms: float | None = None
    page_p95_ms: float | None = None
    page_p99_ms: float | None = None
    """Utterance sent by the bot to its decision drawn on the console page (`--browser` only)."""
    page_missing: int | None = None
    decisions_seen: int
    held: int
    """Decisions held for approval (they reach the bot only once settled; here they expire on the next utterance)."""
    missing: int
    """Utterances whose decision the watcher never saw (dropped as stale, or lost)."""
    dropped: int = 0
    """Of those, decisions the server dropped as stale (a newer utterance came first), as its audit log says: by
    design, not lost. `missing - dropped` were lost on the way to the watcher."""


class ConsolePage:
    """The console page open on one meeting in a browser, signed in with the bot's token."""

    def __init__(self, driver: WebDriver) -> None:
        self.driver = driver

    def open(self, url: str, meeting_id: str, token: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver.get(f"{url}/console/{meeting_id}")
        wait = WebDriverWait(self.driver, 30)
        wait.until(lambda d: d.find_element(By.ID, "token-input").is_displayed())
        self.driver.find_element(By.ID, "token-input").send_keys(token + "\n")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#m-conn.live"))

    def shown(self, n: int, deadline: float) -> dict[int, float]:
        """When the page drew each decision (epoch seconds), waiting until all `n` are drawn or `deadline`."""
        read = "return Array.from(document.querySelectorAll('[data-shown-at]'), r => [r.dataset.utteranceId, r.dataset.shownAt])"
        while True:
            rows = {int(uid): int(at) / 1000 for uid, at in self.driver.execute_script(read)}
            if len(rows) >= n or time.perf_counter() >= deadline:
                return rows
            time.sleep(0.1)


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)) * 1000, 2) if values else None


async def _watch(http: httpx.AsyncClient, meeting_id: str, token: str, seen: dict[int, float], held: list[int], live: asyncio.Event) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with http.stream("GET", f"/v1/meetings/{meeting_id}/events", headers=headers) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter()
            event = json.loads(line[len("data: ") :])
            if event["type"] == "live":
                live.set()
            elif event["type"] == "decision":
                uid = event["decision"]["utterance_id"]
                seen.setdefault(uid, now)
                if event["approval"] == "pending":
                    held.append(uid)
            elif event["type"] == "meeting_ended":
                return


async def run(
    url: str, token: str, bench: BenchMeeting, n: int, rate: float, approval: str, engine: str,
    page: ConsolePage | None = None,
) -> ConsoleLatencyReport:
    meeting_id = f"console-latency-{int(time.time() * 1000)}"
    sent: dict[int, float] = {}
    sent_epoch: dict[int, float] = {}
    shown: dict[int, float] = {}
    watcher_seen: dict[int, float] = {}
    bot_seen: dict[int, float] = {}
    held: list[int] = []
    live = asyncio.Event()
    ws_url = url.replace("http", "ws", 1) + f"/v1/meetings/{meeting_id}/stream"
    async with (
        httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30.0, read=None)) as http,
        connect(ws_url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=30) as ws,
    ):
        principal = principal_of(bench, 0)
        await ws.send(json.dumps({
            "type": "join", "principal": principal.model_dump(mode="json"), "attendees": bench.attendees,
            "names": bench.names, "engine": engine, "approval": approval,
        }))
        ack = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if ack.get("type") != "ack":
            raise RuntimeError(f"join refused: {ack}")
        watcher = asyncio.create_task(_watch(http, meeting_id, token, watcher_seen, held, live))
        await asyncio.wait_for(live.wait(), 30)
        if page is not None:
            await asyncio.to_thread(page.open, url, meeting_id, token)

        async def bot() -> None:
            async for raw in ws:
                frame = json.loads(raw)
                if frame["type"] == "decision" and frame["approval"] == "none":
                    bot_seen.setdefault(frame["decision"]["utterance_id"], time.perf_counter())

        reader = asyncio.create_task(bot())
        start = time.perf_counter()
        for i in range(n):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            u = bench.utterances[i % len(bench.utterances)]
            sent[i] = time.perf_counter()
            sent_epoch[i] = time.time()
            await ws.send(json.dumps({"type": "utterance", "id": i, "speaker": u.speaker, "text": u.text}))
        deadline = time.perf_counter() + GRACE_S
        while len(watcher_seen) < n and time.perf_counter() < deadline:
            await asyncio.sleep(0.02)
        if page is not None:
            shown = await asyncio.to_thread(page.shown, n, deadline)
        await ws.send(json.dumps({"type": "leave", "reason": "benchmark over"}))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watcher, 10)
        reader.cancel()
        watcher.cancel()
        audit = await http.get(f"/v1/meetings/{meeting_id}/audit", headers={"Authorization": f"Bearer {token}"})
        dropped = sum(json.loads(line)["kind"] == "decision_dropped" for line in audit.text.splitlines() if line)
    to_watcher = [watcher_seen[i] - t for i, t in sent.items() if i in watcher_seen]
    to_bot = [bot_seen[i] - t for i, t in sent.items() if i in bot_seen]
    to_page = [shown[i] - t for i, t in sent_epoch.items() if i in shown]
    return ConsoleLatencyReport(
        utterances=n, approval=approval, rate=rate, engine=engine,
        watcher_p50_ms=_pct(to_watcher, 50), watcher_p95_ms=_pct(to_watcher, 95), watcher_p99_ms=_pct(to_watcher, 99),
        bot_p50_ms=_pct(to_bot, 50), bot_p95_ms=_pct(to_bot, 95),
        **({
            "page_p50_ms": _pct(to_page, 50), "page_p95_ms": _pct(to_page, 95), "page_p99_ms": _pct(to_page, 99),
            "page_missing": n - len(to_page),
        } if page is not None else {}),
        decisions_seen=len(to_watcher), held=len(held), missing=n - len(to_watcher), dropped=dropped,
    )


def _print(r: ConsoleLatencyReport) -> None:
    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.1f} ms"

    print(f"{r.utterances} utterances at {r.rate:g}/s, approval {r.approval}, engine {r.engine}")
    print(f"decision on the console  p50/p95/p99  {ms(r.watcher_p50_ms)} / {ms(r.watcher_p95_ms)} / {ms(r.watcher_p99_ms)}")
    if r.page_missing is not None:
        print(f"decision drawn on the page p50/p95/p99 {ms(r.page_p50_ms)} / {ms(r.page_p95_ms)} / {ms(r.page_p99_ms)}"
              f"  (headless Chromium; {r.page_missing} not drawn)")
    print(f"decision at the bot      p50/p95      {ms(r.bot_p50_ms)} / {ms(r.bot_p95_ms)}  (not held)")
    print(f"decisions seen {r.decisions_seen}, held for approval {r.held}, missing {r.missing} ({r.dropped} dropped as stale)")


app = typer.Typer(rich_markup_mode=None, add_completion=False, context_settings={"max_content_width": 120})


@app.command(help=__doc__.splitlines()[0])
def _command(
    utterances: int = typer.Option(300, "--utterances", min=1, help="Utterances the bot sends."),
    rate: float = typer.Option(4.0, "--rate", min=0.01, help="Utterances per second."),
    approval: str = typer.Option("speech", "--approval", help="The meeting's approval: none, speech or all."),
    engine: str = typer.Option("local", "--engine", help="Engine of the meeting."),
    data: Path = typer.Option(None, "--data", help="Meeting file or folder (default: the shipped fixtures)."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures to this file."),
    browser: bool = typer.Option(
        False, "--browser", help="Also watch on the console page in headless Chromium (needs chromium, chromedriver, selenium)."
    ),
) -> ConsoleLatencyReport:
    if approval not in ("none", "speech", "all"):
        typer.echo(f"benchmark.console_latency: --approval is none, speech or all, not {approval!r}", err=True)
        raise typer.Exit(2)
    bench = next(m for m in load(data) if m.utterances)
    if browser and not available():
        typer.echo(f"benchmark.console_latency: --browser: {NO_BROWSER}", err=True)
        raise typer.Exit(2)
    with local_server(engine) as (url, token), contextlib.ExitStack() as stack:
        page = None
        if browser:
            profile = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="console-latency-")))
            page = ConsolePage(stack.enter_context(headless_chromium(profile)))
        report = asyncio.run(run(url, token, bench, utterances, rate, approval, engine, page))
    _print(report)
    if json_out:
        json_out.write_text(report.model_dump_json(indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> ConsoleLatencyReport:
    """Run from the command line, or from code with `argv`; exits (SystemExit) on bad options."""
    return call(app, argv)


if __name__ == "__main__":
    run_cli(main)
