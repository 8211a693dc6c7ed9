"""`benchmark.scoring.readers stream`: blind packets of a level's stream speaks and silences, the key kept apart."""

import json
import re
import shutil
from importlib import resources

from benchmark.scoring import readers
from benchmark.scoring.data import FIXTURES, load


def test_stream_packets_hold_speaks_and_silences_one_per_meeting_and_nothing_after_the_moment(tmp_path):
    meetings = load(FIXTURES)
    folds = tmp_path / "folds"
    folds.mkdir()
    weights = resources.files("delegate.weights").joinpath("turn_taking.json")
    for m in meetings:  # the shipped weights stand in for each meeting's fold: this checks the packets, not a figure
        with resources.as_file(weights) as w:
            shutil.copy(w, folds / f"{m.meeting_id}.json")
    out, key = tmp_path / "packets", tmp_path / "key.jsonl"
    readers.main(["stream", "--data", str(FIXTURES), "--weights-folds", str(folds), "--out", str(out), "--key", str(key),
                  "--speaks", "6"])
    rows = [json.loads(line) for line in key.read_text().splitlines()]
    assert sum(r["engine_spoke"] for r in rows) == 6 and sum(not r["engine_spoke"] for r in rows) == 6
    assert {r["speaking"] for r in rows} == {"balanced"}
    by_id = {m.meeting_id: m for m in meetings}
    for packet in sorted(out.glob("packet_*.md")):
        number = int(packet.stem.split("_")[1])
        mine = sorted((r for r in rows if r["packet"] == number), key=lambda r: r["number"])
        assert len({r["meeting_id"] for r in mine}) == len(mine)  # one moment per meeting in a packet
        text = packet.read_text()
        assert "engine" not in text.lower() and "#stream" not in text  # blind: no key in the packet
        for r, part in zip(mine, re.split(r"^## Moment \d+$", text, flags=re.M)[1:], strict=True):
            shown = [int(n) for n in re.findall(r"^(\d+)\. ", part, flags=re.M)]
            meeting = by_id[r["meeting_id"]]
            assert shown[-1] == r["utterance"] and len(shown) <= readers.STREAM_TURNS
            principal = meeting.profile(r["principal"])
            assert principal.name in part
            assert all(item.information not in part for item in principal.background if not item.shareable)


def test_stream_score_splits_the_readers_agreement_by_what_the_principal_did():
    key = [
        {"packet": 1, "number": 1, "engine_spoke": True, "principal_spoke": True},
        {"packet": 1, "number": 2, "engine_spoke": True, "principal_spoke": False},
        {"packet": 2, "number": 1, "engine_spoke": True, "principal_spoke": False},
        {"packet": 2, "number": 2, "engine_spoke": False, "principal_spoke": True},
    ]
    verdicts = {(1, 1): True, (1, 2): False, (2, 1): True, (2, 2): True}
    got = readers.stream_figures(key, verdicts)
    assert got["speaks_readers_would_make"] == {"moments": 3, "readers_agree": 2, "share": 0.6667}
    assert got["speaks_where_the_principal_spoke"] == {"moments": 1, "readers_agree": 1, "share": 1.0}
    assert got["speaks_where_the_principal_did_not"] == {"moments": 2, "readers_agree": 1, "share": 0.5}
    assert got["silences_readers_would_keep"] == {"moments": 1, "readers_agree": 0, "share": 0.0}
