"""Replay a `delegate-bench/1` meeting as pipecat transcription frames through a real pipeline holding the
delegate's processor: decisions agree with the engine run directly? frames pushed? overhead per frame?

    python -m benchmark.pipecat --data benchmark/fixtures/fixture_01_release_planning.json --json out.json

Each utterance becomes an interim transcription frame (its first half) and a final one, one user id per
speaker. The overhead is the processor's time per frame minus the delegate's own work on it (the meeting
state, the engine, the guard and the action extractor: what `InProcessDelegate.hear` does besides sending
its outcomes out), so it is what pipecat and the processor add.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import typer
from pydantic import BaseModel

from benchmark.scoring.data import BenchMeeting, load_meeting
from benchmark.typer_call import call
from delegate.decide import build_engine
from delegate.decide.base import hear
from delegate.extras import run_cli
from delegate.meeting import MeetingState
from delegate.models import Decision, Profile


class PipecatReport(BaseModel):
    meeting_id: str
    principal: str
    utterances: int
    frames_in: int
    decisions: int
    agree: int
    """Decisions of the processor equal (scenario and speech) to the engine's run directly."""
    disagreements: list[int]
    spoke: int
    frames_pushed: dict[str, int]
    overhead_p50_ms: float
    overhead_p99_ms: float
    overhead_max_ms: float
    """Wall-clock: on a shared machine, also the time the process waited for a core."""
    overhead_cpu_p50_ms: float
    overhead_cpu_p99_ms: float
    """The same on the event loop thread's CPU clock: what the processor costs, without the waits for a core."""
    frame_p50_ms: float
    frame_p99_ms: float
    """The processor's whole time per frame, the engine's decisions included."""
    engine_p99_ms: float
    pipecat_version: str


class _Clock:
    """Seconds the delegate itself spent (the meeting state, the engine, the guard, the action extractor),
    apart from the time its outcomes spent going out through the processor."""

    def __init__(self) -> None:
        self.delegate_s = 0.0
        self.delegate_cpu_s = 0.0


def _principal(bench: BenchMeeting, label: str | None) -> Profile:
    labels = sorted(bench.profiles)
    if label is None:
        if not labels:
            raise SystemExit(f"benchmark.pipecat: {bench.meeting_id} has no profiles; pass --principal LABEL")
        label = labels[0]
    if label not in bench.profiles and label not in bench.attendees:
        raise SystemExit(f"benchmark.pipecat: {label!r} is not an attendee of {bench.meeting_id}")
    return bench.profile(label) if label in bench.profiles else Profile(name=bench.display_name(label), label=label)


async def _direct(bench: BenchMeeting, principal: Profile) -> list[Decision]:
    engine = build_engine("local")
    state = MeetingState(bench.meeting_id, attendees=list(bench.attendees), names=dict(bench.names))
    return [await hear(engine, state, principal, u) for u in bench.utterances]


async def _through_pipecat(bench: BenchMeeting, principal: Profile) -> dict[str, Any]:
    from pipecat import version as pipecat_version
    from pipecat.frames.frames import EndFrame, Frame, InterimTranscriptionFrame, TranscriptionFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

    from delegate.integrations.delegates import Emit, InProcessDelegate, Outcome
    from delegate.integrations.pipecat import DelegateProcessor
    from delegate.server.protocol import DecisionMessage

    clock = _Clock()
    frame_ms: list[float] = []
    overhead_ms: list[float] = []
    cpu_ms: list[float] = []

    class TimedDelegate(InProcessDelegate):
        async def start(self, emit: Emit) -> None:
            async def timed_emit(outcome: Outcome) -> None:
                t0, c0 = time.perf_counter(), time.thread_time()
                await emit(outcome)
                clock.delegate_s -= time.perf_counter() - t0  # going out is the processor's part
                clock.delegate_cpu_s -= time.thread_time() - c0

            await super().start(timed_emit)

        async def hear(self, speaker: str, text: str) -> int:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return await super().hear(speaker, text)
            finally:
                clock.delegate_s += time.perf_counter() - t0
                clock.delegate_cpu_s += time.thread_time() - c0

    class Timed(DelegateProcessor):
        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            spent_before, cpu_before = clock.delegate_s, clock.delegate_cpu_s
            t0, c0 = time.perf_counter(), time.thread_time()
            await super().process_frame(frame, direction)
            if isinstance(frame, TranscriptionFrame | InterimTranscriptionFrame):
                total = (time.perf_counter() - t0) * 1000
                frame_ms.append(total)
                overhead_ms.append(total - (clock.delegate_s - spent_before) * 1000)
                cpu_ms.append((time.thread_time() - c0 - (clock.delegate_cpu_s - cpu_before)) * 1000)

    pushed: Counter[str] = Counter()
    decisions: list[Decision] = []

    class Sink(FrameProcessor):
        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if direction == FrameDirection.DOWNSTREAM:
                pushed[type(frame).__name__] += 1
                message = getattr(frame, "message", None)
                if isinstance(message, dict) and message.get("type") == "decision":
                    decisions.append(DecisionMessage.model_validate(message).decision)
            await self.push_frame(frame, direction)

    users = {f"user-{label}": label for label in dict.fromkeys(u.speaker for u in bench.utterances)}
    delegate = TimedDelegate(
        principal, engine=build_engine("local"), meeting_id=bench.meeting_id, attendees=bench.attendees, names=bench.names
    )
    processor = Timed(delegate, speakers=users)
    worker = PipelineWorker(Pipeline([processor, Sink()]), params=PipelineParams(), cancel_on_idle_timeout=False)
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(*_: object) -> None:
        started.set()

    frames: list[Frame] = []
    for u in bench.utterances:
        words = u.text.split()
        user = f"user-{u.speaker}"
        if len(words) > 1:
            frames.append(InterimTranscriptionFrame(text=" ".join(words[: len(words) // 2]), user_id=user, timestamp=""))
        frames.append(TranscriptionFrame(text=u.text, user_id=user, timestamp=""))

    async def feed() -> None:
        await asyncio.wait_for(started.wait(), timeout=30)
        for frame in frames:
            await worker.queue_frame(frame)
        await worker.queue_frame(EndFrame())

    await asyncio.gather(_run(worker), feed())
    return {
        "decisions": decisions, "frames_in": len(frames), "pushed": dict(pushed), "frame_ms": frame_ms,
        "overhead_ms": overhead_ms, "cpu_ms": cpu_ms, "version": pipecat_version(),
    }


async def _run(worker: Any) -> None:
    from pipecat.workers.runner import WorkerRunner

    runner = WorkerRunner()
    await runner.add_workers(worker)
    await runner.run()


def _quiet_pipecat() -> None:
    import pipecat  # noqa: F401  (first: without the extra, the error names pipecat, not its logger)
    from loguru import logger

    logger.remove()  # pipecat logs every frame's journey at DEBUG to stderr
    logger.add(sys.stderr, level="WARNING")


def run_pipecat(data: Path, principal_label: str | None = None) -> PipecatReport:
    _quiet_pipecat()
    bench = load_meeting(data)
    principal = _principal(bench, principal_label)
    direct = asyncio.run(_direct(bench, principal))
    piped = asyncio.run(_through_pipecat(bench, principal))
    got: list[Decision] = piped["decisions"]
    by_id = {d.utterance_id: d for d in got}
    disagree = [
        d.utterance_id for d in direct
        if (p := by_id.get(d.utterance_id)) is None or (p.scenario, p.speak) != (d.scenario, d.speak)
    ]
    frame_ms, overhead = np.array(piped["frame_ms"]), np.array(piped["overhead_ms"])
    return PipecatReport(
        meeting_id=bench.meeting_id,
        principal=principal.speaker_label,
        utterances=len(bench.utterances),
        frames_in=piped["frames_in"],
        decisions=len(got),
        agree=len(direct) - len(disagree),
        disagreements=disagree,
        spoke=sum(d.spoke for d in got),
        frames_pushed=piped["pushed"],
        overhead_p50_ms=round(float(np.percentile(overhead, 50)), 4),
        overhead_p99_ms=round(float(np.percentile(overhead, 99)), 4),
        overhead_max_ms=round(float(overhead.max()), 4),
        overhead_cpu_p50_ms=round(float(np.percentile(piped["cpu_ms"], 50)), 4),
        overhead_cpu_p99_ms=round(float(np.percentile(piped["cpu_ms"], 99)), 4),
        frame_p50_ms=round(float(np.percentile(frame_ms, 50)), 4),
        frame_p99_ms=round(float(np.percentile(frame_ms, 99)), 4),
        engine_p99_ms=round(float(np.percentile([d.latency_ms for d in got], 99)), 4),
        pipecat_version=piped["version"],
    )


def _print(r: PipecatReport) -> None:
    print(f"meeting {r.meeting_id}, principal {r.principal}, pipecat {r.pipecat_version}")
    print(f"frames in            {r.frames_in} ({r.utterances} utterances: an interim and a final each)")
    print(f"decisions agree      {r.agree} / {r.utterances}  (disagreeing: {r.disagreements or 'none'})")
    print(f"spoke                {r.spoke}")
    print(f"frames pushed        {', '.join(f'{k} {v}' for k, v in sorted(r.frames_pushed.items()))}")
    print(f"overhead p50/p99/max {r.overhead_p50_ms:.3f} / {r.overhead_p99_ms:.3f} / {r.overhead_max_ms:.3f} ms per frame")
    print(f"overhead CPU p50/p99 {r.overhead_cpu_p50_ms:.3f} / {r.overhead_cpu_p99_ms:.3f} ms per frame (thread CPU time)")
    print(f"frame p50/p99        {r.frame_p50_ms:.3f} / {r.frame_p99_ms:.3f} ms (decision included)")


app = typer.Typer(rich_markup_mode=None, add_completion=False)


@app.command(help=__doc__.splitlines()[0])
def _command(
    data: Path = typer.Option(..., "--data", exists=True, dir_okay=False, help="A delegate-bench/1 meeting file."),
    principal: str = typer.Option(None, "--principal", help="The principal's speaker label (default: the first profile)."),
    json_out: Path = typer.Option(None, "--json", help="Write the figures to this file."),
) -> PipecatReport:
    report = run_pipecat(data, principal)
    _print(report)
    if json_out:
        json_out.write_text(report.model_dump_json(indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> PipecatReport:
    return call(app, argv)


if __name__ == "__main__":
    run_cli(main)
