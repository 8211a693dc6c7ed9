"""What the code reads at run time is found through the import system, as it will be in the wheel."""

from __future__ import annotations

import ast
import importlib.resources
import json
from pathlib import Path

import pytest

from benchmark.asr import AUDIO_FIXTURES, load_clips
from benchmark.scoring.data import FIXTURES, load
from delegate.llm import prompts
from delegate.resources import package_path

REPO = Path(__file__).resolve().parents[2]


def test_every_prompt_file_renders_through_the_package_loader():
    top_level = sorted(p.name for p in (REPO / "prompts").iterdir() if p.is_file())
    packaged = importlib.resources.files("delegate") / prompts.PROMPTS_RESOURCE
    assert top_level and sorted(p.name for p in packaged.iterdir() if p.is_file()) == top_level
    environment = prompts._environment()
    assert sorted(environment.list_templates()) == top_level
    for name in top_level:
        assert environment.get_template(name).filename.endswith(f"prompt_files/{name}")


def test_top_level_data_folders_are_the_package_resources():
    assert (REPO / "delegate" / "prompt_files").resolve() == (REPO / "prompts").resolve()
    assert AUDIO_FIXTURES.resolve() == (REPO / "audio_fixtures").resolve()
    assert FIXTURES.resolve() == (REPO / "benchmark" / "fixtures").resolve()


def test_default_data_sets_load_from_the_packages():
    meetings = load(FIXTURES)
    assert len(meetings) == 4 and all(m.cases for m in meetings)
    clips = load_clips(AUDIO_FIXTURES)
    assert {c.name for c in clips} == set(json.loads((AUDIO_FIXTURES / "references.json").read_text())["clips"])
    assert all(c.path.is_file() for c in clips)


def test_package_path_names_a_missing_distribution():
    with pytest.raises(ModuleNotFoundError):
        package_path("no_such_package_here")


@pytest.mark.parametrize("package", ["delegate", "benchmark"])
def test_no_module_locates_files_from_its_own_path(package):
    """`__file__` arithmetic breaks once installed; importlib.resources is the one way to find data."""
    offenders = []
    for source in sorted((REPO / package).rglob("*.py")):
        tree = ast.parse(source.read_text(), filename=str(source))
        offenders += [
            f"{source.relative_to(REPO)}:{node.lineno}"
            for node in ast.walk(tree)
            if (isinstance(node, ast.Name) and node.id == "__file__")
            or (isinstance(node, ast.Attribute) and node.attr == "__file__")
        ]
    assert offenders == []
