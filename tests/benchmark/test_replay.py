import json

import typer
from typer.testing import CliRunner

from benchmark.replay import main
from benchmark.scoring.data import FIXTURES

app = typer.Typer()
app.command()(main)
runner = CliRunner()

REPORT_KEYS = {
    "engine", "judge", "cases", "response_rate", "silence_rate", "noisy_name_response_rate", "loose_recall",
    "strict_recall", "attribution", "response_words", "meeting_correctness", "latency_ms", "cases_per_second",
    "private_leak_rate", "speech",
}


def test_end_to_end_replay_writes_every_key(tmp_path):
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    result = runner.invoke(app, ["--data", str(fixture), "--out", str(tmp_path), "--mode", "both"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report) >= REPORT_KEYS
    assert set(report["response_rate"]) == {"all", "explicit_cue", "implicit_cue", "chime_in"}
    assert set(report["silence_rate"]) >= {"all", "explicit_cue", "implicit_cue", "none"}
    assert set(report["attribution"]) == {"expected", "context", "transcript", "hallucination"}
    assert report["cases"]["matched"] > 0 and report["cases"]["mismatched"] > 0 and report["cases"]["noisy_name"] > 0
    assert 0 <= report["response_rate"]["all"] <= 1
    assert report["stream"]["mode"] == "stream" and 0 <= report["stream"]["speak_precision"] <= 1
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    assert {"id", "variant", "scenario", "principal", "spoke", "response", "matched_expected_points", "attribution", "latency_ms"} <= set(row)
    assert len(lines) == sum(report["cases"].values())
    for name in ("report.md", "response_vs_silence.png", "recall_attribution.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_no_derive_replays_only_file_cases(tmp_path):
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    result = runner.invoke(app, ["--data", str(fixture), "--out", str(tmp_path), "--no-derive", "--mode", "snapshot"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["cases"]["mismatched"] == 0 and report["cases"]["noisy_name"] == 0


def test_bad_input_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "delegate-bench/1"}')
    result = runner.invoke(app, ["--data", str(bad), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "bad.json" in result.output


def test_judge_separates_oracle_from_shuffled(tmp_path):
    figures = {}
    for engine in ("oracle", "shuffled"):
        out = tmp_path / engine
        result = runner.invoke(app, ["--engine", engine, "--variants", "matched", "--mode", "snapshot", "--out", str(out)])
        assert result.exit_code == 0, result.output
        figures[engine] = json.loads((out / "report.json").read_text())["loose_recall"]["responded"]
    assert figures["oracle"] >= 0.85
    assert figures["shuffled"] <= 0.25


def _dead_llm(monkeypatch):
    # Port 9 (discard) refuses connections on loopback: every consultation fails at once.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("DELEGATE_LLM_TIMEOUT_S", "0.3")
    monkeypatch.setenv("DELEGATE_LLM_RETRIES", "0")


def test_an_llm_run_whose_every_call_failed_says_so_and_fails(tmp_path, monkeypatch):
    _dead_llm(monkeypatch)
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    result = runner.invoke(app, ["--data", str(fixture), "--engine", "llm", "--limit", "6", "--mode", "snapshot", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "LLM consultations failed" in " ".join(result.output.split())
    assert "fell back to the embedded engine" in (tmp_path / "report.md").read_text()


def test_limit_caps_stream_mode_and_the_expected_calls_are_announced(tmp_path, monkeypatch):
    _dead_llm(monkeypatch)
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    result = runner.invoke(app, ["--data", str(fixture), "--engine", "llm", "--limit", "7", "--mode", "stream", "--out", str(tmp_path)])
    assert "makes up to 7 LLM calls" in " ".join(result.output.split())
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["decisions"] == 7
    assert report["llm"]["llm_calls"] == 7


def test_max_llm_calls_stops_the_run(tmp_path, monkeypatch):
    _dead_llm(monkeypatch)
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    result = runner.invoke(app, ["--data", str(fixture), "--engine", "llm", "--max-llm-calls", "3", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "stopped after 3 LLM calls" in " ".join(result.output.split())


def test_agreement_with_no_llm_judgement_is_null_not_zero():
    from benchmark.replay import PairedJudge

    assert PairedJudge(llm=None).agreement() is None  # type: ignore[arg-type]


def test_weights_folds_decide_each_meeting_with_its_own_file(tmp_path):
    from importlib import resources

    from benchmark.scoring.data import load

    fixture = sorted(FIXTURES.glob("*.json"))[0]
    folds = tmp_path / "folds"
    folds.mkdir()
    missing = runner.invoke(app, ["--data", str(fixture), "--out", str(tmp_path / "x"), "--weights-folds", str(folds)])
    assert missing.exit_code == 2 and "no fold weights" in " ".join(missing.output.split())
    shipped = resources.files("delegate.weights").joinpath("turn_taking.json").read_text()
    (folds / f"{load(fixture)[0].meeting_id}.json").write_text(shipped)
    figures = []
    # The shipped weights hold the floor reader's stack, switched off in the product (DELEGATE_FLOOR_TEXT): off here too.
    for extra in ([], ["--weights-folds", str(folds), "--no-floor-text"]):
        out = tmp_path / f"run{len(extra)}"
        result = runner.invoke(app, ["--data", str(fixture), "--out", str(out), "--mode", "snapshot", *extra])
        assert result.exit_code == 0, result.output
        figures.append(json.loads((out / "report.json").read_text())["response_rate"])
    assert figures[0] == figures[1]


def test_rules_off_ablates_held_out_and_names_the_rules_it_knows(tmp_path):
    from importlib import resources

    from benchmark.scoring.data import load
    from delegate.decide.reply.compose import ComposeSettings

    fixture = sorted(FIXTURES.glob("*.json"))[0]
    folds = tmp_path / "folds"
    folds.mkdir()
    (folds / f"{load(fixture)[0].meeting_id}.json").write_text(resources.files("delegate.weights").joinpath("turn_taking.json").read_text())
    unknown = runner.invoke(app, ["--data", str(fixture), "--out", str(tmp_path / "x"), "--weights-folds", str(folds), "--rules-off", "names"])
    assert unknown.exit_code == 2 and "addressed-elsewhere" in unknown.output
    alone = runner.invoke(app, ["--data", str(fixture), "--out", str(tmp_path / "x"), "--rules-off", "partner"])
    assert alone.exit_code == 2 and "--weights-folds" in alone.output
    floors = ComposeSettings.item_floor, ComposeSettings.intent_floor
    said = []
    for extra in ([], ["--rules-off", "nothing-fits,addressed-elsewhere"]):
        out = tmp_path / f"run{len(extra)}"
        result = runner.invoke(app, ["--data", str(fixture), "--out", str(out), "--mode", "snapshot", "--weights-folds", str(folds), *extra])
        assert result.exit_code == 0, result.output
        said.append(json.loads((out / "report.json").read_text())["response_rate"]["all"])
    assert said[1] >= said[0]  # with compose's floors off, a granted floor is always answered
    assert (ComposeSettings.item_floor, ComposeSettings.intent_floor) == floors  # and the floors come back after the run


def test_speaking_level_decides_every_principal_and_addressed_speaks_least(tmp_path):
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    speaks = {}
    for level in ("addressed", "forward"):
        result = runner.invoke(app, ["--data", str(fixture), "--mode", "stream", "--speaking", level, "--out", str(tmp_path / level)])
        assert result.exit_code == 0, result.output
        speaks[level] = json.loads((tmp_path / level / "report.json").read_text())["speaks_per_hour"]
    assert 0 < speaks["addressed"] < speaks["forward"]
    wrong = runner.invoke(app, ["--data", str(fixture), "--speaking", "loud", "--out", str(tmp_path / "x")])
    assert wrong.exit_code == 2 and "loud" in wrong.output
