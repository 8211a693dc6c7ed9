"""Bridge overhead per utterance: signed transcript webhooks through each bridge's own listener, in process."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import httpx
from pydantic import SecretStr

from delegate.integrations import attendee, recall
from delegate.integrations.bridge import MeetingBridge
from delegate.integrations.speakers import Roster

QUESTION = "Alice, when does the database migration finish?"

class RecordingLink:
    """A `DelegateLink` that only counts: what the bridge hands on, and when."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, float]] = []
        """(wall, this thread's CPU) when each utterance was handed on."""
        self._next = 0

    async def send(self, speaker: str, text: str, *, start: float | None = None, end: float | None = None) -> int:
        self.sent.append((time.perf_counter(), time.thread_time()))
        self._next += 1
        return self._next - 1

    async def admission(self, state: Any, detail: str = "") -> None:
        return None

    async def start_audio(self, sample_rate: int = 16000, speaker: str | None = None) -> None:
        return None

    async def send_pcm(self, pcm: bytes) -> None:
        return None


def _quantiles(took: list[tuple[float, float]]) -> dict[str, float]:
    """Wall time (what a loaded machine's scheduler adds is in it) and CPU time of this thread (what the bridge's
    code itself costs), after the first events (they warm Python's caches)."""
    took = took[min(50, len(took) // 10):]
    wall = statistics.quantiles([w for w, _ in took], n=100)
    cpu = statistics.quantiles([c for _, c in took], n=100)
    return {"p50_ms": round(wall[49], 3), "p99_ms": round(wall[98], 3), "cpu_p50_ms": round(cpu[49], 3),
            "cpu_p99_ms": round(cpu[98], 3), "n": len(took)}


def _since(link: RecordingLink, wall: float, cpu: float) -> tuple[float, float]:
    sent_wall, sent_cpu = link.sent[-1]
    return (sent_wall - wall) * 1000, (sent_cpu - cpu) * 1000


async def attendee_overhead(events: int) -> dict[str, float]:
    from testkit.attendee_fake import payload

    secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
    link = RecordingLink()
    bridge = MeetingBridge(link=link, roster=Roster(["Bob Jones", "Carol Diaz"]))
    listener = attendee.AttendeeListener(bridge, attendee.AttendeeAudioOut(), SecretStr(secret), "transcript")
    bodies = []
    for i in range(events):
        body = payload("transcript.update")
        body["idempotency_key"] = f"k{i}"
        body["data"]["speaker_uuid"] = str(i % 7)
        body["data"]["speaker_name"] = ["Bob Jones", "Carol Diaz", "Dana Lee"][i % 3]
        body["data"]["transcription"]["transcript"] = f"{QUESTION} ({i})"
        raw = json.dumps(body).encode()
        bodies.append((raw, attendee.sign(body, secret)))
    took: list[tuple[float, float]] = []
    transport = httpx.ASGITransport(app=listener.app())
    async with httpx.AsyncClient(transport=transport, base_url="http://bridge") as http:
        for raw, signature in bodies:
            began, cpu = time.perf_counter(), time.thread_time()
            r = await http.post("/attendee/webhook", content=raw, headers={"X-Webhook-Signature": signature})
            assert r.status_code == 200, r.text
            took.append(_since(link, began, cpu))
    return _quantiles(took)


async def recall_overhead(events: int) -> dict[str, float]:
    from testkit.recall_fake import payload

    secret = "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ="
    link = RecordingLink()
    bridge = MeetingBridge(link=link, roster=Roster(["Bob Jones", "Carol Diaz"]))
    listener = recall.RecallListener(bridge, SecretStr(secret))
    took: list[tuple[float, float]] = []
    transport = httpx.ASGITransport(app=listener.app())
    async with httpx.AsyncClient(transport=transport, base_url="http://bridge") as http:
        for i in range(events):
            body = payload("transcript.data")
            template = body["data"]["data"]["words"][0]
            body["data"]["data"]["words"] = [{**template, "text": w} for w in f"{QUESTION} ({i})".split()]
            body["data"]["data"]["participant"].update(id=i % 7, name=["Bob Jones", "Carol Diaz", "Dana Lee"][i % 3])
            raw = json.dumps(body).encode()
            now = int(time.time())
            headers = {"webhook-id": f"msg_{i}", "webhook-timestamp": str(now),
                       "webhook-signature": recall.sign(f"msg_{i}", now, raw, secret)}
            began, cpu = time.perf_counter(), time.thread_time()
            r = await http.post("/recall/realtime", content=raw, headers=headers)
            assert r.status_code == 200, r.text
            took.append(_since(link, began, cpu))
    return _quantiles(took)
