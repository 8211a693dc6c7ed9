"""`python -m benchmark.pauses`: false ends of turn and turn-end waits, silence rule against smart-turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from benchmark.asr import AUDIO_FIXTURES, REAL_SPEECH, percentile
from benchmark.pauses.turns import Outcome, TimedTurnEnd, paused_turns, stream_turn
from delegate.config import Settings
from delegate.extras import run_cli

console = Console()
app = typer.Typer(rich_markup_mode=None, add_completion=False)
SETS = {"real": ("real speech", REAL_SPEECH), "espeak": ("espeak-ng fixtures", AUDIO_FIXTURES)}


def _figures(outcomes: list[Outcome]) -> dict[str, float | int]:
    waits = [o.wait_s for o in outcomes if o.wait_s is not None]
    return {
        "turns": len(outcomes),
        "false_end_rate": round(sum(o.false_end for o in outcomes) / len(outcomes), 4),
        "wait_s_p50": round(percentile(waits, 0.5), 3),
        "wait_s_p95": round(percentile(waits, 0.95), 3),
        "no_final": sum(o.wait_s is None for o in outcomes),
    }


@app.command()
def main(
    pauses: Annotated[str, typer.Option(help="Pause lengths inserted mid-turn, seconds, comma-separated.")] = "0.4,0.8,1.2",
    sets: Annotated[str, typer.Option(help="Sets to stream: real, espeak (comma-separated).")] = "real,espeak",
    verbose: Annotated[bool, typer.Option(help="Print every turn's outcome.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures here.")] = None,
) -> None:
    """Stream every turn with a pause inserted after its middle word, with the silence rule alone and with
    smart-turn; report false ends of turn (cut inside the pause) and the wait at the real end."""
    # Imported here, so that without the audio extra this command says which extra to install.
    from delegate.asr.turn_end import load_smart_turn
    from delegate.asr.turn_words import load_turn_words
    from delegate.asr.whisper import load_speech_model

    try:
        lengths = [float(p) for p in pauses.split(",") if p.strip()]
    except ValueError:
        raise typer.BadParameter(f"--pauses must be seconds separated by commas, not {pauses!r}") from None
    chosen = [s.strip() for s in sets.split(",") if s.strip()]
    if not chosen or any(s not in SETS for s in chosen):
        raise typer.BadParameter(f"--sets must name sets among {', '.join(SETS)}")
    settings = Settings()
    model = load_speech_model(settings.asr_model, settings.asr_threads)
    smart = TimedTurnEnd(load_smart_turn())
    words = load_turn_words()
    # (end-of-turn model, words model): the silence rule; smart-turn with the words' punctuation rule only
    # (as before the words model); smart-turn with the words model too (as the service runs it).
    policies = {
        f"silence {settings.asr_silence_s:g} s": (None, None),
        "smart-turn": (smart, None),
        "smart-turn + words model": (smart, words),
    }

    table = Table(title=f"Pauses of {pauses} s after the middle word (smart-turn holds up to {settings.asr_turn_wait_s:g} s)")
    for col in ("set", "policy", "turns", "false end", "wait p50 s", "wait p95 s", "no final"):
        table.add_column(col, justify="left" if col in ("set", "policy") else "right")
    out: dict[str, dict[str, object]] = {}
    for key in chosen:
        label, folder = SETS[key]
        turns = paused_turns(folder, model, lengths)
        for policy, (turn_end, turn_words) in policies.items():
            outcomes = [
                stream_turn(t, model, turn_end, settings.asr_silence_s, settings.asr_turn_wait_s, turn_words)
                for t in turns
            ]
            figures = _figures(outcomes)
            by_pause = {
                f"{p:g}": _figures([o for o in outcomes if o.turn.pause_s == p])["false_end_rate"] for p in lengths
            }
            out[f"{key}/{policy}"] = {**figures, "false_end_rate_by_pause": by_pause}
            table.add_row(
                label,
                policy,
                str(figures["turns"]),
                f"{figures['false_end_rate']:.1%}  ({', '.join(f'{p} s {r:.0%}' for p, r in by_pause.items())})",
                f"{figures['wait_s_p50']:.2f}",
                f"{figures['wait_s_p95']:.2f}",
                str(figures["no_final"]),
            )
            if verbose:
                for o in outcomes:
                    console.print(
                        f"{policy:12s} {o.turn.clip:16s} pause {o.turn.pause_s:g} false_end={o.false_end} "
                        f"wait={o.wait_s} | {o.text}"
                    )
    console.print(table)
    if smart.seconds:
        ms = np.array(smart.seconds) * 1000
        console.print(f"smart-turn: {len(ms)} judgements, p50 {np.percentile(ms, 50):.0f} ms, p95 {np.percentile(ms, 95):.0f} ms each")
        out["smart_turn_ms"] = {"p50": round(float(np.percentile(ms, 50)), 1), "p95": round(float(np.percentile(ms, 95)), 1)}
    console.print(out)
    if json_out:
        json_out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    run_cli(app)
