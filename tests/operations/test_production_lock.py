"""requirements-production.lock, the dependencies the production install pins
(docs/operators/install.md): exactly the versions and hashes the tests run with
(requirements.lock), every package hangar needs at run time, and none of the development
tools; and the wheel's own requirements are met by it. (./dev smoke installs the wheel with
it for real, in a fresh environment.)

What hangar needs is worked out here independently of scripts/production_lock.py (which
reads uv's "# via" notes): from pyproject's dependencies through each installed package's
metadata, for the Python the locks target (3.11, any patch release) on this platform.
"""

from __future__ import annotations

import re
import tomllib
import zipfile
from importlib.metadata import distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from scripts.production_lock import production_lock
from scripts.smoke_installed import build_wheel

# uv pip compile --python-version 3.11: the oldest 3.11, so redis's async-timeout (needed
# before 3.11.3) is pinned.
TARGET = {"python_version": "3.11", "python_full_version": "3.11.0"}


def entries(lock: str) -> dict[str, str]:
    """{normalized name: the entry's text (pin line and hashes)} of a lock file."""
    found: dict[str, str] = {}
    current = ""
    for line in lock.splitlines():
        if match := re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", line):
            current = normalized(match[1])
            found[current] = line
        elif current and line.startswith("    --hash"):
            found[current] += "\n" + line
    return found


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_version(entry: str) -> Version:
    return Version(entry.split("==", 1)[1].split()[0])


def applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate(TARGET | {"extra": e}) for e in extras or {""})


def needed_at_run_time(dependencies: list[str]) -> tuple[dict[str, set[str]], list[Requirement]]:
    """{package: extras asked for} that `dependencies` reach through the installed packages'
    metadata (./dev installs requirements.lock: those are the locked versions), and every
    requirement met on the way."""
    needed: dict[str, set[str]] = {}
    todo = [Requirement(dep) for dep in dependencies]
    met: list[Requirement] = []
    while todo:
        requirement = todo.pop()
        met.append(requirement)
        name = normalized(requirement.name)
        if name in needed and set(requirement.extras) <= needed[name]:
            continue
        needed[name] = needed.get(name, set()) | set(requirement.extras)
        for line in distribution(name).requires or []:
            nested = Requirement(line)
            if applies(nested, needed[name]):
                todo.append(nested)
    return needed, met


@pytest.fixture(scope="module")
def locks(repo_root: Path) -> tuple[dict[str, str], dict[str, str]]:
    dev = entries((repo_root / "requirements.lock").read_text())
    production = entries((repo_root / "requirements-production.lock").read_text())
    return dev, production


@pytest.fixture(scope="module")
def project(repo_root: Path) -> dict[str, list[str]]:
    """pyproject's dependencies: "" the package's own, "dev" the dev extra's."""
    found = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    return {"": found["dependencies"], **found["optional-dependencies"]}


def test_the_production_lock_is_made_from_the_dev_lock_as_it_is_now(repo_root: Path) -> None:
    # Re-pinning requirements.lock without re-making this one (./dev lock does both) fails.
    made = production_lock(
        (repo_root / "requirements.lock").read_text(), (repo_root / "pyproject.toml").read_text()
    )
    assert (repo_root / "requirements-production.lock").read_text() == made


def test_it_pins_exactly_the_dev_locks_versions_and_hashes(
    locks: tuple[dict[str, str], dict[str, str]],
) -> None:
    dev, production = locks
    assert production
    assert {name: dev.get(name) for name in production} == production


def test_it_holds_every_run_time_dependency_and_no_development_tool(
    locks: tuple[dict[str, str], dict[str, str]], project: dict[str, list[str]]
) -> None:
    _, production = locks
    needed, _ = needed_at_run_time(project[""])
    assert set(production) == set(needed)
    tools = {normalized(Requirement(dep).name) for dep in project["dev"]}
    assert {"pytest", "ruff", "mypy", "setuptools"} <= tools
    assert not tools & set(production)


def test_the_wheel_installs_with_the_production_lock_alone(
    tmp_path: Path, locks: tuple[dict[str, str], dict[str, str]]
) -> None:
    """What pip's resolver and `pip check` ask, without the network: every requirement of
    the wheel, and of each package it pulls in, is met by a version the lock pins."""
    _, production = locks
    with zipfile.ZipFile(build_wheel(tmp_path)) as whl:
        [metadata] = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        declared = [
            line.removeprefix("Requires-Dist: ")
            for line in whl.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    run_time = [dep for dep in declared if applies(Requirement(dep), set())]  # not the extras
    _, met = needed_at_run_time(run_time)
    assert len(met) > len(run_time) > 0
    unmet = [
        str(requirement)
        for requirement in met
        if normalized(requirement.name) not in production
        or not requirement.specifier.contains(
            pinned_version(production[normalized(requirement.name)]), prereleases=True
        )
    ]
    assert unmet == []
