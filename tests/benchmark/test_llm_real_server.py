"""The LLM paths against a real model server: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct
on loopback (the `llm-local` extra; CI installs it). The model's quality is not the point; the path is: every answer
parsed under the reply's schema, the cache answering a second run, the cost reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchmark.replay import main
from benchmark.scoring.data import FIXTURES
from testkit.llama_server import MODEL_NAME, LlamaNotInstalled, llama_server

pytestmark = pytest.mark.slow

app = typer.Typer()
app.command()(main)
FIXTURE = sorted(FIXTURES.glob("*.json"))[0]


@pytest.fixture(scope="module")
def server_url():
    try:
        with llama_server() as url:
            yield url
    except LlamaNotInstalled as e:  # a server that is installed and does not start fails the test
        pytest.skip(str(e))


def replay(url: str, out: Path, cache: Path, *extra: str) -> dict:
    result = CliRunner().invoke(
        app,
        ["--data", str(FIXTURE), "--base-url", url, "--model", MODEL_NAME, "--timeout", "600", "--max-tokens", "400",
         "--concurrency", "2", "--cache", str(cache), "--price-in", "0.1", "--price-out", "0.2", "--out", str(out), *extra],
        env={"OPENAI_API_KEY": "unused"},
    )
    assert result.exit_code == 0, result.output
    return json.loads((out / "report.json").read_text())


def test_a_real_server_answers_under_the_schema_and_a_second_run_is_free(server_url, tmp_path):
    args = ("--engine", "llm", "--judge", "llm", "--mode", "snapshot", "--limit", "3")
    first = replay(server_url, tmp_path / "first", tmp_path / "cache", *args)
    run = first["llm_run"]
    # llama-cpp-python's server takes no json_schema format but binds a JSON object to the schema given with it.
    assert run["response_format"] == "json_object with the schema"
    assert run["calls"] > 0 and run["prompt_tokens"] > 0 and run["completion_tokens"] > 0
    assert run["cost_usd"] == round((run["prompt_tokens"] * 0.1 + run["completion_tokens"] * 0.2) / 1e6, 6)
    reasons = first["llm"]["llm_fallback_reasons"]
    assert "invalid_output" not in reasons, f"an answer outside the reply's schema: {reasons}"
    assert set(reasons) <= {"unspeakable", "private_leak", "too_long"}, reasons
    if "llm_judge" in first:
        assert first["llm_judge"]["fell_back_to_offline"] == 0, "every judgement parsed under its schema"

    again = replay(server_url, tmp_path / "again", tmp_path / "cache", *args)
    # The refused first asks (HTTP 500 from this server) were calls too; the answers were all kept.
    assert again["llm_run"]["calls"] == 0 and again["llm_run"]["cache_hits"] > 0
    assert again["response_rate"] == first["response_rate"]


def test_the_hybrid_engine_on_a_real_server_asks_only_where_it_is_unsure(server_url, tmp_path):
    report = replay(server_url, tmp_path / "hybrid", tmp_path / "cache", "--engine", "hybrid", "--mode", "stream", "--limit", "30")
    assert 0 < report["llm_calls_per_100_utterances"] <= 50
    assert "invalid_output" not in report["llm"]["llm_fallback_reasons"], "every answer parsed under the reply's schema"
    assert report["llm_run"]["calls"] > 0
