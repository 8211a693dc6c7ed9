"""Replay cases through an engine and a judge: snapshot mode (one decision per case) and stream mode."""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from benchmark.scoring.data import BenchMeeting, Case
from benchmark.scoring.judge import Judge, JudgeInput, Judgement, private_leak
from benchmark.scoring.speech_checks import SpeechChecks, check
from delegate import guard
from delegate.decide.base import Engine, hear
from delegate.language.text import word_count
from delegate.meeting import MeetingState, is_backchannel
from delegate.models import Decision, Profile


class CaseResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    meeting_id: str
    variant: str
    scenario: str
    principal: str
    spoke: bool
    response: str
    reason: str
    expected_points: list[str] = Field(default_factory=list)
    matched_points: list[str] = Field(default_factory=list)
    strict: float = 0.0
    attribution: list[dict[str, str | float | int | None]] = Field(default_factory=list)
    latency_ms: float
    words: int = 0
    used_background: list[int] = Field(default_factory=list)
    used_sources: list[str] = Field(default_factory=list)
    private_leak: bool = False
    speech: SpeechChecks | None = None
    guard_blocked: bool = False
    """The privacy guard (`delegate.guard`) would have kept this response back."""

    @property
    def correct(self) -> bool:
        return self.spoke == (self.variant != "mismatched")


def state_for(meeting: BenchMeeting, case: Case) -> MeetingState:
    names = case.names if case.names is not None else meeting.names
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(names))
    state.extend(meeting.snapshot(case))
    return state


async def _decide(engine: Engine, state: MeetingState, profile) -> tuple[Decision, float]:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    decision = await engine.decide(state, profile)
    return decision, (time.perf_counter() - t0) * 1000


SNAPSHOT_LINES_FOR_JUDGE = 200


async def run_case(meeting: BenchMeeting, case: Case, engine: Engine, judge: Judge, state: MeetingState | None = None) -> CaseResult:
    """One decision on the case's snapshot; `state` may be given when it already holds exactly that snapshot."""
    state = state if state is not None else state_for(meeting, case)
    names = case.names if case.names is not None else None
    profile = meeting.profile(case.principal, names)
    decision, latency = await _decide(engine, state, profile)
    judgement: Judgement | None = None
    if decision.spoke and case.expects_speech:
        snapshot = [f"{state.display_name(u.speaker)}: {u.text}" for u in state.utterances[-SNAPSHOT_LINES_FOR_JUDGE:]]
        judgement = await judge.judge(
            JudgeInput(response=decision.speak, expected_points=case.expected_points, profile=profile, snapshot=snapshot)
        )
    return CaseResult(
        id=case.id,
        meeting_id=meeting.meeting_id,
        variant=case.variant,
        scenario=case.scenario.value,
        principal=case.principal,
        spoke=decision.spoke,
        response=decision.speak,
        reason=decision.reason,
        expected_points=case.expected_points,
        matched_points=[case.expected_points[k] for k in judgement.covered] if judgement else [],
        strict=judgement.strict if judgement else 0.0,
        attribution=[p.model_dump() for p in judgement.points] if judgement else [],
        latency_ms=latency,
        words=word_count(decision.speak) if decision.spoke else 0,
        used_background=decision.used_background,
        used_sources=decision.used_sources,
        private_leak=decision.spoke and private_leak(decision.speak, profile),
        speech=check(decision.speak, profile, decision.used_background, _talk(state)) if decision.spoke else None,
        guard_blocked=decision.spoke and _guard_blocks(decision.speak, profile, state),
    )


def _talk(state: MeetingState) -> str:
    """The last two substantive turns: what a reply should answer."""
    return " ".join(t.utterance.text for t in list(state.recent)[-2:])


def _guard_blocks(speak: str, profile: Profile, state: MeetingState) -> bool:
    return not guard.check(speak, profile, state.quotable()).allowed


class StreamResult(BaseModel):
    meeting_id: str
    principal: str
    utterances: int
    duration_s: float
    speaks: list[int]
    """Utterance ids after which the delegate spoke."""
    floor_taken: list[int]
    """Utterance ids after which the principal really took the floor next."""
    latencies_ms: list[float]
    cpu_ms: list[float] = Field(default_factory=list)
    """The process's CPU per decision (all its threads: a reading done in a worker counts)."""
    guard_blocks: int = 0
    """Spoken decisions the privacy guard would have kept back."""


def floor_turns(meeting: BenchMeeting, principal: str) -> list[int]:
    """Utterance ids i whose next substantive turn is the principal's (and i itself is someone else's)."""
    out = []
    utts = meeting.utterances
    nxt: str | None = None
    for i in range(len(utts) - 1, -1, -1):
        if nxt == principal and utts[i].speaker != principal:
            out.append(utts[i].id)
        if not is_backchannel(utts[i].text):
            nxt = utts[i].speaker
    return sorted(out)


def meeting_duration_s(meeting: BenchMeeting) -> float:
    ends = [u.end for u in meeting.utterances if u.end is not None]
    if ends:
        return max(ends) - min(u.start or 0.0 for u in meeting.utterances)
    # Without timestamps: 150 words a minute of speech.
    return sum(word_count(u.text) for u in meeting.utterances) / 150 * 60


async def run_stream(
    meeting: BenchMeeting, principal: str, engine: Engine, progress: Callable[[], None] | None = None, until: int | None = None
) -> StreamResult:
    """A decision after every utterance of the meeting (of its first `until` utterances, if given)."""
    state = MeetingState(meeting.meeting_id, attendees=list(meeting.attendees), names=dict(meeting.names))
    profile = meeting.profile(principal)
    speaks: list[int] = []
    latencies: list[float] = []
    blocks = 0
    utterances = meeting.utterances[:until] if until is not None else meeting.utterances
    cpu: list[float] = []
    for u in utterances:
        t0, c0 = time.perf_counter(), time.process_time()
        decision = await hear(engine, state, profile, u)
        latencies.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
        if decision.spoke:
            speaks.append(u.id)
            blocks += _guard_blocks(decision.speak, profile, state)
        if progress:
            progress()
    return StreamResult(
        meeting_id=meeting.meeting_id,
        principal=principal,
        utterances=len(utterances),
        duration_s=meeting_duration_s(meeting) * len(utterances) / max(len(meeting.utterances), 1),
        speaks=speaks,
        floor_taken=[i for i in floor_turns(meeting, principal) if i <= utterances[-1].id] if utterances else [],
        latencies_ms=latencies,
        cpu_ms=cpu,
        guard_blocks=blocks,
    )
