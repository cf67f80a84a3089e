"""The live OpenAPI document passes Spectral (`spectral:oas`) and Redocly (`recommended`) with
no error and no warning: the linters pinned in tests/apilint/package-lock.json, with the
rulesets of its .spectral.yaml and redocly.yaml."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.locked_tools import NPM, NPM_ENV, NPX, npm_linters

pytestmark = pytest.mark.skipif(
    NPM is None or NPX is None,
    reason="needs npm and npx (node 20) to run the linters pinned in tests/apilint",
)


@pytest.fixture(scope="session")
def apilint() -> Path:
    return npm_linters()


@pytest.fixture
async def document(client: httpx.AsyncClient, tmp_path: Path) -> Path:
    response = await client.get("/api/v1/external/openapi.json")
    assert response.status_code == 200
    path = tmp_path / "openapi.json"
    path.write_bytes(response.content)
    return path


def _lint(cwd: Path, *args: str) -> Any:
    assert NPX is not None
    done = subprocess.run(  # noqa: S603 (the pinned linters, no shell)
        [NPX, "--no-install", *args],
        cwd=cwd,  # where each finds its configuration file
        env={**os.environ, **NPM_ENV},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{args[0]} did not answer JSON (exit {done.returncode}):\n{done.stderr}")


async def test_spectral_finds_nothing(apilint: Path, document: Path) -> None:
    results = await asyncio.to_thread(
        _lint, apilint, "spectral", "lint", "--format", "json", "--quiet", str(document)
    )
    # Severities 0 and 1 are errors and warnings; infos and hints are not asked of it.
    problems = [r for r in results if r["severity"] <= 1]
    assert problems == [], json.dumps(problems, indent=1)


async def test_redocly_finds_nothing(apilint: Path, document: Path) -> None:
    report = await asyncio.to_thread(
        _lint, apilint, "redocly", "lint", "--format", "json", str(document)
    )
    totals = report["totals"]
    assert (totals["errors"], totals["warnings"]) == (0, 0), json.dumps(
        report["problems"], indent=1
    )
