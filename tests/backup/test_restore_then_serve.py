"""A backup of an older release's schema, restored, is what `hangar serve` migrates and serves:
its rows answer the API, and its worker delivers what was pending, signed with the secret the
backup sealed (the same HANGAR_SECRET_KEY opens it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import trustme
from alembic.script import ScriptDirectory
from gidgethub.sansio import validate_event
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.db.migrate import alembic_config, code_revisions, database_revisions, upgrade
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import Settings
from hangar.kit.container import Services
from hangar.kit.ratelimit import MemoryRateLimiter
from tests.fixtures.environment import SECRET
from tests.fixtures.factories import make_org
from tests.fixtures.key_rotation import hangar_with
from tests.fixtures.receivers import Receiver
from tests.fixtures.serve_process import serve_process
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import SECRET as WEBHOOK_SECRET
from tests.fixtures.webhooks import fire, subscribe


def previous_revision() -> str:
    """The revision before this code's newest: the schema of the release before."""
    scripts = ScriptDirectory.from_config(alembic_config())
    (head,) = code_revisions().heads
    down = scripts.get_revision(head).down_revision
    assert isinstance(down, str)
    return down


async def revisions(engine: AsyncEngine) -> frozenset[str]:
    async with engine.connect() as conn:
        return await conn.run_sync(database_revisions)


async def test_an_older_backup_restored_is_migrated_and_served(
    blank_database_url: str,
    restored_url: str,
    receiver: Receiver,
    ca: trustme.CA,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    older = previous_revision()
    await asyncio.to_thread(upgrade, blank_database_url, older)
    source, target = make_engine(blank_database_url), make_engine(restored_url)
    try:
        services = Services(
            settings=Settings(database_url=blank_database_url, secret_key=SECRET),
            engine=source,
            clock=SystemClock(),
            limiter=MemoryRateLimiter(),
            redis=None,
        )
        org = await make_org(source, "Older Aero")
        await subscribe(services, org, receiver.url("/older"))
        await fire(services, org)  # pending when the backup is taken
        backup = tmp_path / "older.tar"
        made = (await hangar_with(source, blank_database_url, tmp_path, SECRET).run(
            "backup", str(backup)
        )).json()  # fmt: skip
        assert made["revisions"] == [older]

        restored = (
            await hangar_with(target, restored_url, tmp_path, SECRET).run("restore", str(backup))
        ).json()
        assert restored["migrate"] is True
        assert await revisions(target) == {older}

        async with (
            serve_process(restored_url, 1, ca, tmp_path, repo_root) as served,
            httpx.AsyncClient(base_url=served.base) as client,
        ):
            assert await revisions(target) == code_revisions().heads
            ready = await client.get("/api/health/ready")
            assert ready.status_code == 200, ready.text
            answer = await client.get("/api/v1/external/aircraft", headers=org.auth)
            assert answer.status_code == 200, answer.text
            await eventually(lambda: receiver.heard("/older"), 60, "the pending delivery")
        (got,) = receiver.heard("/older")
        validate_event(
            got.body, signature=got.headers["X-Service-Signature"], secret=WEBHOOK_SECRET
        )
    finally:
        await source.dispose()
        await target.dispose()
