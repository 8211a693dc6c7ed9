"""Replay with the hybrid engine and the LLM judge against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from benchmark.replay import main
from benchmark.scoring.data import FIXTURES
from testkit.fake_openai import ScriptedOpenAI

app = typer.Typer()
app.command()(main)


def script(prompt: str) -> str:
    if '{"verdicts"' in prompt:
        return json.dumps({"verdicts": [{"index": 0, "covered": True}]})
    if '"points"' in prompt:
        return json.dumps({"points": [{"point": "the reply", "attribution": "context", "expected_index": None}]})
    return json.dumps({"thoughts": "a scripted delegate: answers every candidate", "speak": "I will check the release status."})


def test_hybrid_engine_and_llm_judge_write_their_figures(tmp_path, monkeypatch):
    fixture = sorted(FIXTURES.glob("*.json"))[0]
    with ScriptedOpenAI(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        result = CliRunner().invoke(
            app, ["--data", str(fixture), "--engine", "hybrid", "--judge", "llm", "--out", str(tmp_path), "--mode", "both",
                  "--cache", str(tmp_path / "cache")]
        )
        assert result.exit_code == 0, result.output
        engage_prompts = [p for p in server.prompts if '{"verdicts"' not in p and '"points"' not in p]
        sent = len(server.prompts)
    report = json.loads((tmp_path / "report.json").read_text())
    # The LLM is asked only on candidates: far fewer calls than utterances replayed.
    assert 0 < report["llm_calls_per_100_utterances"] <= 30
    assert report["stream"]["llm_calls_per_100_utterances"] == report["llm_calls_per_100_utterances"]
    # Every request reached the server or the run's cache (a prompt asked twice in one run is answered once).
    run = report["llm_run"]
    assert run["calls"] == sent and run["cache_hits"] > 0
    assert len(engage_prompts) <= report["llm"]["llm_requests"] <= run["calls"] + run["cache_hits"]
    assert run["response_format"] == "json_schema" and run["prompt_tokens"] > 0
    # The scripted model answers every candidate with its own words, which the LLM judge then grades.
    assert report["response_rate"]["all"] > 0
    responses = {json.loads(line)["response"] for line in (tmp_path / "cases.jsonl").read_text().splitlines()}
    assert "I will check the release status." in responses
    assert report["engine"] == "hybrid" and report["judge"] == "llm"
    agreement = report["judge_agreement"]
    assert agreement["responses"] > 0 and agreement["llm_judge_failures"] == 0
    # The scripted judge calls everything covered; the offline judge does not for this generic reply.
    assert report["loose_recall"]["responded"] == 1.0
    assert agreement["loose"]["agreement"] < 1.0
