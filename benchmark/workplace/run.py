"""Brief from the sources only, replay the meeting's cases, and score them by kind."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from benchmark.scoring.data import BenchMeeting, ProfileSpec
from benchmark.scoring.judge import OfflineJudge
from benchmark.scoring.runner import CaseResult, run_case
from benchmark.workplace.scenario import Scenario
from delegate.decide.local import LocalEngine
from delegate.decide.reply.compose import HOLDING_LINES
from delegate.decide.reply.selector import AnswerSelector
from delegate.models import Profile
from delegate.sources.brief import Brief, Meeting, build_brief
from delegate.sources.folder import load_sources
from delegate.sources.items import SourceError, Sources
from delegate.sources.lookup import SourceIndex
from delegate.speakable import defects


def brief_for(scenario: Scenario) -> tuple[Brief, Sources, float]:
    """The brief from the scenario's sources (nothing else), the sources read, and the seconds it took to
    read and build."""
    t0 = time.perf_counter()
    sources = load_sources(scenario.sources)
    event = sources.event(scenario.spec.meeting_event_id)
    if event is None:
        raise SourceError(f"{scenario.sources}: no calendar event {scenario.spec.meeting_event_id!r}")
    p = scenario.spec.principal
    brief = build_brief(sources, Meeting.of_event(event), p.email, p.name)
    return brief, sources, time.perf_counter() - t0


def briefed_meeting(scenario: Scenario, profile: Profile) -> BenchMeeting:
    """The meeting with the principal's profile replaced by the brief (its names and aliases kept)."""
    label = scenario.spec.principal.label
    given = scenario.meeting.profiles[label]
    spec = ProfileSpec(name=given.name, aliases=given.aliases, intents=profile.intents, background=profile.background)
    return scenario.meeting.model_copy(update={"profiles": {**scenario.meeting.profiles, label: spec}})


def _cited(item_id: str | None, refs: list[str]) -> bool:
    return item_id is not None and item_id.partition("#")[0] in refs


def _holding(response: str) -> bool:
    return response.strip() in HOLDING_LINES or any(w in response.lower() for w in ("i'll check", "follow up", "find out"))


async def run(scenario: Scenario, lookup: bool = True, selector: AnswerSelector | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The embedded engine on the brief; with `lookup`, it also searches the scenario's sources live; `selector`:
    the answer selector to pick items with (default: the shipped one; one fitted without this scenario keeps it held out)."""
    brief, sources, brief_s = brief_for(scenario)
    t0 = time.perf_counter()
    index = SourceIndex(sources, brief.meeting, scenario.spec.principal.email) if lookup else None
    index_s = time.perf_counter() - t0
    engine = LocalEngine(lookup_for=(lambda _m, _p: index) if index is not None else None, selector_for=(lambda _m: selector) if selector else None)
    meeting = briefed_meeting(scenario, brief.profile)
    background = brief.profile.background
    judge = OfflineJudge()
    lines: list[dict[str, Any]] = []
    results: list[tuple[str, CaseResult]] = []
    for case in meeting.cases:
        kind = scenario.cases[case.id]
        r = await run_case(meeting, case, engine, judge)
        results.append((kind.kind, r))
        used = [background[k] for k in r.used_background]
        cited_sources = sum(_cited(i, kind.source_refs) for i in r.used_sources)
        leaked = [f for f in _all_forbidden(scenario) if r.spoke and f.casefold() in r.response.casefold()]
        lines.append({
            "id": r.id, "kind": kind.kind, "scenario": r.scenario, "spoke": r.spoke, "response": r.response,
            "expected_points": r.expected_points, "matched_points": r.matched_points,
            "used_items": [b.item_id for b in used] + r.used_sources,
            "looked_up": r.used_sources,
            "cited_used": sum(_cited(b.item_id, kind.source_refs) for b in used) + cited_sources,
            "forbidden_spoken": leaked, "holding_line": r.spoke and _holding(r.response), "words": r.words,
            "speakable_defects": defects(r.response) if r.spoke else [],
            "latency_ms": round(r.latency_ms, 2), "reason": r.reason,
        })
    report = _report(scenario, brief, brief_s, lines)
    report["lookup"] = {
        "on": index is not None,
        "items": len(index) if index is not None else 0,
        "index_seconds": round(index_s, 3),
        "answers_from_lookup": sum(bool(x["looked_up"]) for x in lines),
    }
    return report, lines


def _all_forbidden(scenario: Scenario) -> list[str]:
    # The phrases of every private case apply to every response, not only to their own case's.
    return sorted({f for c in scenario.cases.values() for f in c.forbidden})


def _speakable(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The speakable check over every spoken reply: how many have a defect, and which."""
    spoke = [x for x in lines if x["spoke"]]
    found = Counter(d for x in spoke for d in x["speakable_defects"])
    with_defect = sum(bool(x["speakable_defects"]) for x in spoke)
    return {"replies": len(spoke), "with_defect": with_defect, "defect_rate": _share(with_defect, len(spoke)), "defects": dict(found)}


def _share(n: int, d: int) -> float | None:
    return round(n / d, 3) if d else None


def _report(scenario: Scenario, brief: Brief, brief_s: float, lines: list[dict[str, Any]]) -> dict[str, Any]:
    sourced = [x for x in lines if x["kind"] == "sourced"]
    spoke = [x for x in sourced if x["spoke"]]
    used = sum(len(x["used_items"]) for x in spoke)
    unanswerable = [x for x in lines if x["kind"] == "unanswerable"]
    private = [x for x in lines if x["kind"] == "private"]
    background = brief.profile.background
    return {
        "scenario": scenario.spec.scenario_id,
        "meeting_id": scenario.meeting.meeting_id,
        "brief": {
            "seconds": round(brief_s, 3),
            "items": len(background),
            "private_items": sum(not b.shareable for b in background),
            "considered": brief.considered,
            "superseded": len(brief.superseded),
            "private_listed_in_brief_as_shareable": sorted(
                b.item_id for b in background if b.shareable and b.item_id in {p.id for p in scenario.spec.private}
            ),
        },
        "sourced": {
            "cases": len(sourced),
            "response_rate": _share(len(spoke), len(sourced)),
            "loose_recall": _share(sum(bool(x["matched_points"]) for x in sourced), len(sourced)),
            "loose_recall_when_spoke": _share(sum(bool(x["matched_points"]) for x in spoke), len(spoke)),
            "strict_recall": _share(sum(len(x["matched_points"]) for x in sourced), sum(len(x["expected_points"]) for x in sourced)),
            "provenance": _share(sum(x["cited_used"] for x in spoke), used),
            "holding_lines": sum(x["holding_line"] for x in spoke),
        },
        "private": {
            "cases": len(private),
            "spoke": sum(x["spoke"] for x in private),
            "phrases_spoken": sum(len(x["forbidden_spoken"]) for x in lines),
            "responses_with_a_phrase": sum(bool(x["forbidden_spoken"]) for x in lines),
        },
        "unanswerable": {
            "cases": len(unanswerable),
            "holding_line": sum(x["holding_line"] for x in unanswerable),
            "spoke_otherwise": sum(x["spoke"] and not x["holding_line"] for x in unanswerable),
        },
        "speakable": _speakable(lines),
        "words_mean": _share(sum(x["words"] for x in lines if x["spoke"]), sum(x["spoke"] for x in lines)),
        "decision_ms_max": max((x["latency_ms"] for x in lines), default=0.0),
    }
