"""Matched response against silence on benchmark meetings as the turn-taking threshold moves (the card's PNG).

Each meeting is decided with its own leave-one-meeting-out fold weights. A case's decision is computed
once with the floor always granted (what the delegate would then say, if anything) and once for the
model's probability; the curve sweeps the threshold over those without replaying again.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from benchmark.scoring.data import load  # noqa: E402
from benchmark.scoring.runner import state_for  # noqa: E402
from benchmark.scoring.variants import derive  # noqa: E402
from delegate.decide.cues import detect  # noqa: E402
from delegate.decide.local import LocalEngine  # noqa: E402
from delegate.decide.turn_taking import TurnTakingModel, references  # noqa: E402
from delegate.models import Scenario  # noqa: E402
from training.turn_model import auc  # noqa: E402

THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.05, 0.95, 0.05))


def case_table(data: Path, folds: Path, seed: int = 0) -> list[dict]:
    """Per case: kind, the model's floor probability (None where a rule decided), and whether it speaks if taken."""
    rows = []
    for m in load(data):
        model = TurnTakingModel.read(folds / f"{m.meeting_id}.json")
        # Floor always granted, by the cheap model and by the reader alike: the sweep moves one threshold over both.
        reader = model.reader.model_copy(update={"threshold": 0.0}) if model.reader is not None else None
        always = model.model_copy(update={"threshold": 0.0, "reader": reader})
        engine = LocalEngine(model_for=lambda _id, a=always: a)
        for c in derive(m, seed):
            state = state_for(m, c)
            profile = m.profile(c.principal, c.names)
            cue = detect(state, profile, always)
            decision = engine.decide_now(state, profile)
            kind = c.variant if c.variant != "mismatched" else ("engaged" if c.scenario is Scenario.none else "swapped")
            floor = cue.floor if cue.scenario in (Scenario.implicit_cue, Scenario.chime_in) else None
            # The old hand-made score's comparison set: principal among the last four speakers, nobody named.
            exchange = c.principal in state.recent_speakers(4) and not references(state)
            rows.append({"id": c.id, "kind": kind, "scenario": c.scenario.value, "floor": floor, "speaks_if_taken": decision.spoke,
                         "in_exchange_unnamed": exchange})
    return rows


def _spoke(row: dict, t: float) -> bool:
    return row["speaks_if_taken"] and (row["floor"] is None or row["floor"] >= t)


def _rate(rows: list[dict], t: float, speak: bool) -> float:
    return float(np.mean([_spoke(r, t) == speak for r in rows])) if rows else float("nan")


def curve(data: Path, folds: Path, png: Path) -> dict:
    rows = case_table(data, folds)
    matched = [r for r in rows if r["kind"] == "matched"]
    engaged = [r for r in rows if r["kind"] == "engaged"]
    swapped = [r for r in rows if r["kind"] == "swapped"]
    points = [
        {"threshold": t, "matched_response": round(_rate(matched, t, True), 4), "engaged_silence": round(_rate(engaged, t, False), 4),
         "swapped_silence": round(_rate(swapped, t, False), 4)}
        for t in THRESHOLDS
    ]
    # The old card's AUC: implicit / chime-in matched cases against engaged negatives, on the fold models' probability.
    pairs = [(1, r["floor"]) for r in matched if r["scenario"] != "explicit_cue" and r["floor"] is not None]
    pairs += [(0, r["floor"]) for r in engaged if r["floor"] is not None]
    y, p = np.asarray([a for a, _ in pairs]), np.asarray([b for _, b in pairs])
    narrow = [(1, r["floor"]) for r in matched if r["scenario"] != "explicit_cue" and r["floor"] is not None and r["in_exchange_unnamed"]]
    narrow += [(0, r["floor"]) for r in engaged if r["floor"] is not None and r["in_exchange_unnamed"]]
    ny, np_ = np.asarray([a for a, _ in narrow]), np.asarray([b for _, b in narrow])
    fig, ax = plt.subplots(figsize=(5, 4), dpi=100)
    ax.plot([q["engaged_silence"] for q in points], [q["matched_response"] for q in points], "o-", label="engaged negatives")
    ax.plot([q["swapped_silence"] for q in points], [q["matched_response"] for q in points], "s--", label="swapped principal")
    for q in points[1::3]:
        ax.annotate(f"{q['threshold']:.2f}", (q["engaged_silence"], q["matched_response"]), fontsize=7)
    ax.set_xlabel("silence rate")
    ax.set_ylabel("matched response rate")
    ax.set_title("ELITR dev, leave-one-meeting-out folds", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)
    (png.parent / "cases.json").write_text(json.dumps(rows) + "\n", encoding="utf-8")
    return {
        "cue_auc_implicit_chime_vs_engaged": round(auc(y, p), 4),
        "cue_auc_in_exchange_unnamed": round(auc(ny, np_), 4),
        "cue_pairs": [len(pairs), len(narrow)],
        "cases": len(rows),
        "curve": points,
    }
