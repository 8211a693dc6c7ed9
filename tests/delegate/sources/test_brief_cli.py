"""`delegate brief`: a profile JSON the server accepts, or one line and a non-zero exit."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from delegate.__main__ import app
from delegate.models import Profile

runner = CliRunner()


def test_brief_writes_a_profile_with_private_items_marked(sources_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "ana.json"
    result = runner.invoke(app, ["brief", "--sources", str(sources_dir), "--event", "review", "--principal", "ana@example.org", "-o", str(out)])
    assert result.exit_code == 0, result.output
    profile = Profile.model_validate_json(out.read_text(encoding="utf-8"))
    assert profile.name == "Ana Ruiz" and "Ana" in profile.aliases
    private = {b.item_id: b.why_private for b in profile.background if not b.shareable}
    assert private["s2"] == "a direct message"
    assert "private" in result.output and str(out) in result.output


def test_brief_for_an_unknown_event_says_so_in_one_line(sources_dir: Path) -> None:
    result = runner.invoke(app, ["brief", "--sources", str(sources_dir), "--event", "nope", "--principal", "ana@example.org"])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "no calendar event 'nope'" in result.output


def test_brief_from_a_malformed_file_names_the_item(sources_dir: Path) -> None:
    (sources_dir / "slack.json").write_text('{"users": [], "channels": [], "messages": [{"id": "s7"}]}', encoding="utf-8")
    result = runner.invoke(app, ["brief", "--sources", str(sources_dir), "--event", "review", "--principal", "ana@example.org"])
    assert result.exit_code == 2
    assert "messages[0] (s7)" in result.output and "Traceback" not in result.output
