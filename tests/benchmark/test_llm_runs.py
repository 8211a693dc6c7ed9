"""A benchmark run against a model server: answers bound to the reply's schema (or plain JSON where a server refuses
schemas), calls side by side, every answer cached on disk (a re-run asks nothing, a cut-off run asks only what is
missing), rate limits waited out, and what the run cost. Against the scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from benchmark.replay import main
from benchmark.scoring.data import FIXTURES
from testkit.fake_openai import Reply, ScriptedOpenAI

app = typer.Typer()
app.command()(main)

FIXTURE = sorted(FIXTURES.glob("*.json"))[0]


def script(prompt: str) -> str:
    if '{"verdicts"' in prompt:
        return json.dumps({"verdicts": [{"index": 0, "covered": True}]})
    if '"points"' in prompt:
        return json.dumps({"points": [{"point": "the reply", "attribution": "context", "expected_index": None}]})
    return json.dumps({"thoughts": "scripted", "scenario": "implicit_cue", "speak": "I will check the release status."})


def replay(out: Path, server: ScriptedOpenAI, *extra: str) -> dict:
    """A short replay; the decision's budget is generous, so that a cold start on a busy machine is no fallback."""
    result = CliRunner().invoke(
        app,
        ["--data", str(FIXTURE), "--engine", "llm", "--judge", "llm", "--mode", "snapshot", "--limit", "12",
         "--base-url", server.base_url, "--model", "scripted-model", "--out", str(out), "--timeout", "30", *extra],
        env={"OPENAI_API_KEY": "test-key"},
    )
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text())


def figures(report: dict) -> dict:
    """The run's figures without what a run's own timing or cost accounting adds."""
    return {k: v for k, v in report.items() if k not in ("llm_run", "latency_ms", "cases_per_second", "llm")}


def test_answers_are_bound_to_the_reply_schema_and_the_cost_is_reported(tmp_path):
    with ScriptedOpenAI(script) as server:
        report = replay(tmp_path / "run", server, "--cache", str(tmp_path / "cache"), "--price-in", "2", "--price-out", "8")
        formats = {b["response_format"]["type"] for b in server.bodies}
    run = report["llm_run"]
    assert formats == {"json_schema"} and run["response_format"] == "json_schema"
    assert report["llm"]["llm_fallbacks"] == 0
    assert run["calls"] == len(server.prompts) > 0
    assert run["cost_usd"] == round((run["prompt_tokens"] * 2 + run["completion_tokens"] * 8) / 1e6, 6) > 0


def test_a_server_that_refuses_schemas_is_asked_for_json_objects_from_then_on_and_the_report_says_so(tmp_path):
    with ScriptedOpenAI(script, refuse_schema=True) as server:
        report = replay(tmp_path / "run", server, "--cache", str(tmp_path / "cache"), "--concurrency", "1")
        refused = server.refused
        formats = [b["response_format"]["type"] for b in server.bodies]
        assert refused == 1, "asked with a schema once, then never again"
        assert formats and set(formats) == {"json_object"}, "every answer after the refusal was asked for as a JSON object"
        assert server.bodies[0]["response_format"]["schema"]["required"] == ["thoughts", "scenario", "speak"]
        assert report["llm_run"]["response_format"] == "json_object with the schema"
        assert report["llm"]["llm_fallbacks"] == 0, "the plain JSON answers are used"

        server.reset()
        again = replay(tmp_path / "again", server, "--cache", str(tmp_path / "cache"), "--no-cache")
        assert server.refused == 0, "the next run asks at once in the format the server took"
    assert again["llm_run"]["response_format"] == "json_object with the schema"


def test_calls_go_side_by_side_with_the_same_figures(tmp_path):
    with ScriptedOpenAI(lambda p: Reply(content=script(p), delay_s=0.05)) as server:
        one = replay(tmp_path / "one", server, "--no-cache", "--concurrency", "1")
        alone = server.most_in_flight
        server.reset()
        eight = replay(tmp_path / "eight", server, "--no-cache", "--concurrency", "8")
        together = server.most_in_flight
    # The LLM judge asks its two questions of a reply together: one case at a time is at most two calls.
    assert alone <= 2 and together >= 4
    assert figures(one) == figures(eight)
    cases = [(tmp_path / d / "cases.jsonl").read_text().splitlines() for d in ("one", "eight")]
    strip = [[{k: v for k, v in json.loads(line).items() if k != "latency_ms"} for line in c] for c in cases]
    assert strip[0] == strip[1]


def test_a_second_run_asks_nothing_and_a_cut_off_run_asks_only_what_is_missing(tmp_path):
    cache = str(tmp_path / "cache")
    with ScriptedOpenAI(script) as server:
        whole = replay(tmp_path / "whole", server, "--cache", str(tmp_path / "whole-cache"))
        asked_whole = len(server.prompts)

        server.reset()
        again = replay(tmp_path / "again", server, "--cache", str(tmp_path / "whole-cache"))
        assert server.prompts == [], "a re-run costs no call"
        assert again["llm_run"]["cache_hits"] >= whole["llm_run"]["calls"]
        assert figures(again) == figures(whole)

        server.reset()
        cut = CliRunner().invoke(
            app,
            ["--data", str(FIXTURE), "--engine", "llm", "--judge", "llm", "--mode", "snapshot", "--limit", "12",
             "--base-url", server.base_url, "--model", "scripted-model", "--out", str(tmp_path / "cut"), "--timeout", "30",
             "--cache", cache, "--concurrency", "1", "--max-llm-calls", "5"],
            env={"OPENAI_API_KEY": "test-key"},
        )
        assert cut.exit_code == 1 and "stopped after" in cut.output
        asked_before = len(server.prompts)
        assert 0 < asked_before < asked_whole
        server.reset()
        resumed = replay(tmp_path / "resumed", server, "--cache", cache)
        assert len(server.prompts) == asked_whole - asked_before, "only the calls the cut-off run did not make"
        assert figures(resumed) == figures(whole)


def test_rate_limits_are_waited_out_as_the_server_says(tmp_path):
    seen: set[str] = set()

    def limited(prompt: str) -> Reply:
        if prompt not in seen:
            seen.add(prompt)
            return Reply(status=429, retry_after="0.05")
        return Reply(content=script(prompt))

    with ScriptedOpenAI(limited) as server:
        report = replay(tmp_path / "run", server, "--cache", str(tmp_path / "cache"))
    run = report["llm_run"]
    assert run["rate_limited"] == len(seen) > 0
    assert report["llm"]["llm_fallbacks"] == 0, "every call was answered after its wait"
