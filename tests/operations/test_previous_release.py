"""The previous release's own code, taken from its tag, against this release's schema (issue
40, point 2): an instance of it that was serving when `hangar db upgrade` ran keeps serving
reads and product writes on the migrated database, and what it writes this release reads.
Each release's migrations only add (expand, then contract a release later), so a rolling
upgrade has old and new instances side by side on one schema.

1.5.0 predates the compatibility record (migration 0017), so its readiness goes 503 on the
new schema, as docs/operators/upgrade.md says; an instance of 1.6 and later stays ready on a
schema it can use (tests/test_migrations.py's readiness tests, with this code's own
compatibility record).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from scripts.scratch import free_port
from sqlalchemy import text

from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade_async
from tests.fixtures.environment import SECRET
from tests.fixtures.subprocesses import eventually

# Tagged from 1.5.0 on (`git tag v1.5.0`); the commit, where a clone has no tags.
PREVIOUS = ("v1.5.0", "2b8f0deff0d49af0bfbed949e6dcdef1eb58f3e9")
PASSWORD = "previous-release-password"


def previous_sources(repo_root: Path, into: Path) -> Path:
    """The previous release's `src`, from git (its tag, or its commit)."""
    tag, commit = PREVIOUS
    found = subprocess.run(  # noqa: S603 - git, on this repository
        ["git", "rev-parse", "--verify", "-q", f"{tag}^{{commit}}"],  # noqa: S607
        cwd=repo_root,
        capture_output=True,
        text=True,
        check=False,
    )
    revision = found.stdout.strip() or commit
    archive = into / "previous.tar"
    subprocess.run(  # noqa: S603
        ["git", "archive", "--format=tar", "-o", str(archive), revision, "src"],  # noqa: S607
        cwd=repo_root,
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def old_hangar(sources: Path) -> list[str]:
    """The previous release's `hangar` command: its package first on the path, this
    environment's pinned dependencies (the same run-time lock) for the rest."""
    boot = f"import sys; sys.path.insert(0, {str(sources)!r}); from hangar.cli import main; main()"
    return [sys.executable, "-c", boot]


async def run(command: list[str], env: dict[str, str], cwd: Path) -> str:
    done = await asyncio.to_thread(
        subprocess.run, command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@asynccontextmanager
async def serving(command: list[str], env: dict[str, str], cwd: Path) -> AsyncIterator[str]:
    port = free_port()
    log = (cwd / "previous-serve.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        *command, "serve", "--no-worker", "--host", "127.0.0.1", "--port", str(port),
        env=env, cwd=cwd, stdout=log, stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as probe:

            async def answers() -> bool:
                assert process.returncode is None, (cwd / "previous-serve.log").read_text()
                try:
                    return (await probe.get("/api/health/live")).status_code in (200, 404)
                except httpx.TransportError:
                    return False

            await eventually(answers, 90, "the previous release serving")
        yield base
    finally:
        process.terminate()
        await process.wait()
        log.close()


async def test_the_previous_release_keeps_serving_on_this_releases_schema(
    blank_database_url: str, repo_root: Path, tmp_path: Path
) -> None:
    old = old_hangar(previous_sources(repo_root, tmp_path))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HANGAR_", "PYTHON"))}
    env |= {"HANGAR_DATABASE_URL": blank_database_url, "HANGAR_SECRET_KEY": SECRET}
    assert (await run([*old, "--version"], env, tmp_path)).strip() == "hangar 1.5.0"

    # The database as 1.5.0 left it, with an admin, a key and an aircraft of its making.
    await run([*old, "db", "upgrade"], env, tmp_path)
    org = json.loads(await run([*old, "org", "create", "--name", "Old Aero"], env, tmp_path))
    email = "admin@old.example"
    await run(
        [*old, "user", "create", "--org", org["id"], "--email", email, "--role", "admin",
         "--password", PASSWORD, "--first-name", "Old", "--last-name", "Admin"],
        env, tmp_path,
    )  # fmt: skip
    scopes = ["--scope", "read:aircraft", "--scope", "read:squawks"]
    made = await run(
        [*old, "key", "create", "--org", org["id"], "--name", "old", *scopes], env, tmp_path
    )
    key = json.loads(made)["key"]
    await run([*old, "seed", "--org", org["id"], "--aircraft", "2"], env, tmp_path)

    async with serving(old, env, tmp_path) as base:
        # This release migrates the database under the running 1.5.0 instance.
        await upgrade_async(blank_database_url)
        bearer = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=base, headers=bearer) as api:
            fleet = await api.get("/api/v1/external/aircraft")
            assert fleet.status_code == 200, fleet.text
            plane = fleet.json()[0]["id"]
            async with httpx.AsyncClient(base_url=base) as person:
                signed = await person.post(
                    "/api/session", json={"email": email, "password": PASSWORD}
                )
                assert signed.status_code == 200, signed.text
                csrf = {"X-CSRF-Token": signed.json()["csrf_token"]}
                reported = await person.post(
                    f"/api/orgs/{org['id']}/squawks",
                    json={"aircraft_id": plane, "description": "Mag drop", "severity": "minor"},
                    headers=csrf,
                )
                assert reported.status_code == 201, reported.text
            listed = await api.get("/api/v1/external/squawks")
            assert "Mag drop" in [s["description"] for s in listed.json()]
            # 1.5.0 cannot read the compatibility record: unready, as docs/operators/upgrade.md
            # says.
            ready = await api.get("/api/health/ready")
            assert ready.status_code == 503
            assert ready.json()["checks"]["migrations"] == "unknown revision"

    # What the old release wrote on the new schema, this release reads: the squawk's event,
    # with a delivery for each webhook it fans out to (none here) to come.
    engine = make_engine(blank_database_url)
    try:
        async with engine.connect() as conn:
            names = (await conn.execute(text("SELECT name FROM events"))).scalars().all()
    finally:
        await engine.dispose()
    assert "squawk.created" in names
