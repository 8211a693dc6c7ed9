"""`python -m benchmark.bridges`: what the meeting-bot bridges cost, against the fake services of testkit/.

- overhead per utterance: one signed `transcript.update` (Attendee) or `transcript.data` (Recall.ai) webhook
  through the bridge's own listener (in process, over ASGI: no network), its signature checked, its payload read,
  its speaker named, until the utterance is handed to the delegate's stream (a link that records it and returns:
  the delegate's own time is the server's, measured by benchmark.latency); p50 and p99 over `--events`;
- audio round trip (Attendee, the meeting's audio into the delegate's own recogniser): a real delegate server on
  loopback (its recogniser and its voice), the fake Attendee streaming `cue_named.wav` in real time; from the
  moment the question's last spoken sample was sent (its reference end time) to the first `realtime_audio.bot_output`
  chunk of the answer; once (each run is a meeting of about 30 s).

Figures go to stdout; nothing asserts them (tests/delegate/integrations test behaviour, not time).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Any

from benchmark.bridges.audio import attendee_audio_round_trip
from benchmark.bridges.overhead import attendee_overhead, recall_overhead


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmark.bridges", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="Webhooks per service for the overhead (default 2000).")
    parser.add_argument("--no-audio", action="store_true", help="Skip the audio round trip (it needs the audio and voice extras, ~30 s).")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "attendee_overhead": asyncio.run(attendee_overhead(args.events)),
        "recall_overhead": asyncio.run(recall_overhead(args.events)),
    }
    if not args.no_audio:
        with tempfile.TemporaryDirectory() as tmp:
            figures["attendee_audio"] = asyncio.run(attendee_audio_round_trip(Path(tmp) / "audit.sqlite"))
    for name, values in figures.items():
        print(name, " ".join(f"{k}={v}" for k, v in values.items()))


if __name__ == "__main__":
    main()
