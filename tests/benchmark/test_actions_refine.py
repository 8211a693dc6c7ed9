"""`python -m benchmark.actions --refine`: the fixtures scored with the LLM pass, against a scripted server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmark.actions import GOLD, app
from testkit.fake_openai import Reply, ScriptedOpenAI

pytestmark = pytest.mark.skipif(not GOLD.is_dir(), reason="fixture action gold not written yet")


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(lambda prompt: Reply(status=500)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("DELEGATE_LLM_RETRIES", "0")
        yield server


def scores(tmp_path: Path, *args: str) -> tuple[dict[str, float], str]:
    out = tmp_path / f"scores{len(args)}.json"
    cache = ["--cache", str(tmp_path / "llm-cache")] if "--refine" in args else []
    result = CliRunner().invoke(app, ["--json", str(out), *args, *cache])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text()), result.output


def test_a_failing_llm_leaves_the_embedded_figures(tmp_path: Path, llm: ScriptedOpenAI) -> None:
    embedded, _ = scores(tmp_path)
    refined, output = scores(tmp_path, "--refine")
    assert refined == embedded
    assert len(llm.prompts) > 0
    assert f"LLM refinement: {len(llm.prompts)} calls, {len(llm.prompts)} fallbacks (http_error" in output


def test_what_the_llm_rejects_is_left_out(tmp_path: Path, llm: ScriptedOpenAI) -> None:
    llm.reset(lambda prompt: json.dumps({"actions": []}))
    refined, output = scores(tmp_path, "--refine")
    assert refined["proposals_per_hour"] == 0.0 and refined["recall"] == 0.0
    m = re.search(r"LLM refinement: (\d+) calls, 0 fallbacks, 0 refined, (\d+) rejected", output)
    assert m is not None, output
    assert int(m[1]) == len(llm.prompts) and int(m[2]) >= int(m[1])
