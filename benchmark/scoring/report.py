"""Write a replay's figures: report.json, report.md, cases.jsonl and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from benchmark.scoring.metrics import ATTRIBUTIONS  # noqa: E402
from benchmark.scoring.runner import CaseResult  # noqa: E402

# Figures of GPT-4o in the Meeting Delegate paper (Hu et al., 2024), for the plot's reference point.
PAPER_GPT4O = {"response_rate": 0.77, "silence_rate": 0.74}


def write_cases(results: list[CaseResult], path: Path) -> None:
    with path.open("w", encoding="utf-8") as f:
        for r in results:
            row = {
                "id": r.id,
                "variant": r.variant,
                "scenario": r.scenario,
                "principal": r.principal,
                "spoke": r.spoke,
                "response": r.response,
                "reason": r.reason,
                "expected_points": r.expected_points,
                "matched_expected_points": r.matched_points,
                "attribution": r.attribution,
                "private_leak": r.private_leak,
                "guard_blocked": r.guard_blocked,
                "speakable_defects": list(r.speech.defects) if r.speech is not None else [],
                "latency_ms": round(r.latency_ms, 4),
            }
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def pct(x: float | None) -> str:
    """A rate as a percentage; `n/a` when there were no cases to measure it on."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def markdown(report: dict) -> str:
    snap = report
    lines = [f"# Replay: engine `{snap['engine']}`, judge `{snap['judge']}`", ""]
    c = snap["cases"]
    lines += [f"Cases: {c['matched']} matched, {c['mismatched']} expected-silence, {c['noisy_name']} noisy-name.", ""]
    lines += ["| figure | all | explicit cue | implicit cue | chime-in | engaged (none) |", "|---|---|---|---|---|---|"]
    rr, sr = snap["response_rate"], snap["silence_rate"]
    lines.append(f"| response rate | {pct(rr['all'])} | {pct(rr['explicit_cue'])} | {pct(rr['implicit_cue'])} | {pct(rr['chime_in'])} | |")
    lines.append(f"| silence rate | {pct(sr['all'])} | {pct(sr['explicit_cue'])} | {pct(sr['implicit_cue'])} | {pct(sr['chime_in'])} | {pct(sr['none'])} |")
    lines += [
        "",
        f"- Noisy-name response rate: {pct(snap['noisy_name_response_rate'])}",
        f"- Loose recall: {pct(snap['loose_recall']['responded'])} of responded cases, {pct(snap['loose_recall']['end_to_end'])} end to end",
        f"- Strict recall: {pct(snap['strict_recall']['responded'])} of responded cases, {pct(snap['strict_recall']['end_to_end'])} end to end",
        "- Attribution: " + ", ".join(f"{a} {pct(snap['attribution'][a])}" for a in ATTRIBUTIONS),
        f"- Private items leaked: {pct(snap['private_leak_rate'])} of spoken responses",
        f"- Response length: {snap['response_words']['mean']:.1f} words on average",
        f"- Meeting-level correctness: {pct(snap['meeting_correctness'])}",
        f"- Decision latency: p50 {snap['latency_ms']['p50']:.3f} ms, p95 {snap['latency_ms']['p95']:.3f} ms, p99 {snap['latency_ms']['p99']:.3f} ms",
        f"- Throughput: {snap['cases_per_second']:.0f} cases/s",
    ]
    if "speech" in snap:
        sp = snap["speech"]
        lines.append(
            f"- Spoken like the principal: first person {pct(sp['first_person'])}, sentence-final punctuation "
            f"{pct(sp['punctuated'])}, no mask brackets {pct(sp['unmasked'])}; joins an unrelated item {pct(sp['joined_unrelated'])}"
        )
        if "speakable" in sp:
            found = ", ".join(f"{k} {v}" for k, v in sorted(snap.get("speakable_defects", {}).items())) or "none"
            lines.append(f"- Speakable (no address, URL, key, field list, letter, header, bullets; <= 60 words, 4 sentences): {pct(sp['speakable'])} of spoken replies; defects: {found}")
    if "llm" in report:
        llm = report["llm"]
        lines.append(
            f"- LLM: {llm['llm_calls']} consultations, {llm['llm_fallbacks']} fell back to the embedded engine "
            f"({', '.join(f'{k} {v}' for k, v in llm.get('llm_fallback_reasons', {}).items()) or 'none'})"
        )
    if "llm_judge" in report:
        lj = report["llm_judge"]
        lines.append(f"- LLM judge: {lj['judged']} responses judged, {lj['fell_back_to_offline']} fell back to the offline judge")
    if "stream" in report:
        st = report["stream"]
        lines += [
            "",
            "## Stream replay",
            "",
            f"- {st['principals']} principals, {st['decisions']} decisions",
            f"- Speak precision {pct(st['speak_precision'])}, speak recall {pct(st['speak_recall'])}",
            f"- {st['speaks_per_hour']:.1f} speaks per meeting hour (the principals really took the floor {st['floor_turns_per_hour']:.1f} times an hour)",
            f"- Latency p50 {st['latency_ms']['p50']:.3f} ms, p99 {st['latency_ms']['p99']:.3f} ms",
        ]
    return "\n".join(lines) + "\n"


def plots(report: dict, out: Path) -> list[Path]:
    written = []
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter([PAPER_GPT4O["silence_rate"]], [PAPER_GPT4O["response_rate"]], marker="s", color="grey", label="GPT-4o (paper)")
    if report["silence_rate"]["all"] is not None and report["response_rate"]["all"] is not None:
        ax.scatter([report["silence_rate"]["all"]], [report["response_rate"]["all"]], color="tab:blue", label=report["engine"])
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("silence rate")
    ax.set_ylabel("response rate")
    ax.set_title("Response vs silence")
    ax.legend(loc="lower left")
    fig.tight_layout()
    p = out / "response_vs_silence.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(p)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.8))
    keys = ["loose responded", "loose e2e", "strict responded", "strict e2e"]
    vals = [
        report[kind][part] or 0.0
        for kind, part in (("loose_recall", "responded"), ("loose_recall", "end_to_end"), ("strict_recall", "responded"), ("strict_recall", "end_to_end"))
    ]
    a1.bar(keys, vals, color="tab:blue")
    a1.set_ylim(0, 1)
    a1.set_title("Recall")
    a1.tick_params(axis="x", labelrotation=20)
    a2.bar(list(ATTRIBUTIONS), [report["attribution"][a] for a in ATTRIBUTIONS], color=["tab:green", "tab:blue", "tab:orange", "tab:red"])
    a2.set_ylim(0, 1)
    a2.set_title("Attribution of response points")
    fig.tight_layout()
    p = out / "recall_attribution.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written.append(p)
    return written


def write(report: dict, results: list[CaseResult], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    write_cases(results, out / "cases.jsonl")
    return [out / "report.json", out / "report.md", out / "cases.jsonl", *plots(report, out)]
