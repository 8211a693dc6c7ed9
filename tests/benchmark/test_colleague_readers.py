"""The blind readers' packet: each reply with only its moment (the last turns), drawn across runs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from benchmark.colleague_readers import app
from benchmark.scoring.data import FIXTURES, load
from delegate.decide.reply.spoken import unmask


def test_the_packet_holds_the_moment_and_the_reply_only(tmp_path: Path) -> None:
    meeting = load(FIXTURES / "fixture_01_release_planning.json")[0]
    matched = [c for c in meeting.cases if c.variant == "matched"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": c.id, "variant": "matched", "spoke": k != 0, "response": f"reply {k}"}) + "\n"
                             for k, c in enumerate(matched)), encoding="utf-8")
    out = tmp_path / "readers.jsonl"
    run = CliRunner().invoke(app, ["--cases", str(cases), "--data", str(FIXTURES / "fixture_01_release_planning.json"),
                                   "--out", str(out), "--n", "40"])
    assert run.exit_code == 0, run.output
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(matched) - 1  # the case that stayed silent is no reply to judge
    by_id = {c.id: c for c in matched}
    for row in rows:
        case = by_id[row["id"]]
        assert set(row) == {"n", "question", "id", "speaking_for", "context", "reply"}
        said = meeting.utterances[case.last_utterance - 2 : case.last_utterance + 1]
        assert [t["speaker"] for t in row["context"]] == [meeting.names.get(u.speaker, u.speaker) for u in said]
        assert [t["text"] for t in row["context"]] == [unmask(u.text, meeting.names) for u in said]
        assert not any("[PERSON" in t["text"] for t in row["context"])


def test_unpaired_runs_are_one_line(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("", encoding="utf-8")
    run = CliRunner().invoke(app, ["--cases", str(cases), "--out", str(tmp_path / "o.jsonl"), "--data", str(FIXTURES), "--data", str(FIXTURES)])
    assert run.exit_code == 2 and "one --data per --cases" in run.output


def test_a_second_round_draws_none_of_the_first_rounds_moments(tmp_path: Path) -> None:
    data = FIXTURES / "fixture_01_release_planning.json"
    matched = [c for c in load(data)[0].cases if c.variant == "matched"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": c.id, "variant": "matched", "spoke": True, "response": "r"}) + "\n" for c in matched), encoding="utf-8")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    half = len(matched) // 2
    args = ["--cases", str(cases), "--data", str(data)]
    assert CliRunner().invoke(app, [*args, "--out", str(first), "--n", str(half)]).exit_code == 0
    run = CliRunner().invoke(app, [*args, "--out", str(second), "--n", "40", "--exclude", str(first), "--seed", "8"])
    assert run.exit_code == 0, run.output
    ids = lambda p: {json.loads(x)["id"] for x in p.read_text(encoding="utf-8").splitlines()}  # noqa: E731
    assert ids(first) and ids(second) and not ids(first) & ids(second)
    assert ids(first) | ids(second) == {c.id for c in matched}
    # A file that is no packet is one line, not a traceback.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    run = CliRunner().invoke(app, [*args, "--out", str(second), "--exclude", str(bad)])
    assert run.exit_code == 2 and "--exclude takes a packet" in run.output
