"""`python -m benchmark.qa`: ask the delegate ELITR-Bench's questions about whole meetings and grade the answers.

    python -m benchmark.qa --data MEETINGS --questions FILE [--engine local|llm|hybrid] [--judge offline|llm] --json OUT
    python -m benchmark.qa --calibrate FILE [--judge offline|llm] [--json OUT]

The first answers every question with the transcript up to the end of its meeting (ELITR-Bench's setting),
grades each answer 1-10 against the ground truth and writes OUT (report.json), report.md and a PNG that
sets the mean grade beside the published models'. The second grades every published answer of a
`*_gpt-4-eval.json` file and prints how the judge agrees with GPT-4's grades (and human ones where present).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import typer
from pydantic import BaseModel, ConfigDict

from benchmark.answer_judge import AnswerJudge, agreement, feature_matrix, held_out, load_graded
from benchmark.llm.run import DEFAULT_CACHE, DEFAULT_CONCURRENCY, LLMRun
from benchmark.scoring.data import BenchDataError, load
from delegate.ask import build_asker
from delegate.ask.base import Answer, Asker
from delegate.ask.commitments import Commitments
from delegate.ask.embedded import QuestionType
from delegate.config import Settings
from delegate.language.questions import question_type
from delegate.meeting import MeetingState

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PUBLISHED_FILE = "elitr-bench-qa_dev_st_gpt-4-eval.json"
"""Looked for beside `--questions`: the published models' answers and GPT-4 grades, for comparison."""
LARGE_MODELS = ("GPT-4", "GPT-3.5")


class Question(BaseModel):
    model_config = ConfigDict(frozen=True)

    meeting_id: str
    id: str
    question_type: QuestionType
    question: str
    reference: str


def load_questions(path: Path) -> list[Question]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Question(
            meeting_id=m["id"],
            id=str(q["id"]),
            question_type=q["question-type"],
            question=q["question"],
            reference=q["groundtruth-answer"],
        )
        for m in data["meetings"]
        for q in m["questions"]
    ]


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3), "p99": round(float(p99), 3), "max": round(max(values), 3)}


def published_means(path: Path, meetings: set[str]) -> dict[str, dict[str, float]]:
    """Each published model's mean grade by GPT-4 and by the offline judge, on the questions of `meetings`
    (the ones the delegate was asked).

    The offline judge's grades of these answers are held out by meeting: its shipped weights were fitted
    on them, and in-sample grades would flatter the comparison.
    """
    answers = load_graded(path)
    by_model: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for a, grade in zip(answers, held_out(answers), strict=True):
        if a.meeting_id in meetings:
            by_model[a.model].append((a.gpt4, float(grade)))
    return {
        model: {
            "gpt4_judge": round(float(np.mean([g for g, _ in rows])), 2),
            "offline_judge": round(float(np.mean([o for _, o in rows])), 2),
        }
        for model, rows in by_model.items()
    }


async def _answer_all(
    questions: list[Question], meetings: dict[str, MeetingState], asker: Asker
) -> tuple[list[tuple[Question, Answer, bool]], list[float]]:
    """Every answer (and whether it was its meeting's first question), and the CPU milliseconds each took:
    on a shared machine the wall-clock latency also counts the waits for a core."""
    out, cpu_ms = [], []
    seen: set[str] = set()
    for q in questions:
        first = q.meeting_id not in seen
        seen.add(q.meeting_id)
        cpu = time.process_time()
        answer = await asker.ask(meetings[q.meeting_id], q.question, None, "meeting")
        cpu_ms.append((time.process_time() - cpu) * 1000)
        out.append((q, answer, first))
    return out, cpu_ms


def _meeting_states(data: Path, wanted: set[str], warm: Asker) -> dict[str, MeetingState]:
    states = {}
    for m in load(data):
        if m.meeting_id not in wanted:
            continue
        state = MeetingState(m.meeting_id, attendees=list(m.attendees), names=dict(m.names))
        state.extend(m.utterances)
        # Live, each turn is embedded as it arrives; the BM25 index is left for the first question.
        warm.observe(state)
        states[m.meeting_id] = state
    return states


async def _grade_all(
    rows: list[tuple[Question, Answer, bool]], judge_name: str, settings: Settings, run: LLMRun | None = None
) -> list[float]:
    if judge_name == "offline":
        judge = AnswerJudge.shipped()
        return [judge.grade(q.question, a.text, q.reference) for q, a, _ in rows]
    from benchmark.scoring.answer_judge_llm import LLMAnswerJudge

    run = run or LLMRun(settings, concurrency=1, cache=None)
    llm = LLMAnswerJudge(settings, run.client)
    gate = asyncio.Semaphore(run.concurrency)

    async def one(question: str, text: str, reference: str) -> float:
        async with gate:
            return await llm.grade(question, text, reference)

    try:
        return list(await asyncio.gather(*(one(q.question, a.text, q.reference) for q, a, _ in rows)))
    finally:
        await llm.aclose()


async def _answer_and_grade(
    questions: list[Question], states: dict[str, MeetingState], asker: Asker, judge: str, settings: Settings, run: LLMRun | None
) -> tuple[list[tuple[Question, Answer, bool]], list[float], list[float]]:
    """Answers, then grades, in one event loop: the run's one client is bound to the loop it started on."""
    try:
        rows, cpu_ms = await _answer_all(questions, states, asker)
        return rows, cpu_ms, await _grade_all(rows, judge, settings, run)
    finally:
        if run is not None:
            await run.aclose()


def build_report(
    rows: list[tuple[Question, Answer, bool]],
    grades: list[float],
    skipped: int,
    engine: str,
    judge: str,
    published: dict[str, dict[str, float]],
    meeting_sizes: dict[str, int],
) -> dict[str, Any]:
    by_type: dict[str, list[float]] = defaultdict(list)
    for (q, _, _), g in zip(rows, grades, strict=True):
        by_type[q.question_type.value].append(g)
    longest = max(meeting_sizes, key=lambda m: meeting_sizes[m]) if meeting_sizes else None
    warm = [a.latency_ms for _, a, first in rows if not first]
    report: dict[str, Any] = {
        "engine": engine,
        "judge": judge,
        "questions": len(rows),
        "score_mean": round(float(np.mean(grades)), 3) if grades else None,
        "score_by_type": {t.value: round(float(np.mean(by_type[t.value])), 3) if by_type[t.value] else None for t in QuestionType},
        "questions_by_type": {t.value: len(by_type[t.value]) for t in QuestionType},
        "unanswered": sum(not a.answered for _, a, _ in rows),
        "skipped": skipped,
        "latency_ms": percentiles([a.latency_ms for _, a, _ in rows]),
        # A meeting's first question builds its BM25 index; later ones find it current, as questions in a
        # live session do (the session rebuilds it in a worker thread once the meeting has been asked about).
        "latency_ms_index_ready": percentiles(warm),
        "latency_ms_index_build": percentiles([a.latency_ms for _, a, first in rows if first]),
        "longest_meeting": {
            "meeting_id": longest,
            "utterances": meeting_sizes.get(longest, 0) if longest else 0,
            "latency_ms": percentiles([a.latency_ms for q, a, _ in rows if q.meeting_id == longest]),
            "latency_ms_index_ready": percentiles(
                [a.latency_ms for q, a, first in rows if q.meeting_id == longest and not first]
            ),
        },
        "published": published,
    }
    return report


def commitment_split(rows: list[tuple[Question, Answer, bool]], grades: list[float], states: dict[str, MeetingState]) -> dict[str, Any]:
    """Who took on / committed to what, apart from the rest: the questions the delegate answers from the
    meeting's action items (`delegate.ask.commitments`), and the who- and what-questions it does not."""
    taken = Commitments()
    groups: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for (q, a, _), g in zip(rows, grades, strict=True):
        kind = question_type(q.question)
        if taken.answer(states[q.meeting_id], q.question, kind) is not None:
            group = "from_action_items"
        else:
            group = f"other_{kind.value}" if kind in (QuestionType.who, QuestionType.what) else "other"
        groups[group].append((g, a.answered))
    return {
        name: {"questions": len(v), "score_mean": round(float(np.mean([g for g, _ in v])), 3), "unanswered": sum(not ok for _, ok in v)}
        for name, v in sorted(groups.items())
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Ask the delegate on ELITR-Bench: engine `{report['engine']}`, judge `{report['judge']}`",
        "",
        f"- Questions answered and graded: {report['questions']} (skipped, meeting not in the data: {report['skipped']})",
        f"- Mean grade (1-10): **{report['score_mean']}**; unanswered: {report['unanswered']}",
        "- By type: " + ", ".join(f"{t} {v} ({report['questions_by_type'][t]})" for t, v in report["score_by_type"].items()),
        "- Who took on what (answered from the action items) and the other who/what questions (as the delegate reads them): "
        + ", ".join(f"{k} {v['score_mean']} ({v['questions']})" for k, v in report.get("commitment_questions", {}).items()),
        f"- Latency per question: p50 {report['latency_ms']['p50']} ms, p95 {report['latency_ms']['p95']} ms, "
        f"p99 {report['latency_ms']['p99']} ms; index ready (all but a meeting's first question): "
        f"p99 {report['latency_ms_index_ready']['p99']} ms; first question, building the BM25 index: "
        f"p99 {report['latency_ms_index_build']['p99']} ms",
        f"- CPU time per question (process, all threads): p50 {report.get('cpu_ms', {}).get('p50')} ms, "
        f"p99 {report.get('cpu_ms', {}).get('p99')} ms",
        f"- Longest meeting ({report['longest_meeting']['meeting_id']}, {report['longest_meeting']['utterances']} turns): "
        f"p99 {report['longest_meeting']['latency_ms']['p99']} ms, index ready "
        f"p99 {report['longest_meeting']['latency_ms_index_ready']['p99']} ms",
        "",
    ]
    if report["published"]:
        lines += [
            "| model | grade by GPT-4 (published) | grade by our offline judge (held out by meeting) |",
            "|---|---|---|",
        ]
        for model, m in sorted(report["published"].items(), key=lambda kv: -kv[1]["gpt4_judge"]):
            lines.append(f"| {model} | {m['gpt4_judge']} | {m['offline_judge']} |")
        lines.append(f"| **delegate ({report['engine']})** | — | **{report['score_mean']}** ({report['judge']} judge) |")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    published = report["published"]
    names = sorted(published, key=lambda m: -published[m]["gpt4_judge"])
    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(names) + 1)
    ax.bar(x[:-1] - 0.2, [published[n]["gpt4_judge"] for n in names], 0.4, label="published, GPT-4 judge", color="grey")
    ax.bar(x[:-1] + 0.2, [published[n]["offline_judge"] for n in names], 0.4, label="published, offline judge", color="tab:gray", alpha=0.5)
    ax.bar([x[-1]], [report["score_mean"] or 0], 0.5, label=f"delegate ({report['engine']}), {report['judge']} judge", color="tab:blue")
    ax.set_xticks(x, [*names, f"delegate\n{report['engine']}"], rotation=35, ha="right", fontsize=8)
    ax.set_ylim(0, 10)
    ax.set_ylabel("mean grade (1-10)")
    ax.set_title(f"ELITR-Bench questions (single turn), the {report['questions']} asked here")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _outputs(out: Path) -> tuple[Path, Path, Path]:
    if out.suffix == ".json":
        return out, out.with_suffix(".md"), out.with_suffix(".png")
    return out / "report.json", out / "report.md", out / "scores.png"


def run_benchmark(
    data: Path, questions_file: Path, engine: str, judge: str, out: Path, settings: Settings, run: LLMRun | None = None
) -> dict[str, Any]:
    questions = load_questions(questions_file)
    # An LLM asker asks through the run's client too: its answers are cached and costed with the judge's.
    asker = build_asker(engine, settings, run.client if run is not None and engine != "local" else None)
    states = _meeting_states(data, {q.meeting_id for q in questions}, asker)
    present = [q for q in questions if q.meeting_id in states]
    rows, cpu_ms, grades = asyncio.run(_answer_and_grade(present, states, asker, judge, settings, run))
    published_path = questions_file.parent / PUBLISHED_FILE
    published = published_means(published_path, set(states)) if published_path.exists() else {}
    report = build_report(
        rows, grades, len(questions) - len(present), engine, judge, published, {m: len(s) for m, s in states.items()}
    )
    report["cpu_ms"] = percentiles(cpu_ms)
    if run is not None:
        report["llm_run"] = run.figures()
        run.remember()
    report["commitment_questions"] = commitment_split(rows, grades, states)
    json_path, md_path, png_path = _outputs(out)
    report["files"] = [str(json_path), str(md_path), str(png_path)]
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    md_path.write_text(markdown(report), encoding="utf-8")
    plot(report, png_path)
    answers_path = json_path.with_name(json_path.stem + "_answers.jsonl")
    with answers_path.open("w", encoding="utf-8") as f:
        for (q, a, _), g in zip(rows, grades, strict=True):
            row = {"meeting_id": q.meeting_id, "id": q.id, "type": q.question_type.value, "question": q.question,
                   "reference": q.reference, "answer": a.text, "turn_ids": a.turn_ids, "grade": round(g, 2),
                   "latency_ms": round(a.latency_ms, 3)}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return report


def calibrate(path: Path, judge: str, settings: Settings) -> dict[str, Any]:
    """Grade every published answer of `path`; agreement with GPT-4's grades (and human ones where present)."""
    answers = load_graded(path)
    gpt4 = np.array([a.gpt4 for a in answers])
    if judge == "offline":
        x = feature_matrix(answers)
        shipped = AnswerJudge.shipped()
        grades = np.array([shipped.grade(a.question, a.response, a.reference) for a in answers])
        held = held_out(answers, x)
    else:
        from benchmark.scoring.answer_judge_llm import LLMAnswerJudge

        async def grade_all() -> list[float]:
            llm = LLMAnswerJudge(settings)
            try:
                return [await llm.grade(a.question, a.response, a.reference) for a in answers]
            finally:
                await llm.aclose()

        grades = np.array(asyncio.run(grade_all()))
        held = grades
    result: dict[str, Any] = {"file": path.name, "judge": judge, "n": len(answers)}
    held_fig = agreement(held, gpt4)
    result["spearman"], result["mean_abs_diff"] = held_fig["spearman"], held_fig["mean_abs_diff"]
    result["held_out"] = judge == "offline"
    result["shipped_weights"] = agreement(grades, gpt4)
    humans = [(i, a.human) for i, a in enumerate(answers) if a.human is not None]
    if humans:
        idx = [i for i, _ in humans]
        result["spearman_human"] = agreement(held[idx], np.array([h for _, h in humans]))["spearman"]
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, a in enumerate(answers):
        by_model[a.model].append(i)
    result["by_model"] = {
        m: {"gpt4": round(float(gpt4[ix].mean()), 2), "judge": round(float(held[ix].mean()), 2)} for m, ix in by_model.items()
    }
    result["answers"] = [
        {"meeting_id": a.meeting_id, "question_id": a.question_id, "model": a.model, "gpt4": a.gpt4,
         "judge": round(float(held[i]), 2), "human": a.human}
        for i, a in enumerate(answers)
    ]
    return result


cli = typer.Typer(rich_markup_mode=None, add_completion=False)


@cli.command()
def main(
    data: Path = typer.Option(None, help="A delegate-bench/1 meeting file or folder (the meetings asked about)."),
    questions: Path = typer.Option(None, exists=True, help="An ELITR-Bench questions file (elitr-bench-qa_*.json)."),
    engine: str = typer.Option("local", help="local, llm or hybrid."),
    judge: str = typer.Option("offline", help="offline or llm."),
    json_out: Path = typer.Option(None, "--json", help="report.json path (report.md and the PNG go beside it), or a folder."),
    calibrate_file: Path = typer.Option(None, "--calibrate", exists=True, help="A *_gpt-4-eval.json file to check the judge against."),
    concurrency: int = typer.Option(DEFAULT_CONCURRENCY, min=1, help="LLM judge: answers graded side by side."),
    cache: Path = typer.Option(DEFAULT_CACHE, help="LLM judge: every grade kept here; a re-run asks only what is missing."),
    no_cache: bool = typer.Option(False, "--no-cache", help="LLM judge: ask again for every grade."),
    price_in: float = typer.Option(None, "--price-in", min=0.0, help="LLM judge: USD per million prompt tokens."),
    price_out: float = typer.Option(None, "--price-out", min=0.0, help="LLM judge: USD per million completion tokens."),
) -> None:
    if judge not in ("offline", "llm"):
        raise typer.BadParameter("choose offline or llm", param_hint="--judge")
    settings = Settings()
    if calibrate_file is not None:
        result = calibrate(calibrate_file, judge, settings)
        kind = "held out by meeting" if result["held_out"] else "as graded"
        print(f"{result['n']} answers of {result['file']}, {judge} judge vs GPT-4 ({kind}): "
              f"Spearman {result['spearman']}, mean |diff| {result['mean_abs_diff']}")
        if result["held_out"]:
            s = result["shipped_weights"]
            print(f"  with the shipped weights (fitted on the dev st file): Spearman {s['spearman']}, mean |diff| {s['mean_abs_diff']}")
        if "spearman_human" in result:
            print(f"  vs human grades: Spearman {result['spearman_human']}")
        else:
            print("  (no human grades in this file)")
        for m, v in sorted(result["by_model"].items(), key=lambda kv: -kv[1]["gpt4"]):
            print(f"  {m:<18} GPT-4 {v['gpt4']:.2f}  judge {v['judge']:.2f}")
        if json_out is not None:
            json_out.parent.mkdir(parents=True, exist_ok=True)
            json_out.write_text(json.dumps(result, indent=1), encoding="utf-8")
        return
    if data is None or questions is None or json_out is None:
        raise typer.BadParameter("give --data, --questions and --json (or --calibrate FILE)")
    started = time.perf_counter()
    try:
        uses_llm = judge == "llm" or engine != "local"
        llm = LLMRun(settings, concurrency, cache, no_cache, price_in, price_out) if uses_llm else None
        report = run_benchmark(data, questions, engine, judge, json_out, settings, llm)
    except BenchDataError as e:
        print(f"benchmark.qa: {e}")
        raise typer.Exit(2) from e
    print(markdown(report))
    print(f"({time.perf_counter() - started:.1f} s; report in {_outputs(json_out)[0]})")


if __name__ == "__main__":
    cli()
