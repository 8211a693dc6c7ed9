"""A benchmark's typer command called from the command line, or from code (tests, the smoke) with `argv`."""

from __future__ import annotations

from typing import Any

import click
import typer


def call(app: typer.Typer, argv: list[str] | None) -> Any:
    """The command's return value; exits (SystemExit) on bad options or an early exit, as on the command line."""
    if argv is None:
        return app()
    try:
        result = app(argv, standalone_mode=False)
    except click.ClickException as e:
        e.show()
        raise SystemExit(e.exit_code) from e
    if isinstance(result, int):  # an early exit, its code (click returns it when not standalone)
        raise SystemExit(result)
    return result
