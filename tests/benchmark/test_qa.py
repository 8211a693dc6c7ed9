"""The ELITR-Bench answer benchmark and its judges: team-written questions on a shipped meeting, and the
published grades when ../shared is present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchmark.answer_judge import FEATURES, AnswerJudge, features
from benchmark.qa import calibrate, cli
from benchmark.scoring.answer_judge_llm import LLMAnswerJudge
from benchmark.scoring.data import FIXTURES
from delegate.config import Settings
from testkit.fake_openai import ScriptedOpenAI, scripted_settings

ROOT = Path(__file__).resolve().parents[2]
SHARED = next(
    (p for p in (ROOT / ".." / "shared" / "benchmark", ROOT / ".." / ".." / "shared" / "benchmark") if p.is_dir()),
    ROOT / ".." / "shared" / "benchmark",
)
QA = SHARED / "elitr-bench-qa-dev"

QUESTION = "Who is the contact person if there are audio diarization needs?"
REFERENCE = "[PERSON7]"


def test_the_offline_judge_orders_right_partial_wrong_and_refusing_answers() -> None:
    judge = AnswerJudge.shipped()
    assert len(judge.weights.weights) == len(FEATURES) == len(features("q", "a", "b"))
    right = judge.grade(QUESTION, "The contact for diarization is PERSON7.", REFERENCE)
    wrong = judge.grade(QUESTION, "The contact for diarization is PERSON3.", REFERENCE)
    refusal = judge.grade(QUESTION, "The transcript does not mention who the contact is.", REFERENCE)
    assert right >= 7.5 and right > wrong + 2 and refusal < 4.0
    q = "What are the two target languages for the shared task?"
    both = judge.grade(q, "English and Czech.", "English and Czech")
    half = judge.grade(q, "English, and maybe German.", "English and Czech")
    assert both > half
    assert 1.0 <= judge.grade(q, "", "English and Czech") <= 10.0


def graded_file(tmp_path: Path) -> Path:
    """A team-written `*_gpt-4-eval.json`: two meetings, a good, a middling and a wrong answer each."""
    def question(qid: str, q: str, ref: str, answers: list[tuple[str, str, int]]) -> dict:
        return {
            "id": qid, "question-type": "who", "answer-position": "E", "question": q, "groundtruth-answer": ref,
            "generated-responses": [
                {"model": m, "generated-response": r, "gpt-4-eval_score": str(s)} for m, r, s in answers
            ],
        }

    data = {"split": "team", "meetings": [
        {"id": "team_1", "questions": [question("1", QUESTION, REFERENCE, [
            ("big", "PERSON7 is the contact for diarization.", 10),
            ("mid", "Probably PERSON7 or PERSON3, it is not fully clear from the meeting.", 6),
            ("small", "The meeting does not mention a diarization contact.", 2)])]},
        {"id": "team_2", "questions": [question("1", "When is the next meeting?", "July 21st", [
            ("big", "The next meeting is on July 21st.", 10),
            ("mid", "Sometime in July.", 5),
            ("small", "It is not specified in the transcript.", 2)])]},
    ]}
    path = tmp_path / "team_st_gpt-4-eval.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_calibrate_reports_agreement_with_the_published_grades(tmp_path: Path) -> None:
    path = graded_file(tmp_path)
    result = calibrate(path, "offline", Settings())
    assert result["n"] == 6 and result["held_out"] and "spearman_human" not in result
    assert result["spearman"] > 0.5
    assert result["by_model"]["big"]["judge"] > result["by_model"]["small"]["judge"]
    out = tmp_path / "cal.json"
    run = CliRunner().invoke(cli, ["--calibrate", str(path), "--json", str(out)])
    assert run.exit_code == 0, run.output
    assert "Spearman" in run.output and "no human grades" in run.output
    written = json.loads(out.read_text())
    assert {"answers", "spearman", "mean_abs_diff"} <= written.keys() and len(written["answers"]) == 6


def test_benchmark_answers_team_questions_and_skips_absent_meetings(tmp_path: Path) -> None:
    questions = {"split": "team", "meetings": [
        {"id": "fixture_01_release_planning", "questions": [
            {"id": "1", "question-type": "who", "answer-position": "E",
             "question": "Who can change the privacy label?", "groundtruth-answer": "Luis Ortega"},
            {"id": "2", "question-type": "when", "answer-position": "E",
             "question": "When can the fix be merged?", "groundtruth-answer": "Tomorrow night"},
            {"id": "3", "question-type": "who", "answer-position": "E",
             "question": "Who is catering the summer party?", "groundtruth-answer": "Nobody is named"},
        ]},
        {"id": "not_in_the_data", "questions": [
            {"id": "1", "question-type": "what", "answer-position": "S",
             "question": "What was the purpose?", "groundtruth-answer": "Planning"},
        ]},
    ]}
    qfile = tmp_path / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")
    out = tmp_path / "qa" / "report.json"
    run = CliRunner().invoke(cli, ["--data", str(FIXTURES), "--questions", str(qfile), "--json", str(out)])
    assert run.exit_code == 0, run.output
    report = json.loads(out.read_text())
    assert report["questions"] == 3 and report["skipped"] == 1 and report["unanswered"] == 1
    assert set(report["score_by_type"]) == {"who", "what", "when", "howmany"}
    assert report["score_by_type"]["what"] is None and report["score_by_type"]["who"] is not None
    assert {"p50", "p95", "p99"} <= report["latency_ms"].keys()
    # "Who can change the privacy label?" is answered from the action items (Luis took it on); the party is not.
    split = report["commitment_questions"]
    assert split["from_action_items"]["questions"] == 1 and split["other_who"]["questions"] == 1
    assert (tmp_path / "qa" / "report.md").read_text().startswith("# Ask the delegate")
    assert (tmp_path / "qa" / "report.png").stat().st_size > 1000
    rows = [json.loads(line) for line in (tmp_path / "qa" / "report_answers.jsonl").read_text().splitlines()]
    assert rows[0]["answer"].startswith("Luis Ortega") and rows[0]["grade"] > rows[2]["grade"]


async def test_the_llm_judge_sends_the_rubric_and_reads_the_grade() -> None:
    with ScriptedOpenAI(lambda p: json.dumps({"feedback": "Same person.", "score": 9})) as server:
        judge = LLMAnswerJudge(scripted_settings(server.base_url))
        try:
            grade = await judge.grade(QUESTION, "It is PERSON7.", REFERENCE)
        finally:
            await judge.aclose()
        assert grade == 9.0
        prompt = server.prompts[-1]
        assert QUESTION in prompt and "It is PERSON7." in prompt and REFERENCE in prompt
        assert "10: essentially the same as the reference" in prompt


@pytest.mark.skipif(not QA.is_dir(), reason="shared ELITR-Bench QA files not available")
def test_offline_judge_agrees_with_gpt4_on_the_published_answers_held_out() -> None:
    result = calibrate(QA / "elitr-bench-qa_dev_st_gpt-4-eval.json", "offline", Settings())
    assert result["n"] == 1269
    assert result["spearman"] >= 0.6
    by_model = result["by_model"]
    # A judge that cannot tell GPT-4's answers from a 7B model's is not a judge.
    assert by_model["GPT-4"]["judge"] > by_model["Vicuna-7B-v1.5"]["judge"] + 1.0


def test_benchmark_with_the_llm_asker_and_the_llm_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    questions = {"split": "team", "meetings": [{"id": "fixture_01_release_planning", "questions": [
        {"id": "1", "question-type": "who", "answer-position": "E",
         "question": "Who can change the privacy label?", "groundtruth-answer": "Luis Ortega"},
    ]}]}
    qfile = tmp_path / "questions.json"
    qfile.write_text(json.dumps(questions), encoding="utf-8")

    def script(prompt: str) -> str:
        if "You grade an answer" in prompt:
            return json.dumps({"feedback": "Right person.", "score": 7})
        return json.dumps({"answer": "Luis Ortega can, he has admin access.", "turn_ids": [57, 999], "answered": True})

    with ScriptedOpenAI(script) as server:
        monkeypatch.setenv("DELEGATE_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("DELEGATE_LLM_API_KEY", "test-key")
        monkeypatch.setenv("DELEGATE_LLM_TIMEOUT_S", "10")
        out = tmp_path / "report.json"
        run = CliRunner().invoke(cli, ["--data", str(FIXTURES), "--questions", str(qfile), "--json", str(out),
                                       "--engine", "llm", "--judge", "llm", "--cache", str(tmp_path / "llm-cache")])
        assert run.exit_code == 0, run.output
        assert len(server.prompts) == 2 and "Who can change the privacy label?" in server.prompts[0]
    report = json.loads(out.read_text())
    assert report["engine"] == "llm" and report["judge"] == "llm" and report["score_mean"] == 7.0
    # The asker's question and the judge's grade both went through the run's ledger (cached, costed).
    assert report["llm_run"]["calls"] == 2 and report["llm_run"]["prompt_tokens"] > 0
    row = json.loads((tmp_path / "report_answers.jsonl").read_text().splitlines()[0])
    # Turn 999 was never shown to the model: it is not cited.
    assert row["answer"] == "Luis Ortega can, he has admin access." and row["turn_ids"] == [57]
