"""Fit the answer selector (`delegate.decide.reply.selector`) and report it held out by meeting.

Training pairs, one row per (case, shareable background item):
- ELITR dev matched cases: an item is a positive when one of its sayable sentences matches an expected point
  of the case (`similarity` >= the offline judge's threshold, 0.5), a negative otherwise;
- workplace-dev: a `sourced` case's positives are the brief items its `source_refs` cite; a `private` or
  `unanswerable` case has none (nothing in the brief should be said);
- careful readers' labels (`--readers FILE`, when given): the item the reader would use is the positive.

Figures: leave-one-meeting-out on ELITR dev, top-1 (the selector's best item is a positive, of the cases that
have one) against the ranking compose used before (static vectors over the window + half the encoder's
reading); workplace-dev scored by the ELITR-only model. The threshold is set on the folds' held-out scores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmark.scoring.data import BenchMeeting, load
from benchmark.scoring.judge import JudgeInput, OfflineJudge
from benchmark.scoring.runner import state_for
from delegate.decide.cues import Cue, current_talk
from delegate.decide.reply.compose import compose
from delegate.decide.reply.phrasing import sayable, ticket_names
from delegate.decide.reply.selector import FEATURES, AnswerSelector, features
from delegate.language.similarity import similarity
from delegate.meeting import MeetingState
from delegate.models import Profile, Scenario

MATCH = OfflineJudge().threshold
"""An item's sentence matches an expected point at the offline judge's own threshold."""
KEEP_POSITIVES = 0.98
_NO_FLOOR = AnswerSelector(np.zeros(len(FEATURES)), np.ones(len(FEATURES)), np.zeros(len(FEATURES)), 0.0, 0.0)
"""Composing from one item alone: no selector threshold in the way."""
"""The threshold keeps this share of the held-out cases whose best item is a positive above it."""


@dataclass
class Group:
    """One case: its rows (shareable items) and which are positives."""

    meeting_id: str
    case_id: str
    rows: np.ndarray
    labels: np.ndarray
    baseline: np.ndarray
    """The ranking compose used before the selector, for the before/after figure."""


def _baseline(rows: np.ndarray) -> np.ndarray:
    return rows[:, FEATURES.index("static_window")] + 0.5 * rows[:, FEATURES.index("read")]


def _group(meeting_id: str, case_id: str, state: MeetingState, profile: Profile, positive: list[bool] | list[float]) -> Group | None:
    keep = [k for k, b in enumerate(profile.background) if b.shareable]
    if not keep:
        return None
    rows = features(state, profile)[keep]
    return Group(meeting_id, case_id, rows, np.asarray([positive[k] for k in keep], dtype=float), _baseline(rows))


def elitr_groups(folder: Path, labels: str = "points") -> list[Group]:
    out: list[Group] = []
    for meeting in load(folder):
        out += _meeting_groups(meeting, labels)
    return out


def _said_alone(state: MeetingState, profile: Profile, k: int, case_points: list[str], judge: OfflineJudge) -> float:
    """The share of the reply's sentences the offline judge attributes to the case's expected points, when the
    reply is composed from item `k` alone: what the item is worth as the one answer."""
    alone = profile.model_copy(update={"intents": [], "background": [b if j == k else b.model_copy(update={"shareable": False}) for j, b in enumerate(profile.background)]})
    reply = compose(state, alone, Cue(Scenario.explicit_cue, 1.0, ""), current_talk(state), _NO_FLOOR).text
    if not reply:
        return 0.0
    snapshot = [f"{state.display_name(u.speaker)}: {u.text}" for u in state.utterances[-200:]]
    judged = judge.judge_now(JudgeInput(response=reply, expected_points=case_points, profile=profile, snapshot=snapshot))
    points = judged.points
    return sum(p.attribution == "expected" for p in points) / len(points) if points else 0.0


def _meeting_groups(meeting: BenchMeeting, labels: str = "points") -> list[Group]:
    out: list[Group] = []
    judge = OfflineJudge()
    for case in meeting.cases:
        if case.variant != "matched" or not case.expected_points or case.principal not in meeting.profiles:
            continue
        profile = meeting.profile(case.principal, case.names)
        state = state_for(meeting, case)
        if labels == "reply":
            positive = [b.shareable and _said_alone(state, profile, k, case.expected_points, judge) for k, b in enumerate(profile.background)]
        else:
            tickets = ticket_names(profile.background)
            positive = [
                any(similarity(p, x) >= MATCH for p in case.expected_points for x in (sayable(b, tickets, profile.name) or [b.information]))
                for b in profile.background
            ]
        g = _group(meeting.meeting_id, case.id, state, profile, positive)
        if g is not None:
            out.append(g)
    return out


def workplace_groups(folder: Path) -> list[Group]:
    from benchmark.workplace.run import _cited, brief_for, briefed_meeting
    from benchmark.workplace.scenario import load_scenario

    scenario = load_scenario(folder)
    brief, _, _ = brief_for(scenario)
    meeting = briefed_meeting(scenario, brief.profile)
    out: list[Group] = []
    for case in meeting.cases:
        kind = scenario.cases.get(case.id)
        if case.variant != "matched" or kind is None:
            continue
        profile = meeting.profile(case.principal, case.names)
        positive = [kind.kind == "sourced" and _cited(b.item_id, kind.source_refs) for b in profile.background]
        g = _group(f"workplace/{scenario.spec.scenario_id}", case.id, state_for(meeting, case), profile, positive)
        if g is not None:
            out.append(g)
    return out


READER_ASKS = ("question", "yes_no", "opinion", "invitation", "chime_in")
"""Moments where a reader who would speak and uses no item says that nothing in the brief fits."""


def reader_groups(labels: Path, elitr: Path) -> list[Group]:
    """Careful readers' choices (`/work/readers/labels.jsonl`: one line per reader and moment, with `meeting_id`,
    `utterance` (the turn just said), `candidate` (who they are), `speak`, `asks` and `item`, the brief item
    they would use, 1-based over the shareable items, 0 for none). Per ELITR dev moment where a reader would
    speak: each item's label is the share of those readers who would use it; a moment where all of them would
    answer a question from no item teaches that nothing fits."""
    votes: dict[tuple[str, int, str], list[dict[str, object]]] = {}
    for line in labels.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("corpus") == "elitr" and row.get("speak"):
            votes.setdefault((str(row["meeting_id"]), int(row["utterance"]), str(row["candidate"])), []).append(row)
    meetings = {m.meeting_id: m for m in load(elitr)}
    out: list[Group] = []
    for (mid, at, who), rows in sorted(votes.items()):
        meeting = meetings.get(mid)
        if meeting is None or who not in meeting.profiles or at >= len(meeting.utterances):
            continue
        profile = meeting.profile(who)
        shareable = [k for k, b in enumerate(profile.background) if b.shareable]
        chosen = [int(r["item"]) for r in rows if 0 < int(r["item"]) <= len(shareable)]  # type: ignore[call-overload]
        if not chosen and not all(r.get("asks") in READER_ASKS for r in rows):
            continue
        positive = [0.0] * len(profile.background)
        for item in chosen:
            positive[shareable[item - 1]] += 1.0 / len(rows)
        state = MeetingState(mid, attendees=list(meeting.attendees), names=dict(meeting.names))
        state.extend(meeting.utterances[: at + 1])
        g = _group(mid, f"{mid}/{at}/{who}/reader", state, profile, positive)
        if g is not None:
            out.append(g)
    return out


def fit(groups: list[Group], seed: int, threshold: float = 0.5, l2: float = 1.0) -> AnswerSelector:
    """A listwise logistic model: within each case the items compete, with "none of them" as one more option
    at score 0 (so a case without a positive teaches the bias that nothing fits). Standardised features,
    L2-penalised, fitted by L-BFGS (deterministic: `seed` only orders nothing here but is kept for the card)."""
    from scipy.optimize import minimize

    x = np.concatenate([g.rows for g in groups])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    rows = [(g.rows - mean) / scale for g in groups]
    targets = [g.labels / g.labels.sum() if g.labels.any() else g.labels for g in groups]
    dim = x.shape[1]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:dim], theta[dim]
        total, grad = 0.0, np.zeros(dim + 1)
        for r, t in zip(rows, targets, strict=True):
            z = np.append(r @ w + b, 0.0)
            z -= z.max()
            p = np.exp(z) / np.exp(z).sum()
            target = np.append(t, 0.0 if t.any() else 1.0)
            total -= float(target @ np.log(p + 1e-12))
            d = p - target
            grad[:dim] += r.T @ d[:-1]
            grad[dim] += d[:-1].sum()
        n = len(rows)
        total = total / n + 0.5 * l2 * float(w @ w) / n
        grad /= n
        grad[:dim] += l2 * w / n
        return total, grad

    np.random.default_rng(seed)
    result = minimize(loss, np.zeros(dim + 1), jac=True, method="L-BFGS-B")
    return AnswerSelector(mean, scale, result.x[:dim].astype(np.float64), float(result.x[dim]), threshold)


def top1(groups: list[Group], scores: list[np.ndarray]) -> float:
    """Share of the cases with a positive whose best-scored item is one."""
    hit = [g.labels[int(np.argmax(s))] > 0 for g, s in zip(groups, scores, strict=True) if g.labels.any()]
    return float(np.mean(hit)) if hit else 0.0


def choose_threshold(groups: list[Group], probs: list[np.ndarray]) -> float:
    """The highest threshold that keeps `KEEP_POSITIVES` of the cases whose best item is a positive."""
    right = sorted(float(p.max()) for g, p in zip(groups, probs, strict=True) if g.labels.any() and g.labels[int(np.argmax(p))] > 0)
    if not right:
        return 0.5
    return round(right[int((1 - KEEP_POSITIVES) * len(right))], 4)


def held_out(groups: list[Group], seed: int) -> tuple[dict[str, AnswerSelector], list[np.ndarray]]:
    """Leave-one-meeting-out: per meeting, the selector fitted without it, and every group's held-out scores."""
    meetings = sorted({g.meeting_id for g in groups})
    folds: dict[str, AnswerSelector] = {}
    probs: list[np.ndarray] = [np.zeros(0)] * len(groups)
    for mid in meetings:
        model = fit([g for g in groups if g.meeting_id != mid], seed)
        folds[mid] = model
        for k, g in enumerate(groups):
            if g.meeting_id == mid:
                probs[k] = model.probabilities(g.rows)
    return folds, probs


def reliability(groups: list[Group], probs: list[np.ndarray], bins: int = 5) -> list[dict[str, float]]:
    """Per probability bin of each case's best item: how often it is a positive."""
    best = np.array([float(p.max()) for p in probs])
    right = np.array([float(g.labels[int(np.argmax(p))]) for g, p in zip(groups, probs, strict=True)])
    edges = np.linspace(0.0, 1.0, bins + 1)
    out = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (best >= lo) & ((best < hi) if hi < 1.0 else (best <= hi))
        if inside.any():
            out.append({"from": round(float(lo), 2), "to": round(float(hi), 2), "cases": int(inside.sum()), "right": round(float(right[inside].mean()), 3)})
    return out


def run(elitr: Path, workplace: Path | None, readers: Path | None, out: Path, report: Path | None, seed: int, labels: str = "reply") -> dict[str, object]:
    """Build the rows, evaluate held out, write the shipped weights (all data) and, with `report`, the folds."""
    elitr_rows = elitr_groups(elitr, labels)
    work_rows = workplace_groups(workplace) if workplace is not None else []
    reader_rows = reader_groups(readers, elitr) if readers is not None else []
    folds, probs = held_out(elitr_rows + reader_rows, seed)
    scored = elitr_rows + reader_rows
    elitr_idx = [k for k, g in enumerate(scored) if not g.case_id.endswith("/reader")]
    e_groups = [scored[k] for k in elitr_idx]
    e_probs = [probs[k] for k in elitr_idx]
    threshold = choose_threshold(e_groups, e_probs)
    r_idx = [k for k, g in enumerate(scored) if g.case_id.endswith("/reader")]
    readers_figures = {
        "reader_top1_before": round(top1([scored[k] for k in r_idx], [scored[k].baseline for k in r_idx]), 3),
        "reader_top1_held_out": round(top1([scored[k] for k in r_idx], [probs[k] for k in r_idx]), 3),
    } if r_idx else {}
    figures: dict[str, object] = {
        "labels": labels,
        "elitr_cases": len(elitr_rows),
        "elitr_cases_with_positive": sum(bool(g.labels.any()) for g in elitr_rows),
        "reader_cases": len(reader_rows),
        "workplace_cases": len(work_rows),
        "elitr_top1_before": round(top1(e_groups, [g.baseline for g in e_groups]), 3),
        "elitr_top1_held_out": round(top1(e_groups, e_probs), 3),
        "threshold": threshold,
        "elitr_reliability_held_out": reliability(e_groups, e_probs),
        "elitr_pick_worth_before": round(float(np.mean([g.labels[int(np.argmax(g.baseline))] for g in e_groups])), 3),
        "elitr_pick_worth_held_out": round(float(np.mean([g.labels[int(np.argmax(p))] for g, p in zip(e_groups, e_probs, strict=True)])), 3),
        **readers_figures,
    }
    elitr_only = fit(elitr_rows + reader_rows, seed, threshold)
    if work_rows:
        w_probs = [elitr_only.probabilities(g.rows) for g in work_rows]
        figures["workplace_top1_before"] = round(top1(work_rows, [g.baseline for g in work_rows]), 3)
        figures["workplace_top1_elitr_only"] = round(top1(work_rows, w_probs), 3)
        figures["workplace_unanswered_below_threshold"] = sum(
            1 for g, p in zip(work_rows, w_probs, strict=True) if not g.labels.any() and float(p.max()) < threshold
        )
        figures["workplace_cases_without_positive"] = sum(1 for g in work_rows if not g.labels.any())
    shipped = fit(elitr_rows + reader_rows + work_rows, seed, threshold)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(shipped.to_json(), indent=1) + "\n", encoding="utf-8")
    if report is not None:
        (report / "folds").mkdir(parents=True, exist_ok=True)
        for mid, model in folds.items():
            held = AnswerSelector(model.mean, model.scale, model.weights, model.bias, threshold)
            (report / "folds" / f"{mid}.json").write_text(json.dumps(held.to_json()) + "\n", encoding="utf-8")
        (report / "elitr_only.json").write_text(json.dumps(elitr_only.to_json()) + "\n", encoding="utf-8")
        (report / "figures.json").write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return figures
