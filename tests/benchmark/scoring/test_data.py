import json
from pathlib import Path

import pytest

from benchmark.scoring.data import BenchDataError, import_elitr_transcript, load

GOOD = {
    "format": "delegate-bench/1",
    "meeting_id": "t1",
    "attendees": ["A", "B"],
    "utterances": [{"id": 0, "speaker": "A", "text": "B, can you help?"}, {"id": 1, "speaker": "B", "text": "Sure."}],
    "profiles": {"B": {"intents": [], "background": []}},
    "cases": [{"id": "t1/B/0", "scenario": "explicit_cue", "principal": "B", "last_utterance": 0, "response_utterances": [1], "expected_points": ["Agrees"]}],
}


def write(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / "m.json"
    p.write_text(json.dumps(data))
    return p


def test_loads_a_good_file(tmp_path):
    [m] = load(write(tmp_path, GOOD))
    assert m.meeting_id == "t1" and len(m.cases) == 1


def test_missing_field_names_file_and_field(tmp_path):
    bad = {k: v for k, v in GOOD.items() if k != "attendees"}
    with pytest.raises(BenchDataError, match=r"m\.json.*\n.*attendees"):
        load(write(tmp_path, bad))


def test_bad_utterance_id(tmp_path):
    bad = json.loads(json.dumps(GOOD))
    bad["utterances"][1]["id"] = 5
    with pytest.raises(BenchDataError, match=r"utterances\[1\]\.id is 5"):
        load(write(tmp_path, bad))


def test_unknown_principal(tmp_path):
    bad = json.loads(json.dumps(GOOD))
    bad["cases"][0]["principal"] = "Z"
    with pytest.raises(BenchDataError, match=r"principal 'Z' has no entry in profiles"):
        load(write(tmp_path, bad))


def test_invalid_json_and_wrong_format(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(BenchDataError, match="invalid JSON at line 1"):
        load(p)
    p.write_text(json.dumps({**GOOD, "format": "other/2"}))
    with pytest.raises(BenchDataError, match="format"):
        load(p)


def test_empty_folder(tmp_path):
    with pytest.raises(BenchDataError, match="no \\*.json"):
        load(tmp_path)


def test_import_elitr_transcript():
    raw = "(PERSON1) Hello everyone.\nLet us start.\n\n(PERSON2) Hi.\n(PERSON1) So [PERSON2], the data?\n"
    utts = import_elitr_transcript(raw)
    assert [(u.speaker, u.text) for u in utts] == [
        ("PERSON1", "Hello everyone. Let us start."),
        ("PERSON2", "Hi."),
        ("PERSON1", "So [PERSON2], the data?"),
    ]


def test_shipped_fixtures_load_and_have_enough_cases():
    meetings = load()
    assert len(meetings) >= 4
    assert sum(len(m.cases) for m in meetings) >= 80
    assert {c.scenario.value for m in meetings for c in m.cases} == {"explicit_cue", "implicit_cue", "chime_in"}
