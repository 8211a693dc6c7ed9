"""The product's speakable check: the defects a listener hears, and agreement with the shared tool."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from delegate.speakable import defects, speakable

ROOT = Path(__file__).resolve().parents[2]
# ../shared beside the repository, or two levels up from a worktree.
SHARED_TOOL = next(
    (p for p in (ROOT / ".." / "shared" / "tools" / "speakable.py", ROOT / ".." / ".." / "shared" / "tools" / "speakable.py") if p.is_file()),
    ROOT / ".." / "shared" / "tools" / "speakable.py",
)

TEXTS = [
    "It's fixed: the change merged on Tuesday and is in build 1187.",
    "Write to priya.raman@tidewell.example about it.",
    "The notes are at https://wiki.example.com/release.",
    "See www.example.org for the rota.",
    "MOB-431 is fixed.",
    "Face ID login (status Resolved, priority Blocker).",
    "It's due Friday, so we have time.",
    "Hi Priya, the build is ready.",
    "Hello team! Quick update.",
    "The build is ready. Thanks, Lena",
    "The build is ready.\nBest regards",
    "RELEASE NOTES: card freeze ships.",
    "- card freeze\n- insights",
    "1. Switch the flag off",
    " ".join(["word"] * 61) + ".",
    "One. Two. Three. Four. Five.",
    "One. Two. Three. Four.",
    "Sofia is primary from Monday the 17th and Nikhil is secondary.",
    "The status is green and the priority stays.",
    "Thanks Aisha. Helen, you had accessibility on your list.",
    "Kestrel's 3.0.4 slipped to 4 April, not end of March.",
    "Owner: Rachel Lindqvist. For agents.",
]


def test_each_defect_is_found_and_named() -> None:
    assert defects("Write to priya.raman@tidewell.example about it.") == ["email"]
    assert defects("The notes are at https://wiki.example.com/release.") == ["url"]
    assert defects("MOB-431 is fixed.") == ["ticket_key"]
    assert "field_dump" in defects("Face ID login (status Resolved, priority Blocker).")
    assert defects("Hi Priya, the build is ready.") == ["greeting"]
    assert defects("The build is ready. Thanks, Lena") == ["sign_off"]
    assert defects("RELEASE NOTES: card freeze ships.") == ["caps_header"]
    assert defects("- card freeze\n- insights") == ["bullets"]
    assert defects(" ".join(["word"] * 61)) == ["too_long"]
    assert defects("One. Two. Three. Four. Five.") == ["too_many_sentences"]


def test_what_a_colleague_says_passes() -> None:
    assert speakable("It's fixed: the change merged on Tuesday and is in build 1187.")
    assert speakable("Sofia is primary from Monday the 17th and Nikhil is secondary.")
    assert speakable("One. Two. Three. Four.")
    assert speakable(" ".join(["word"] * 60))


@pytest.mark.skipif(not SHARED_TOOL.is_file(), reason="../shared/tools/speakable.py is not here")
def test_agrees_with_the_shared_tool() -> None:
    spec = importlib.util.spec_from_file_location("shared_speakable", SHARED_TOOL)
    assert spec and spec.loader
    shared = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shared)
    for text in TEXTS:
        assert sorted(defects(text)) == sorted(shared.defects(text, 60)), text
