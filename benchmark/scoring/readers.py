"""`python -m benchmark.scoring.readers`: a careful-reader check of the floor decision.

`sample` draws moments from a benchmark's cases (28 where the principal really spoke next: 8 named, 10 asked,
10 chime-ins; 12 where they did not: 6 swapped principals, 6 engaged negatives, by default) and deals them
to readers, at most one moment per meeting per reader. Each reader's packet holds, per moment, only what
the engine sees: the last turns and the principal's brief, never the answer. `score` reads the readers'
verdicts and, given a replay's `cases.jsonl`, puts the engine's decisions on the same moments beside them.

`stream` draws its moments from a whole-meeting replay instead: the engine's speaks and as many of its silences
(after someone else's substantive turn), each meeting decided by its leave-one-meeting-out fold at one speaking
level, so that readers judge how many of the engine's interventions a careful person would also make; the key
(kept apart from the packets) says whether the engine spoke and whether the principal really took the floor.

Packets quote the meetings, so they are written outside the repository; only verdicts (case ids and
yes/no) are worth keeping.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict

from benchmark.scoring.data import BenchMeeting, Case, load
from benchmark.scoring.variants import derive
from benchmark.typer_call import call

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)

TURNS = 30
"""Turns a reader sees before the moment: what the engine reads of the meeting."""
QUOTA = {"explicit_cue": 8, "implicit_cue": 10, "chime_in": 10, "swapped": 6, "engaged": 6}


class Moment(BaseModel):
    model_config = ConfigDict(frozen=True)

    case_id: str
    meeting_id: str
    kind: str
    """explicit_cue | implicit_cue | chime_in (the principal spoke next) or swapped | engaged (they did not)."""


def kind_of(case: Case) -> str:
    if case.variant == "matched":
        return str(case.scenario)
    return "engaged" if str(case.scenario) == "none" else "swapped"


def moments(meetings: list[BenchMeeting], seed: int) -> list[Moment]:
    """The sampled moments, spread over the meetings as evenly as the quotas allow."""
    rng = random.Random(seed)
    pools: dict[str, list[Moment]] = defaultdict(list)
    for m in meetings:
        for case in [*m.cases, *derive(m, seed)]:
            if case.variant == "noisy_name":
                continue
            pools[kind_of(case)].append(Moment(case_id=case.id, meeting_id=m.meeting_id, kind=kind_of(case)))
    chosen: list[Moment] = []
    for kind, n in QUOTA.items():
        chosen += _spread(pools[kind], n, rng)
    return chosen


def deal(chosen: list[Moment], readers: int, seed: int) -> list[list[Moment]]:
    """Each reader a share of the moments, never two of one meeting (a reader who saw a meeting once reads
    the next moment of it with hindsight)."""
    rng = random.Random(seed + 1)
    order = list(chosen)
    rng.shuffle(order)
    order.sort(key=lambda m: m.meeting_id)
    hands: list[list[Moment]] = [[] for _ in range(readers)]
    for moment in order:
        fits = [h for h in hands if all(m.meeting_id != moment.meeting_id for m in h)]
        if not fits:
            raise typer.BadParameter(f"{readers} readers cannot each see one moment per meeting; ask for more")
        min(fits, key=len).append(moment)
    return hands


def packet(meeting: BenchMeeting, case: Case, number: int) -> str:
    """One moment as a reader sees it: the principal's brief and the last turns, in plain text."""
    profile = meeting.profile(case.principal)
    turns = meeting.snapshot(case)[-TURNS:]
    lines = [f"## Moment {number}", "", f"You attend for **{profile.name}** (speaker label {case.principal}).", ""]
    if profile.intents:
        lines += ["What they want from this meeting:", *[f"- {i}" for i in profile.intents], ""]
    lines.append("What they know (private items must never be said):")
    for item in profile.background:
        private = "" if item.shareable else " [PRIVATE]"
        lines.append(f"- ({item.context}) {item.information}{private}")
    lines += ["", "The meeting so far (last turns):", ""]
    lines += [f"{u.id}. {meeting.display_name(u.speaker)}: {u.text}" for u in turns]
    lines += ["", f"Should {profile.name} speak now, right after turn {case.last_utterance}? (yes / no)", ""]
    return "\n".join(lines)


@app.command()
def sample(
    data: Annotated[Path, typer.Option(help="Meeting file or folder (delegate-bench/1).")],
    out: Annotated[Path, typer.Option(help="Folder for the packets (outside the repository).")],
    readers: int = 5,
    seed: int = 0,
) -> None:
    """Draw the moments and write one packet per reader, and the key (kept from the readers)."""
    meetings = {m.meeting_id: m for m in load(data)}
    cases = {c.id: (m, c) for m in meetings.values() for c in [*m.cases, *derive(m, seed)]}
    hands = deal(moments(list(meetings.values()), seed), readers, seed)
    out.mkdir(parents=True, exist_ok=True)
    for r, hand in enumerate(hands, 1):
        parts = [packet(*cases[moment.case_id], i) for i, moment in enumerate(hand, 1)]
        (out / f"reader_{r}.md").write_text("\n\n".join(parts), encoding="utf-8")
        ids = {str(i): moment.case_id for i, moment in enumerate(hand, 1)}
        (out / f"reader_{r}.ids.json").write_text(json.dumps(ids, indent=1), encoding="utf-8")
    key = [m.model_dump() for hand in hands for m in hand]
    (out / "key.json").write_text(json.dumps(key, indent=1), encoding="utf-8")
    typer.echo(f"{sum(map(len, hands))} moments for {readers} readers in {out}")


def _rates(spoke: dict[str, bool], key: list[Moment]) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    positive = [m for m in key if m.kind in ("explicit_cue", "implicit_cue", "chime_in")]
    negative = [m for m in key if m not in positive]
    out["moments"] = len(key)
    out["response"] = round(100 * sum(spoke[m.case_id] for m in positive) / max(len(positive), 1), 1)
    out["silence"] = round(100 * sum(not spoke[m.case_id] for m in negative) / max(len(negative), 1), 1)
    for kind in QUOTA:
        group = [m for m in key if m.kind == kind]
        if group:
            said = sum(spoke[m.case_id] for m in group)
            out[kind] = f"{said if kind not in ('swapped', 'engaged') else len(group) - said} of {len(group)}"
    return out


STREAM_TURNS = 10
"""Turns a stream reader sees: the latest and the nine before it."""


def stream_packet(meeting: BenchMeeting, principal: str, utterance: int, number: int, turns: int = STREAM_TURNS) -> str:
    """One stream moment as a reader sees it: the principal's shareable brief and the last turns, nothing after."""
    profile = meeting.profile(principal)
    at = next(i for i, u in enumerate(meeting.utterances) if u.id == utterance)
    shown = meeting.utterances[max(0, at + 1 - turns): at + 1]
    lines = [f"## Moment {number}", "", f"You attend for **{profile.name}** (speaker label {principal}).", ""]
    if profile.intents:
        lines += ["What they want from this meeting:", *[f"- {i}" for i in profile.intents], ""]
    lines.append("What they know:")
    lines += [f"- ({item.context}) {item.information}" for item in profile.background if item.shareable]
    lines += ["", "The meeting so far (last turns; the last one was just said):", ""]
    lines += [f"{u.id}. {meeting.display_name(u.speaker)}{' (you)' if u.speaker == principal else ''}: {u.text}" for u in shown]
    lines += ["", f"Should {profile.name} speak now, right after turn {utterance}? (yes / no)", ""]
    return "\n".join(lines)


def _spread(pool: list[Moment], n: int, rng: random.Random) -> list[Moment]:
    """`n` moments round-robin over the meetings, so that no meeting's habits fill the sample."""
    by_meeting: dict[str, list[Moment]] = defaultdict(list)
    for m in pool:
        by_meeting[m.meeting_id].append(m)
    for group in by_meeting.values():
        rng.shuffle(group)
    order = sorted(by_meeting)
    rng.shuffle(order)
    picked: list[Moment] = []
    while len(picked) < n and any(by_meeting[k] for k in order):
        for k in order:
            if by_meeting[k] and len(picked) < n:
                picked.append(by_meeting[k].pop())
    return picked


@app.command()
def stream(
    data: Annotated[Path, typer.Option(help="Meeting file or folder (delegate-bench/1).")],
    weights_folds: Annotated[Path, typer.Option("--weights-folds", help="Fold weights, one per meeting, named after it.")],
    out: Annotated[Path, typer.Option(help="Folder for the packets (outside the repository).")],
    key: Annotated[Path, typer.Option(help="Where the key goes (JSON lines; kept apart from the packets).")],
    speaks: int = 60,
    speaking: str = "balanced",
    seed: int = 0,
) -> None:
    """Replay every meeting at one speaking level, draw `speaks` of the engine's speaks and as many silences, and
    deal them into packets holding one moment per meeting."""
    import asyncio

    from benchmark.replay import fold_engine
    from benchmark.scoring.runner import run_stream
    from delegate.decide.speaking import SpeakingAt
    from delegate.meeting import is_backchannel
    from delegate.models import Speaking

    try:
        level = Speaking(speaking)
    except ValueError as e:
        raise typer.BadParameter(f"--speaking {speaking!r}: choose addressed, balanced or forward") from e
    meetings = load(data)
    engine = SpeakingAt(fold_engine(weights_folds, meetings), level)
    spoke: list[Moment] = []
    silent: list[Moment] = []
    truth: dict[str, bool] = {}
    for m in meetings:
        for p in sorted(m.profiles):
            result = asyncio.run(run_stream(m, p, engine))
            said, taken = set(result.speaks), set(result.floor_taken)
            for u in m.utterances:
                case_id = f"{m.meeting_id}/{p}/{u.id}#stream"
                truth[case_id] = u.id in taken
                if u.id in said:
                    spoke.append(Moment(case_id=case_id, meeting_id=m.meeting_id, kind="speak"))
                elif u.speaker != p and not is_backchannel(u.text):
                    silent.append(Moment(case_id=case_id, meeting_id=m.meeting_id, kind="silence"))
    rng = random.Random(seed)
    chosen = _spread(spoke, speaks, rng) + _spread(silent, speaks, rng)
    per_meeting = max(sum(1 for c in chosen if c.meeting_id == mid) for mid in {c.meeting_id for c in chosen})
    hands = deal(chosen, per_meeting, seed)
    by_id = {m.meeting_id: m for m in meetings}
    out.mkdir(parents=True, exist_ok=True)
    key.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for r, hand in enumerate(hands, 1):
        parts = []
        for i, moment in enumerate(hand, 1):
            _, principal, rest = moment.case_id.split("/")
            utterance = int(rest.split("#")[0])
            parts.append(stream_packet(by_id[moment.meeting_id], principal, utterance, i))
            rows.append({"case_id": moment.case_id, "packet": r, "number": i, "meeting_id": moment.meeting_id, "principal": principal,
                         "utterance": utterance, "speaking": level.value, "engine_spoke": moment.kind == "speak",
                         "principal_spoke": truth[moment.case_id]})
        (out / f"packet_{r:02d}.md").write_text(f"# Packet {r:02d}: {len(hand)} moments\n\n" + "\n\n".join(parts), encoding="utf-8")
    key.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    typer.echo(json.dumps({"speaks": sum(c.kind == "speak" for c in chosen), "silences": sum(c.kind == "silence" for c in chosen),
                           "packets": len(hands), "engine_speaks_in_replay": len(spoke)}))


def stream_figures(key: list[dict], verdicts: dict[tuple[int, int], bool]) -> dict:
    """How many of the engine's speaks careful readers would also make, split by whether the principal really spoke,
    and how many of its silences they would keep."""
    missing = [(r["packet"], r["number"]) for r in key if (r["packet"], r["number"]) not in verdicts]
    if missing:
        raise typer.BadParameter(f"no verdict for {len(missing)} moments, e.g. packet {missing[0][0]} moment {missing[0][1]}")

    def share(rows: list[dict], want: bool) -> dict:
        agree = sum(verdicts[(r["packet"], r["number"])] is want for r in rows)
        return {"moments": len(rows), "readers_agree": agree, "share": round(agree / len(rows), 4) if rows else None}

    speaks = [r for r in key if r["engine_spoke"]]
    silences = [r for r in key if not r["engine_spoke"]]
    return {
        "speaks_readers_would_make": share(speaks, True),
        "speaks_where_the_principal_spoke": share([r for r in speaks if r["principal_spoke"]], True),
        "speaks_where_the_principal_did_not": share([r for r in speaks if not r["principal_spoke"]], True),
        "silences_readers_would_keep": share(silences, False),
        "silences_where_the_principal_spoke": share([r for r in silences if r["principal_spoke"]], False),
        "silences_where_the_principal_did_not": share([r for r in silences if not r["principal_spoke"]], False),
    }


@app.command("stream-score")
def stream_score(
    key: Annotated[Path, typer.Option(help="The key `stream` wrote (JSON lines).")],
    verdicts: Annotated[Path, typer.Option(help='JSON lines: {"packet": N, "moment": K, "speak": true|false}, one per moment.')],
) -> None:
    """The readers' verdicts on a stream sample: the share of the engine's speaks they would also make."""
    rows = [json.loads(line) for line in key.read_text(encoding="utf-8").splitlines() if line.strip()]
    said: dict[tuple[int, int], bool] = {}
    for line in verdicts.read_text(encoding="utf-8").splitlines():
        if line.strip():
            v = json.loads(line)
            said[(int(v["packet"]), int(v["moment"]))] = bool(v["speak"])
    typer.echo(json.dumps(stream_figures(rows, said), indent=1))


@app.command()
def score(
    key: Annotated[Path, typer.Option(help="key.json written by `sample`.")],
    verdicts: Annotated[Path, typer.Option(help="JSON object: case id -> true (speak) / false (stay silent).")],
    cases: Annotated[Path | None, typer.Option(help="A replay's cases.jsonl: the engine on the same moments.")] = None,
) -> None:
    """The readers' figures, and the engine's on the same moments, with the moments where they differ."""
    moments_ = [Moment.model_validate(m) for m in json.loads(key.read_text())]
    readers = {k: bool(v) for k, v in json.loads(verdicts.read_text()).items()}
    missing = [m.case_id for m in moments_ if m.case_id not in readers]
    if missing:
        raise typer.BadParameter(f"no verdict for {len(missing)} moments, e.g. {missing[0]}")
    report: dict[str, object] = {"readers": _rates(readers, moments_)}
    if cases is not None:
        engine = {}
        for line in cases.read_text().splitlines():
            row = json.loads(line)
            engine[row["id"]] = bool(row["spoke"])
        report["engine"] = _rates(engine, moments_)
        report["differ"] = [
            {"case_id": m.case_id, "kind": m.kind, "readers": readers[m.case_id], "engine": engine[m.case_id]}
            for m in moments_ if readers[m.case_id] != engine[m.case_id]
        ]
    typer.echo(json.dumps(report, indent=1))


def main(argv: list[str] | None = None) -> None:
    call(app, argv)


if __name__ == "__main__":
    main()
