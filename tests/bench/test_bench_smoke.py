"""`python -m bench --quick` runs end to end and prints a table with every row.

A smoke test only: the ratios of a few seconds' load on a shared CI machine mean nothing, so
they are not checked; that each benchmark ran and produced its figures is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROWS = (*(f"G{n}" for n in range(1, 12)), "G12b", "G12c", "G13", "G15")


def test_quick_bench_prints_every_row(repo_root: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    redis = os.environ.get("HANGAR_TEST_REDIS_URL")
    if redis:
        env["HANGAR_TEST_REDIS_URL"] = redis
    done = subprocess.run(  # noqa: S603
        [sys.executable, "-m", "bench", "--quick", "--sqlite-dir", str(tmp_path)],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = [line for line in done.stdout.splitlines() if line.startswith("| G")]
    found = {line.split("|")[1].strip() for line in table}
    assert found == set(ROWS), (found, done.stdout)
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert "failed" not in cells[1], line
        assert cells[2] not in ("", "-"), line  # the measured figure is there
