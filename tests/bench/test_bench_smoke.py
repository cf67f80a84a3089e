"""`python -m bench --smoke` runs end to end and prints a table with every row.

A smoke test only: the ratios of a quarter of a second's load on a shared CI machine mean
nothing, so they are not checked; that each benchmark ran and produced its figures is. One
test per section of the bench, so that parallel workers share them out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import environment

SECTIONS = {
    "read": {"G1", "G2", "G3", "G4", "G5", "G9", "G10", "G11"},
    "webhooks": {"G6", "G7", "G8", "G9", "G13", "G13b", "G16"},
    "hostile": {"G12b", "G12c", "G12d"},
    "events": {"G15"},
}
# Every goal of the quick bench is some section's.
ROWS = {*(f"G{n}" for n in range(1, 12)), "G12b", "G12c", "G12d", "G13", "G13b", "G15", "G16"}


def test_the_sections_hold_every_row() -> None:
    assert set().union(*SECTIONS.values()) == ROWS


def smoke(section: str, repo_root: Path, tmp_path: Path, redis_url: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    if redis_url:
        env["HANGAR_TEST_REDIS_URL"] = redis_url
    argv = [sys.executable, "-m", "bench", "--smoke", "--only", section]
    done = subprocess.run(  # noqa: S603
        [*argv, "--sqlite-dir", str(tmp_path)],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = [line for line in done.stdout.splitlines() if line.startswith("| G")]
    found = {line.split("|")[1].strip() for line in table}
    assert found == SECTIONS[section], (found, done.stdout)
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert "failed" not in cells[1], line
        assert cells[2] not in ("", "-"), line  # the measured figure is there


# A few dozen short rows each, each starting servers of its own. The sections whose servers
# count rate limits and sign-in failures in Redis when there is one are given the run's
# Redis, and so are repeated by the PostgreSQL + Redis pass; the webhooks section, on SQLite
# alone whatever the run, is not.
@pytest.mark.timeout(180)
@pytest.mark.parametrize("section", [s for s in SECTIONS if s != "webhooks"])
def test_each_section_of_the_smoke_bench_prints_its_rows(
    section: str, repo_root: Path, tmp_path: Path
) -> None:
    smoke(section, repo_root, tmp_path, environment.REDIS_URL)


@pytest.mark.timeout(180)
def test_the_webhooks_section_of_the_smoke_bench_prints_its_rows(
    repo_root: Path, tmp_path: Path
) -> None:
    smoke("webhooks", repo_root, tmp_path, None)
