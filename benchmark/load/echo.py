"""The limit the server is measured against: a bare uvicorn WebSocket server that answers the load client's
frames with frames of the same shape and size, and decides nothing.

It speaks as much of the protocol as `benchmark.load` needs: `join` gets an `ack`, each `utterance` an `ack`
and a `decision` frame (a real decision's fields, silent), `leave` ends the stream; `/metrics` gives the process's
CPU and memory as the server's does, `/healthz` says it is up. Its CPU per utterance is what the WebSocket
transport, the JSON and the event loop cost with nothing else: `python -m benchmark.load --echo`.

`python -c "from benchmark.load.echo import main; main()" --port PORT` serves it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Response, WebSocket, WebSocketDisconnect
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from benchmark.load.server import LocalServer
from testkit.cluster import ServerProcess, free_port

_DECISION = {
    # What a silent decision frame carries (delegate.server.protocol.DecisionMessage), so the echo writes as many
    # bytes per utterance as the server does.
    "type": "decision",
    "meeting_id": "",
    "approval": "none",
    "resumed": False,
    "decision": {
        "utterance_id": 0,
        "scenario": "none",
        "speak": "",
        "reason": "Not addressed, and nothing of the brief fits the turn (floor 0.08 below 0.50).",
        "confidence": 0.92,
        "engine": "local",
        "latency_ms": 0.41,
        "used_background": [],
        "used_intents": [],
        "used_sources": [],
    },
}


def create_echo_app() -> FastAPI:
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    @app.websocket("/v1/meetings/{meeting_id}/stream")
    async def stream(ws: WebSocket, meeting_id: str) -> None:
        await ws.accept()
        decision = {**_DECISION, "meeting_id": meeting_id, "decision": dict(_DECISION["decision"])}  # type: ignore[dict-item]
        with contextlib.suppress(WebSocketDisconnect):
            while True:
                frame = json.loads(await ws.receive_text())
                match frame.get("type"):
                    case "join":
                        await ws.send_text(json.dumps({"type": "ack", "of": "join", "meeting_id": meeting_id}))
                    case "utterance":
                        # As the server: the utterance's ack, then its decision.
                        ack = {"type": "ack", "of": "utterance", "meeting_id": meeting_id, "utterance_id": frame["id"]}
                        await ws.send_text(json.dumps(ack))
                        decision["decision"]["utterance_id"] = frame["id"]  # type: ignore[index]
                        await ws.send_text(json.dumps(decision))
                    case _:
                        await ws.close(1000, "meeting ended")
                        return

    return app


_MAIN = "from benchmark.load.echo import main; main()"
"""Not `-m benchmark.load.echo`: the package imports this module first, and runpy warns about running it again."""


@contextlib.contextmanager
def echo_served() -> Iterator[LocalServer]:
    """The echo server in a subprocess on a free loopback port until the block ends."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="delegate-echo-") as tmp:
        log_path = Path(tmp) / "echo.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-c", _MAIN, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT
            )
        server = ServerProcess(proc, port, log_path)
        try:
            server.wait_healthy()
            yield LocalServer(server.url, "echo", proc.pid)  # a token nobody checks; the client sends one
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="The bare WebSocket echo benchmark.load measures against.")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    # The same transport options as the server's (delegate.server.app.uvicorn_config).
    uvicorn.run(
        create_echo_app(), host="127.0.0.1", port=args.port, ws_per_message_deflate=False, log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
