"""The layer contracts in pyproject.toml hold the rules they claim: each wrong-way import below,
added to a copy of the source, breaks the contract named beside it (and `./dev test`, which
runs `lint-imports`). A contract loosened by mistake fails here, not in a later review."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

LAYERS = "Layers: process wiring, presentation, features"
DOMAIN = "The domain imports no web framework"
FRAMEWORK = "Framework internals: only the modules that must"
WEBHOOK_ROOMS = "Inside webhooks: service, inspection, delivery"
# (module file, the import added to it, the contract it must break)
PROBES = [
    ("external/routes/lists.py", "hangar.reservations.service", "The read API imports no writes"),
    ("webhooks/events/outbox.py", "fastapi", DOMAIN),
    ("keys/service.py", "starlette.responses", DOMAIN),
    ("reservations/queries.py", "hangar.reservations.service", "Inside each feature: service"),
    ("fleet/mel_expiry.py", "hangar.routes.webhooks", "Route modules are imported by the app"),
    ("routes/fleet.py", "hangar.routes.keys", "Route modules import no other route module"),
    ("web/keys.py", "hangar.orgs.commands", "The screens and the CLI reach the writes"),
    ("db/migrations/env.py", "hangar.web", LAYERS),
    ("reservations/service.py", "hangar.fleet.models", "Only fleet (and the wiring"),
    ("orgs/invitations.py", "hangar.keys.service", LAYERS),
    ("external/keyed.py", "fastapi._compat", FRAMEWORK),
    ("cli/serve.py", "uvicorn.supervisors", FRAMEWORK),
    ("http/server.py", "uvicorn.protocols.http.h11_impl", FRAMEWORK),
    ("kit/params.py", "pydantic._internal._validators", FRAMEWORK),
    ("webhooks/delivery/states.py", "hangar.webhooks.inspection.gauges", WEBHOOK_ROOMS),
    ("webhooks/egress/url_policy.py", "hangar.webhooks.events.catalogue", WEBHOOK_ROOMS),
]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source and its contracts, copied once; each probe edits one file and restores it."""
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(
        ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def lint(root: Path) -> str:
    done = subprocess.run(  # noqa: S603 - our own linter on our own copy
        [str(LINT_IMPORTS), "--no-logo", "--no-cache"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root / "src")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout + done.stderr


def test_the_source_as_it_is_keeps_every_contract(copy: Path) -> None:
    out = lint(copy)
    assert "BROKEN" not in out, out
    assert " kept, 0 broken." in out, out


@pytest.mark.parametrize(("module", "imported", "contract"), PROBES, ids=[p[0] for p in PROBES])
def test_a_wrong_way_import_breaks_its_contract(
    copy: Path, module: str, imported: str, contract: str
) -> None:
    path = copy / "src" / "hangar" / module
    before = path.read_text()
    path.write_text(f"{before}\nimport {imported}  # the probe\n")
    try:
        out = lint(copy)
    finally:
        path.write_text(before)
    # "<name> BROKEN", or "<name> BROKEN (n ignored imports)" for a contract that ignores some
    broken = [line for line in out.splitlines() if " BROKEN" in line]
    assert any(line.startswith(contract) for line in broken), out
