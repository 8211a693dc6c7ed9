"""Every command line in README.md and docs/*.md: its module exists and takes the options shown (parsed by the
command's own parser, run no further); the self-contained ones run verbatim.

The long runs (benchmarks over minutes, servers) are run by .ci/smoke.py and the tests of each command; what
this guards is the documentation itself: a renamed option or module breaks a test, not a reader's first hour.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import runpy
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy, a module run twice

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHARED = ROOT.parent / "shared"
# Modules whose `python -m` runs another's: the documented name, then what runs.
RUNS = {"delegate.train": "training"}
# Run in full, in an empty folder: quick, offline, and nothing outside the package needed.
VERBATIM = {
    "python -m delegate brief --example -o brief.json",
    'python -m delegate brief --example --title "Leeds rollout" --attendee dev@kestrel.example',
    "delegate --version",
}


def documented() -> list[tuple[str, str]]:
    """(where, command line) for each `python -m ...` or `delegate ...` line of a bash block."""
    found = []
    for doc in DOCS:
        for block in re.findall(r"```bash\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"^\$ ", "", line.strip())
                words = shlex.split(line, comments=True)
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value before the command
                    words.pop(0)
                ours = words[:2] == ["python", "-m"] and words[2:3] and words[2].split(".")[0] in ("delegate", "benchmark")
                if ours or words[:1] == ["delegate"]:
                    found.append((doc.name, shlex.join(w for w in words if w != "...")))
    return found


class Parsed(Exception):
    """The command line parsed; the command itself is not run."""


# typer carries its own copy of click (typer._click); plain click serves any other command.
CLICKS = [click, *([typer_click] if (typer_click := getattr(__import__("typer"), "_click", None)) else [])]


@contextlib.contextmanager
def parse_only() -> Iterator[None]:
    """click (typer) and argparse stop once the arguments are parsed and checked."""
    saved = [(c, c.Command.invoke) for c in CLICKS]
    parse_args = argparse.ArgumentParser.parse_args

    def stopper(invoke: object) -> object:
        def stop(self: click.Command, ctx: click.Context) -> object:
            if isinstance(getattr(self, "commands", None), dict):  # a group: its own callback runs, its subcommand stops
                return invoke(self, ctx)  # type: ignore[operator]
            raise Parsed

        return stop

    def stop_argparse(self: argparse.ArgumentParser, args: list[str] | None = None, namespace: object = None) -> object:
        _, unknown = self.parse_known_args(args, namespace)  # type: ignore[arg-type]
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}")
        raise Parsed

    for lib, invoke in saved:
        lib.Command.invoke = stopper(invoke)  # type: ignore[attr-defined]
    argparse.ArgumentParser.parse_args = stop_argparse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        for lib, invoke in saved:
            lib.Command.invoke = invoke  # type: ignore[attr-defined]
        argparse.ArgumentParser.parse_args = parse_args  # type: ignore[method-assign]


def run_in_process(words: list[str]) -> tuple[int | str | None, str]:
    """`python -m MODULE ARGS` or `delegate ARGS` in this process: (exit code or None, what it printed)."""
    module, args = ("delegate", words[1:]) if words[0] == "delegate" else (words[2], words[3:])
    printed = io.StringIO()
    argv = sys.argv
    sys.argv = [module, *args]
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            runpy.run_module(RUNS.get(module, module), run_name="__main__", alter_sys=False)
        return None, printed.getvalue()
    except SystemExit as e:
        return e.code, printed.getvalue()
    finally:
        sys.argv = argv


def test_the_docs_show_commands_and_the_readme_installs_with_the_constraints() -> None:
    lines = documented()
    assert len(lines) >= 40, lines
    readme = [c for where, c in lines if where == "README.md"]
    assert "python -m delegate brief --example -o brief.json" in readme
    first = next(line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.startswith("pip install"))
    assert '-c constraints.txt' in first, first  # the versions CI tested (tests/test_constraints.py)
    assert 'pip install --quiet -e ".[dev]" -c constraints.txt' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize(("where", "line"), documented(), ids=lambda v: v[:70])
def test_a_documented_command_takes_the_options_shown(where: str, line: str, monkeypatch, tmp_path) -> None:
    if "../shared" in line and not SHARED.is_dir():
        pytest.skip("needs ../shared beside the checkout")
    words = shlex.split(line)
    if line in VERBATIM:
        monkeypatch.chdir(tmp_path)
        code, printed = run_in_process(words)
        assert code in (None, 0), f"{where}: {line}\n{printed}"
        return
    monkeypatch.chdir(ROOT)  # paths in the docs are the checkout's
    with parse_only():
        try:
            code, printed = run_in_process(words)
        except Parsed:
            return
    assert code in (None, 0), f"{where}: `{line}` is refused:\n{printed}"


def test_the_engines_example_runs_verbatim_and_prints_what_it_says() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "engines.md").read_text(encoding="utf-8"), re.S)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/engines.md", "exec"), {"__name__": "engines_example"})
    out = printed.getvalue()
    assert "explicit_cue" in out and "Marketing needs five working days of notice" in out, out
    assert "acquired" not in out  # the private item stays unsaid
