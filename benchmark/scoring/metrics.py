"""The figures of DESIGN.md, computed from case results (snapshot mode) and stream results."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from benchmark.scoring.runner import CaseResult, StreamResult

SPEAK_SCENARIOS = ("explicit_cue", "implicit_cue", "chime_in")
SILENCE_SCENARIOS = ("explicit_cue", "implicit_cue", "chime_in", "none")
ATTRIBUTIONS = ("expected", "context", "transcript", "hallucination")


def _rate(values: list[bool]) -> float | None:
    """The share of true values; None (not 0) when there are no cases to measure."""
    return float(np.mean(values)) if values else None


def _percentiles(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    arr = np.asarray(latencies)
    return {f"p{q}": round(float(np.percentile(arr, q)), 4) for q in (50, 95, 99)}


def snapshot_figures(results: list[CaseResult], engine: str, judge: str, elapsed_s: float) -> dict:
    matched = [r for r in results if r.variant == "matched"]
    silent = [r for r in results if r.variant == "mismatched"]
    noisy = [r for r in results if r.variant == "noisy_name"]
    responded = [r for r in matched if r.spoke]

    response_rate = {"all": _rate([r.spoke for r in matched])}
    for s in SPEAK_SCENARIOS:
        response_rate[s] = _rate([r.spoke for r in matched if r.scenario == s])
    silence_rate = {"all": _rate([not r.spoke for r in silent])}
    for s in SILENCE_SCENARIOS:
        silence_rate[s] = _rate([not r.spoke for r in silent if r.scenario == s])
    swapped = [r for r in silent if r.scenario != "none"]

    loose = [bool(r.matched_points) for r in responded]
    strict = [r.strict for r in responded]
    n_matched = len(matched)
    points = [p["attribution"] for r in responded for p in r.attribution]
    attribution = {a: (points.count(a) / len(points) if points else 0.0) for a in ATTRIBUTIONS}

    by_meeting: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in results:
        by_meeting[(r.meeting_id, r.principal)].append(r.correct)
    meetings: dict[str, list[bool]] = defaultdict(list)
    for (mid, _), oks in by_meeting.items():
        meetings[mid].append(all(oks))

    return {
        "engine": engine,
        "judge": judge,
        "cases": {"matched": len(matched), "mismatched": len(silent), "noisy_name": len(noisy)},
        "response_rate": response_rate,
        "silence_rate": silence_rate,
        "silence_rate_split": {"swapped": _rate([not r.spoke for r in swapped]), "engaged": silence_rate["none"]},
        "noisy_name_response_rate": _rate([r.spoke for r in noisy]),
        "loose_recall": {"responded": _rate(loose), "end_to_end": sum(loose) / n_matched if n_matched else None},
        "strict_recall": {
            "responded": float(np.mean(strict)) if strict else None,
            "end_to_end": sum(strict) / n_matched if n_matched else None,
        },
        "attribution": attribution,
        "private_leak_rate": _rate([r.private_leak for r in results if r.spoke]),
        "speech": {
            prop: _rate([getattr(r.speech, prop) for r in results if r.speech is not None])
            for prop in ("first_person", "punctuated", "unmasked", "joined_unrelated", "speakable")
        },
        "speakable_defects": dict(Counter(d for r in results if r.speech is not None for d in r.speech.defects)),
        "guard_block_rate": _rate([r.guard_blocked for r in results if r.spoke]),
        "response_words": {"mean": float(np.mean([r.words for r in results if r.spoke])) if any(r.spoke for r in results) else 0.0},
        "meeting_correctness": _rate([ok for oks in meetings.values() for ok in oks]),
        "latency_ms": _percentiles([r.latency_ms for r in results]),
        "cases_per_second": round(len(results) / elapsed_s, 1) if elapsed_s > 0 else 0.0,
    }


def stream_figures(results: list[StreamResult], engine: str) -> dict:
    speaks = sum(len(r.speaks) for r in results)
    floor = sum(len(r.floor_taken) for r in results)
    hits = sum(len(set(r.speaks) & set(r.floor_taken)) for r in results)
    hours = sum(r.duration_s for r in results) / 3600
    latencies = [x for r in results for x in r.latencies_ms]
    cpu = [x for r in results for x in r.cpu_ms]
    return {
        "mode": "stream",
        "engine": engine,
        "principals": len(results),
        "decisions": len(latencies),
        "speak_precision": hits / speaks if speaks else 0.0,
        "speak_recall": hits / floor if floor else 0.0,
        "speaks_per_hour": speaks / hours if hours else 0.0,
        "guard_block_rate": sum(r.guard_blocks for r in results) / speaks if speaks else 0.0,
        "floor_turns_per_hour": floor / hours if hours else 0.0,
        "latency_ms": _percentiles(latencies),
        "cpu_ms_mean": round(sum(cpu) / len(cpu), 4) if cpu else None,
    }
