"""`python -m benchmark.replay`: replay meeting snapshots through an engine and score it (the main job)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from itertools import zip_longest
from pathlib import Path
from typing import cast

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchmark.llm.run import DEFAULT_CACHE, DEFAULT_CONCURRENCY, LLMRun
from benchmark.scoring import metrics, report
from benchmark.scoring.data import FIXTURES, BenchDataError, BenchMeeting, Case, load
from benchmark.scoring.judge import Judge, JudgeInput, Judgement, OfflineJudge
from benchmark.scoring.report import pct
from benchmark.scoring.runner import CaseResult, StreamResult, run_case, run_stream
from benchmark.scoring.variants import GarbleSource
from benchmark.scoring.variants import derive as derive_variants
from delegate.config import ConfigError, Settings
from delegate.decide import ENGINE_NAMES, build_engine
from delegate.decide.base import Engine
from delegate.decide.cues import RULES, Rules
from delegate.decide.reply.selector import AnswerSelector
from delegate.decide.speaking import SpeakingAt
from delegate.decide.turn_taking import TurnTakingModel
from delegate.extras import run_cli
from delegate.meeting import MeetingState
from delegate.models import Speaking

console = Console()
VARIANTS = ("matched", "mismatched", "noisy_name")


class LLMBudgetExceeded(Exception):
    """`--max-llm-calls` reached: the run stops where it is."""


class LLMBudget:
    """Counts the LLM calls of the engine and the judge; stops the run at `limit` (None: no limit)."""

    def __init__(self, engine: Engine, judge: Judge, limit: int | None) -> None:
        self.engine, self.judge, self.limit = engine, judge, limit

    @property
    def used(self) -> int:
        llm_judge = getattr(self.judge, "llm", None)
        return int(getattr(self.engine, "calls", 0)) + int(getattr(llm_judge, "calls", 0))

    def check(self) -> None:
        if self.limit is not None and self.used >= self.limit:
            raise LLMBudgetExceeded(f"stopped after {self.used} LLM calls (--max-llm-calls {self.limit})")


def expected_llm_calls(engine: str, judge: str, cases: dict[str, list[Case]], stream_decisions: int) -> int:
    """The most LLM calls a run can make: one per decision of an LLM engine, two per judged response."""
    snapshot = sum(len(v) for v in cases.values())
    calls = snapshot + stream_decisions if engine in ("llm", "hybrid") else 0
    if judge == "llm":
        calls += 2 * sum(1 for v in cases.values() for c in v if c.expects_speech)
    return calls


class Mode(StrEnum):
    snapshot = "snapshot"
    stream = "stream"
    both = "both"


def select_cases(
    meetings: list[BenchMeeting], variants: set[str], derive: bool | None, seed: int, limit: int | None,
    garbles: GarbleSource = "recogniser",
) -> dict[str, list[Case]]:
    """The cases to replay per meeting; `limit` takes them in turn from every (meeting, variant) group."""
    out: dict[str, list[Case]] = {}
    for m in meetings:
        only_matched = all(c.variant == "matched" for c in m.cases)
        cases = derive_variants(m, seed, garbles) if (derive if derive is not None else only_matched) else list(m.cases)
        out[m.meeting_id] = [c for c in cases if c.variant in variants]
    if limit is None:
        return out
    groups = [[c for c in out[m.meeting_id] if c.variant == v] for m in meetings for v in VARIANTS]
    kept: set[str] = set()
    for row in zip_longest(*groups):
        for c in row:
            if c is not None and len(kept) < limit:
                kept.add(c.id)
    return {mid: [c for c in cases if c.id in kept] for mid, cases in out.items()}


def make_engine(name: str, meetings: list[BenchMeeting], cases: dict[str, list[Case]], seed: int, run: LLMRun | None = None) -> Engine:
    if name == "oracle":
        from benchmark.scoring.calibration import OracleEngine

        return OracleEngine(meetings, cases)
    if name == "shuffled":
        from benchmark.scoring.calibration import ShuffledEngine

        return ShuffledEngine(meetings, cases, seed)
    return build_engine(name, run.settings, run.client) if run is not None else build_engine(name)


RULES_OFF = ("addressed-elsewhere", "partner", "nothing-fits")
"""What `--rules-off` may switch off: `delegate.decide.cues.Rules` and compose's "nothing in the brief fits"."""


@contextmanager
def nothing_fits_off(off: bool) -> Iterator[None]:
    """With `off`, compose's floors are lowered for the run so that some item or intent is always said."""
    from delegate.decide.reply.compose import ComposeSettings

    kept = ComposeSettings.item_floor, ComposeSettings.intent_floor
    if off:
        ComposeSettings.item_floor = ComposeSettings.intent_floor = -1.0
    try:
        yield
    finally:
        ComposeSettings.item_floor, ComposeSettings.intent_floor = kept


def rules_off(names: set[str]) -> Rules:
    """The cue rules without those named ("nothing-fits" is compose's: `nothing_fits_off`)."""
    return Rules(addressed_elsewhere="addressed-elsewhere" not in names, partner_implicit="partner" not in names)


def selector_folds(folder: Path, meetings: list[BenchMeeting]) -> Callable[[str], AnswerSelector]:
    """Each meeting's answer selector from `folder/<meeting_id>.json`, fitted without that meeting
    (`python -m training answer-selector --report DIR` writes them to DIR/folds)."""
    missing = [m.meeting_id for m in meetings if not (folder / f"{m.meeting_id}.json").is_file()]
    if missing:
        raise BenchDataError(f"--selector-folds {folder}: no fold selector for {', '.join(missing)}")
    return {m.meeting_id: AnswerSelector.read(folder / f"{m.meeting_id}.json") for m in meetings}.__getitem__


def fold_engine(
    folder: Path | None, meetings: list[BenchMeeting], read: bool = True, rules: Rules = RULES, text: bool = True,
    selector_for: Callable[[str], AnswerSelector] | None = None,
) -> Engine:
    """The local engine deciding each meeting with `folder/<meeting_id>.json`: turn-taking weights fitted
    without that meeting (`python -m delegate.train turn-taking --report DIR` writes them to DIR/folds)."""
    from delegate.decide.local import LocalEngine

    if folder is None:
        return LocalEngine(selector_for=selector_for)
    missing = [m.meeting_id for m in meetings if not (folder / f"{m.meeting_id}.json").is_file()]
    if missing:
        raise BenchDataError(f"--weights-folds {folder}: no fold weights for {', '.join(missing)}")
    models = {m.meeting_id: TurnTakingModel.read(folder / f"{m.meeting_id}.json") for m in meetings}
    return LocalEngine(model_for=models.__getitem__, read=read, rules=rules, text=text, selector_for=selector_for)


def llm_run(
    engine: str, judge: str, model: str | None, base_url: str | None, timeout_s: float | None, max_tokens: int | None,
    concurrency: int,
    cache: Path | None, refresh: bool, price_in: float | None, price_out: float | None,
) -> LLMRun | None:
    """The run's model server when the engine or the judge calls one (None otherwise); the options over the settings."""
    if engine not in ("llm", "hybrid") and judge != "llm":
        return None
    given = (("llm_model", model), ("llm_base_url", base_url), ("llm_timeout_s", timeout_s), ("llm_max_tokens", max_tokens))
    overrides = {k: v for k, v in given if v is not None}
    settings = Settings(**overrides)
    from delegate.llm.client import api_key

    api_key(settings)  # no key and no server named: one line now, not a fallback on every call
    return LLMRun(settings, concurrency, cache, refresh, price_in, price_out)


def make_judge(name: str, run: LLMRun | None = None) -> Judge:
    if name == "offline":
        return OfflineJudge()
    if name == "llm":
        from benchmark.scoring.llm_judge import LLMJudge

        if run is None:
            return PairedJudge(LLMJudge())
        # The judge waits at least as long as the engine may: a slow local model is slow for both.
        return PairedJudge(LLMJudge(run.settings, run.client, timeout_s=max(60.0, run.settings.llm_timeout_s)))
    raise BenchDataError(f"unknown judge {name!r}; choose offline or llm")


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)


async def replay_snapshots(
    meetings: list[BenchMeeting], cases: dict[str, list[Case]], engine: Engine, judge: Judge, budget: LLMBudget | None = None,
    concurrency: int | None = None,
) -> list[CaseResult]:
    """Every case, in order. With `concurrency` (a run that calls a model), cases go side by side, each on its own
    snapshot; else one after another on a state shared by a meeting's cases, extended as the snapshots grow."""
    total = sum(len(v) for v in cases.values())
    with _progress() as bar:
        task = bar.add_task("snapshots", total=total)
        if concurrency is not None:
            gate = asyncio.Semaphore(concurrency)

            async def one(m: BenchMeeting, c: Case) -> CaseResult:
                async with gate:
                    if budget is not None:
                        budget.check()
                    result = await run_case(m, c, engine, judge)
                    bar.advance(task)
                    return result

            return list(await asyncio.gather(*(one(m, c) for m in meetings for c in sorted(cases[m.meeting_id], key=lambda c: c.last_utterance))))
        results: list[CaseResult] = []
        for m in meetings:
            # Engines do not change the state they decide on: replay stays linear in meeting length.
            shared = MeetingState(m.meeting_id, attendees=list(m.attendees), names=dict(m.names))
            for c in sorted(cases[m.meeting_id], key=lambda c: c.last_utterance):
                state = None
                if not c.edits and c.names is None:
                    shared.extend(m.utterances[len(shared) : c.last_utterance + 1])
                    state = shared
                if budget is not None:
                    budget.check()
                results.append(await run_case(m, c, engine, judge, state))
                bar.advance(task)
    return results


def stream_plan(meetings: list[BenchMeeting], limit: int | None) -> list[tuple[BenchMeeting, str, int]]:
    """(meeting, principal, utterances to replay): whole meetings, or prefixes within `limit` decisions in all."""
    plan: list[tuple[BenchMeeting, str, int]] = []
    left = limit
    for m in meetings:
        for p in sorted(m.profiles):
            n = len(m.utterances) if left is None else min(len(m.utterances), left)
            if n <= 0:
                return plan
            plan.append((m, p, n))
            if left is not None:
                left -= n
    return plan


async def replay_stream(
    meetings: list[BenchMeeting], engine: Engine, limit: int | None = None, budget: LLMBudget | None = None,
    concurrency: int | None = None,
) -> list[StreamResult]:
    """Whole meetings, each in its order; with `concurrency`, that many (meeting, principal) streams side by side."""
    plan = stream_plan(meetings, limit)
    gate = asyncio.Semaphore(concurrency or 1)
    with _progress() as bar:
        task = bar.add_task("stream", total=sum(n for _, _, n in plan))

        def step() -> None:
            bar.advance(task)
            if budget is not None:
                budget.check()

        if concurrency is None:
            return [await run_stream(m, p, engine, step, until=n) for m, p, n in plan]

        async def one(m: BenchMeeting, p: str, n: int) -> StreamResult:
            async with gate:
                return await run_stream(m, p, engine, step, until=n)

        return list(await asyncio.gather(*(one(m, p, n) for m, p, n in plan)))


class PairedJudge:
    """The LLM judge, with the offline judge run beside it for the agreement figures.

    A case the LLM judge fails on (after its retries) is judged offline and counted in `failures`.
    """

    name = "llm"

    def __init__(self, llm: Judge) -> None:
        self.llm = llm
        self.offline = OfflineJudge()
        self.pairs: tuple[list[Judgement], list[Judgement]] = ([], [])
        self.failures = 0

    async def judge(self, item: JudgeInput) -> Judgement:
        offline = self.offline.judge_now(item)
        try:
            llm = await self.llm.judge(item)
        except Exception:  # noqa: BLE001 — any failure of the endpoint: keep the case, judged offline
            self.failures += 1
            return offline
        self.pairs[0].append(offline)
        self.pairs[1].append(llm)
        return llm

    def agreement(self) -> dict | None:
        """Agreement with the offline judge on the responses both judged; None when there were none."""
        if not self.pairs[0]:
            return None
        from benchmark.scoring.llm_judge import agreement

        return agreement(*self.pairs) | {"llm_judge_failures": self.failures}


async def _replay(
    meetings: list[BenchMeeting],
    cases: dict[str, list[Case]],
    engine: Engine,
    judge: Judge,
    mode: Mode,
    stream_ok: bool,
    limit: int | None = None,
    budget: LLMBudget | None = None,
    run: LLMRun | None = None,
) -> tuple[dict, list[CaseResult]]:
    """Both modes in one event loop (LLM clients are bound to the loop they started on)."""
    rep: dict = {}
    results: list[CaseResult] = []
    try:
        if mode in (Mode.snapshot, Mode.both):
            t0 = time.perf_counter()
            concurrency = run.concurrency if run is not None else None
            results = await replay_snapshots(meetings, cases, engine, judge, budget, concurrency)
            rep = metrics.snapshot_figures(results, engine.name, judge.name, time.perf_counter() - t0)
            if isinstance(judge, PairedJudge):
                rep["judge_agreement"] = judge.agreement()
                rep["llm_judge"] = {"judged": len(judge.pairs[0]), "fell_back_to_offline": judge.failures}
        if mode in (Mode.stream, Mode.both) and stream_ok:
            before = _llm_stats(engine)
            streams = await replay_stream(meetings, engine, limit, budget, run.concurrency if run is not None else None)
            stream = metrics.stream_figures(streams, engine.name)
            after = _llm_stats(engine)
            if after:
                decisions = after["decisions"] - before.get("decisions", 0)
                calls = after["llm_calls"] - before.get("llm_calls", 0)
                stream["llm_calls_per_100_utterances"] = round(100 * calls / decisions, 2) if decisions else 0.0
                stream["llm_fallbacks"] = after["llm_fallbacks"] - before.get("llm_fallbacks", 0)
            if mode is Mode.stream:
                rep = stream
            else:
                rep["stream"] = stream
        stats = _llm_stats(engine)
        if stats:
            # Per utterance of whole meetings when the stream ran (what a user pays), else per case.
            source = rep.get("stream", rep)
            rep["llm_calls_per_100_utterances"] = source.get("llm_calls_per_100_utterances", stats["llm_calls_per_100_utterances"])
            rep["llm_fallbacks"] = stats["llm_fallbacks"]
            rep["llm"] = stats
        if run is not None:
            rep["llm_run"] = run.figures()
            run.remember()
    finally:
        for closable in (engine, getattr(judge, "llm", judge)):
            close = getattr(closable, "aclose", None)
            if close is not None:
                await close()
    return rep, results


def _llm_stats(engine: Engine) -> dict:
    stats = getattr(engine, "stats", None)
    return dict(stats()) if callable(stats) else {}


def summary_table(rep: dict) -> Table:
    t = Table(title=f"engine {rep['engine']} · judge {rep['judge']}")
    t.add_column("figure")
    t.add_column("value", justify="right")
    rows = [
        ("cases (matched / silence / noisy)", f"{rep['cases']['matched']} / {rep['cases']['mismatched']} / {rep['cases']['noisy_name']}"),
        ("response rate", pct(rep["response_rate"]["all"])),
        ("  explicit / implicit / chime-in", " / ".join(pct(rep["response_rate"][s]) for s in metrics.SPEAK_SCENARIOS)),
        ("silence rate", pct(rep["silence_rate"]["all"])),
        ("  swapped (mismatched) / engaged", f"{pct(rep['silence_rate_split']['swapped'])} / {pct(rep['silence_rate_split']['engaged'])}"),
        ("noisy-name response rate", pct(rep["noisy_name_response_rate"])),
        ("loose recall responded / e2e", f"{pct(rep['loose_recall']['responded'])} / {pct(rep['loose_recall']['end_to_end'])}"),
        ("strict recall responded / e2e", f"{pct(rep['strict_recall']['responded'])} / {pct(rep['strict_recall']['end_to_end'])}"),
        ("attribution exp/ctx/trn/hal", " / ".join(pct(rep["attribution"][a]) for a in metrics.ATTRIBUTIONS)),
        ("private items leaked (of spoken)", pct(rep["private_leak_rate"])),
        ("speech: first person / punctuated / unmasked", " / ".join(pct(rep["speech"][k]) for k in ("first_person", "punctuated", "unmasked"))),
        ("speech: joins an unrelated item", pct(rep["speech"]["joined_unrelated"])),
        ("speech: speakable (no defect)", pct(rep["speech"].get("speakable"))),
        ("privacy guard would block (of spoken)", pct(rep["guard_block_rate"])),
        ("response words (mean)", f"{rep['response_words']['mean']:.1f}"),
        ("meeting correctness", pct(rep["meeting_correctness"])),
        ("latency p50 / p99 (ms)", f"{rep['latency_ms']['p50']:.3f} / {rep['latency_ms']['p99']:.3f}"),
        ("cases per second", f"{rep['cases_per_second']:.0f}"),
    ]
    if "stream" in rep:
        st = rep["stream"]
        rows += [
            ("stream: speak precision / recall", f"{pct(st['speak_precision'])} / {pct(st['speak_recall'])}"),
            ("stream: speaks per hour (real floor turns)", f"{st['speaks_per_hour']:.1f} ({st['floor_turns_per_hour']:.1f})"),
            ("stream: latency p99 (ms)", f"{st['latency_ms']['p99']:.3f}"),
            ("stream: CPU per decision, mean (ms)", "-" if st.get("cpu_ms_mean") is None else f"{st['cpu_ms_mean']:.3f}"),
            ("stream: privacy guard would block (of spoken)", pct(st["guard_block_rate"])),
        ]
    if "llm" in rep:
        llm = rep["llm"]
        rows.append(("LLM: consultations / fell back to embedded", f"{llm['llm_calls']} / {llm['llm_fallbacks']}"))
    if "llm_run" in rep:
        run = rep["llm_run"]
        cost = "no price known: --price-in/--price-out" if run["cost_usd"] is None else f"${run['cost_usd']:.4f}"
        rows.append(("LLM run: calls sent / answered from the cache", f"{run['calls']} / {run['cache_hits']}"))
        rows.append(("LLM run: tokens in / out, cost", f"{run['prompt_tokens']:,} / {run['completion_tokens']:,}, {cost}"))
        rows.append(("LLM run: answers bound as", str(run["response_format"])))
    if "llm_judge" in rep:
        lj = rep["llm_judge"]
        rows.append(("LLM judge: judged / fell back to offline", f"{lj['judged']} / {lj['fell_back_to_offline']}"))
    for k, v in rows:
        t.add_row(k, v)
    return t


def all_fell_back(rep: dict) -> str | None:
    """Why the run's figures are not the ones its title names, if every LLM answer failed."""
    source = rep.get("llm") or rep.get("stream", {}).get("llm") or {}
    if source.get("llm_calls") and source.get("llm_fallbacks") == source.get("llm_calls"):
        reasons = ", ".join(f"{k} {v}" for k, v in source.get("llm_fallback_reasons", {}).items())
        return (
            f"every one of the {source['llm_calls']} LLM consultations failed ({reasons}): the figures are the "
            "embedded engine's. Check OPENAI_BASE_URL / DELEGATE_LLM_BASE_URL, the key and the model name."
        )
    lj = rep.get("llm_judge")
    if lj and lj["fell_back_to_offline"] and not lj["judged"]:
        return (
            f"every one of the {lj['fell_back_to_offline']} LLM judgements failed: the figures are the offline "
            "judge's. Check the endpoint and the model name."
        )
    return None


def main(
    data: Path = typer.Option(FIXTURES, help="A delegate-bench/1 file or a folder of them (default: the shipped fixtures).", show_default=False),
    engine: str = typer.Option("local", help=f"Engine: {', '.join(ENGINE_NAMES)}, or oracle / shuffled (judge calibration)."),
    judge: str = typer.Option("offline", help="Judge: offline (no network) or llm."),
    variants: str = typer.Option(",".join(VARIANTS), help="Comma-separated variants to replay."),
    derive: bool = typer.Option(None, "--derive/--no-derive", help="Derive mismatched / noisy-name / engaged cases (default: when files hold only matched cases)."),
    mode: Mode = typer.Option(Mode.both, help="snapshot: one decision per case; stream: whole meetings; both."),
    out: Path = typer.Option(Path("reports/replay"), help="Folder for report.json, report.md, cases.jsonl and plots."),
    limit: int = typer.Option(None, help="Replay at most this many cases, and at most this many stream decisions."),
    max_llm_calls: int = typer.Option(None, "--max-llm-calls", help="Stop the run once the engine and judge made this many LLM calls."),
    seed: int = typer.Option(0, help="Seed for derived variants."),
    garbles: str = typer.Option("recogniser", help="Noisy names from: recogniser (tiny.en on espeak-ng speech, held-out names), biased (the same, recognition biased to attendees) or table (fixed confusions)."),
    weights_folds: Path = typer.Option(None, "--weights-folds", help="Local engine only: decide each meeting with the "
                                       "turn-taking weights in this folder named after it (leave-one-meeting-out folds)."),
    floor_reader: bool = typer.Option(True, "--floor-reader/--no-floor-reader", help="With --weights-folds: let the reading "
                                      "models decide where the cheap floor model is unsure (DELEGATE_FLOOR_READER)."),
    floor_text: bool = typer.Option(True, "--floor-text/--no-floor-text", help="With --weights-folds: where the fold "
                                    "weights hold a floor reader stack, it decides in its gate (DELEGATE_FLOOR_TEXT)."),
    selector_folds_: Path = typer.Option(None, "--selector-folds", help="Local engine only: pick the answering item in each "
                                         "meeting with the answer selector in this folder named after it (leave-one-meeting-out folds)."),
    speaking: Speaking = typer.Option(None, "--speaking", help="Decide every principal at this speaking level "
                                      "(addressed, balanced, forward) instead of their brief's (default: the brief's, balanced)."),
    rules_off_: str = typer.Option("", "--rules-off", help=f"With --weights-folds, for the ablation: comma-separated rules to "
                                   f"switch off ({', '.join(RULES_OFF)})."),
    model: str = typer.Option(None, help="LLM engine / judge: the model's name (default: DELEGATE_LLM_MODEL, else gpt-4o-mini)."),
    base_url: str = typer.Option(None, "--base-url", help="LLM engine / judge: the OpenAI-compatible server (default: "
                                 "DELEGATE_LLM_BASE_URL / OPENAI_BASE_URL, else OpenAI)."),
    timeout_s: float = typer.Option(None, "--timeout", min=0.1, help="LLM engine: seconds a decision may wait for the model "
                                    "(default: DELEGATE_LLM_TIMEOUT_S, 4 s; a local model on a CPU wants more)."),
    max_tokens: int = typer.Option(None, "--max-tokens", min=16, help="LLM runs: the most tokens an answer may take "
                                   "(default: DELEGATE_LLM_MAX_TOKENS, else the server's)."),
    concurrency: int = typer.Option(DEFAULT_CONCURRENCY, min=1, help="LLM runs: cases (and meetings' streams) decided side by side."),
    cache: Path = typer.Option(DEFAULT_CACHE, help="LLM runs: every answer is kept here, keyed by server, model, prompt and "
                               "parameters; a re-run (or a cut-off run run again) asks only what is not there."),
    no_cache: bool = typer.Option(False, "--no-cache", help="LLM runs: ask the server again for every call (and keep the new answers)."),
    price_in: float = typer.Option(None, "--price-in", min=0.0, help="LLM runs: USD per million prompt tokens (known models have a default)."),
    price_out: float = typer.Option(None, "--price-out", min=0.0, help="LLM runs: USD per million completion tokens."),
) -> None:
    """Replay benchmark meetings through an engine and print the paper's figures."""
    try:
        wanted = {v.strip() for v in variants.split(",") if v.strip()}
        unknown = wanted - set(VARIANTS)
        if unknown:
            raise BenchDataError(f"--variants: unknown {sorted(unknown)}; choose from {', '.join(VARIANTS)}")
        if garbles not in ("recogniser", "biased", "table"):
            raise BenchDataError(f"--garbles: {garbles!r}; choose recogniser, biased or table")
        meetings = load(data)
        cases = select_cases(meetings, wanted, derive, seed, limit, cast(GarbleSource, garbles))
        if (weights_folds is not None or selector_folds_ is not None) and engine != "local":
            raise BenchDataError("--weights-folds and --selector-folds apply to the local engine only")
        selectors = selector_folds(selector_folds_, meetings) if selector_folds_ is not None else None
        off = {r.strip() for r in rules_off_.split(",") if r.strip()}
        if off - set(RULES_OFF):
            raise BenchDataError(f"--rules-off: unknown {sorted(off - set(RULES_OFF))}; choose from {', '.join(RULES_OFF)}")
        if (off or not floor_reader or not floor_text) and weights_folds is None:
            raise BenchDataError("--rules-off, --no-floor-reader and --no-floor-text apply with --weights-folds (the held-out ablation)")
        run = llm_run(engine, judge, model, base_url, timeout_s, max_tokens, concurrency, cache, no_cache, price_in, price_out)
        eng = (fold_engine(weights_folds, meetings, floor_reader, rules_off(off), floor_text, selectors)
               if weights_folds is not None or selectors is not None else make_engine(engine, meetings, cases, seed, run))
        if speaking is not None:
            eng = SpeakingAt(eng, speaking)
        jud = make_judge(judge, run)
    except (BenchDataError, ValueError, ConfigError) as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e

    stream_ok = engine not in ("oracle", "shuffled")
    stream_decisions = sum(n for _, _, n in stream_plan(meetings, limit)) if mode is not Mode.snapshot and stream_ok else 0
    snapshot_cases = cases if mode is not Mode.stream else {}
    expected = expected_llm_calls(engine, judge, snapshot_cases, stream_decisions)
    if expected:
        console.print(f"This run makes up to {expected} LLM calls (one per {engine} decision, two per response the LLM judge scores).")
    budget = LLMBudget(eng, jud, max_llm_calls)
    try:
        with nothing_fits_off("nothing-fits" in off):
            rep, results = asyncio.run(_replay(meetings, cases, eng, jud, mode, stream_ok, limit, budget, run))
    except LLMBudgetExceeded as e:
        console.print(f"[red]error:[/red] {e}; no report written.")
        raise typer.Exit(1) from e

    if mode is Mode.stream:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(rep, indent=2), encoding="utf-8")
        console.print(rep)
    else:
        files = report.write(rep, results, out)
        console.print(summary_table(rep))
        console.print(f"wrote {', '.join(str(f) for f in files)}")
    failed = all_fell_back(rep)
    if failed:
        console.print(f"[red]error:[/red] {failed}")
        raise typer.Exit(1)


def cli() -> None:
    app = typer.Typer(rich_markup_mode=None, add_completion=False)  # plain help: wrapped, never cut
    app.command()(main)
    app()


if __name__ == "__main__":
    run_cli(cli)
