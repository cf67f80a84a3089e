"""`hangar db status` (issue 40): where the schema is, what an upgrade would apply, whether
this process's key is the database's, and on PostgreSQL which hangar releases are connected;
it changes nothing, and exits 1 unless the schema is this release's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import text

from hangar import __version__
from hangar.db.engine import make_engine
from hangar.db.migrate import code_revisions, upgrade_async
from tests.fixtures.cli import Ran
from tests.fixtures.environment import PG_URL, SECRET
from tests.fixtures.key_rotation import LOST_KEY, hangar_with


def status(ran: Ran) -> dict[str, Any]:
    lines = ran.stdout.splitlines()
    assert len(lines) == 1, ran.stdout + ran.stderr
    found: dict[str, Any] = orjson.loads(lines[0])
    return found


async def test_status_says_where_the_schema_is_and_changes_nothing(
    blank_database_url: str, tmp_path: Path
) -> None:
    (head,) = code_revisions().heads
    await upgrade_async(blank_database_url, "0015")
    engine = make_engine(blank_database_url)
    try:
        cli = hangar_with(engine, blank_database_url, tmp_path, SECRET)
        behind = await cli.run("db", "status")
        assert behind.code == 1
        found = status(behind)
        assert found["revision"] == ["0015"]
        assert found["head"] == [head]
        assert found["pending"][0] == "0016"
        assert found["pending"][-1] == head
        assert found["state"] == "behind"
        assert found["secret_key"] == "not recorded"
        assert status(await cli.run("db", "status"))["revision"] == ["0015"]  # unchanged

        assert (await cli.run("db", "upgrade")).code == 0
        # A process on PostgreSQL holds connections named for its release.
        held = await engine.connect()
        await held.execute(text("SELECT 1"))
        now = await cli.run("db", "status")
        assert now.code == 0, now.stderr
        found = status(now)
        assert (found["revision"], found["pending"], found["state"]) == ([head], [], "current")
        assert found["secret_key"] == "ok"
        if PG_URL:
            assert {"application": f"hangar/{__version__}", "connections": 1} in found["processes"]
        else:
            assert found["processes"] is None
        await held.close()
        # Another key is told, not refused: status is how an operator finds out.
        wrong = status(await hangar_with(engine, blank_database_url, tmp_path, LOST_KEY).run(
            "db", "status"
        ))  # fmt: skip
        assert wrong["secret_key"] == "wrong key"

        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        ahead = await cli.run("db", "status")
        assert ahead.code == 1
        assert (status(ahead)["state"], status(ahead)["pending"]) == ("ahead", [])
    finally:
        await engine.dispose()
