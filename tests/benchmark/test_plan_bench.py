"""The reply plan's labelled turns: well formed, ids only for what comes from ../shared, and the plan reads our own
example turns as labelled."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from benchmark.plan.__main__ import LABELS, turns
from delegate.decide.reply.plan import TurnKind, plan_for


def _rows() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_kind_is_labelled_and_shared_turns_are_kept_as_ids_only() -> None:
    rows = _rows()
    kinds = Counter(TurnKind(r["kind"]) for r in rows)
    assert set(kinds) == set(TurnKind) and min(kinds.values()) >= 5 and len(rows) >= 150
    for r in rows:
        allowed = {"id", "source", "kind", "reply"} | ({"turns"} if r["source"] == "example" else set())
        assert set(r) == allowed, r["id"]
    assert len({r["id"] for r in rows}) == len(rows)


def test_the_plan_reads_the_example_turns_as_labelled(tmp_path: Path) -> None:
    found, _ = turns(tmp_path)  # no ../shared here: the example workplace's turns only
    assert {t.source for t in found} == {"example"}
    right = sum(plan_for(t.meeting, t.principal).kind is t.kind for t in found)
    assert right >= 0.95 * len(found)
