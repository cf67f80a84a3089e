"""PostgreSQL's side: `hangar backup` wraps pg_dump -Fc and `hangar restore` pg_restore, with
the password never on a command line or in what they print; a database with tables is
replaced only with --force, and never when it holds tables the backup would leave behind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade
from tests.fixtures.environment import PG_URL, SECRET
from tests.fixtures.factories import make_org
from tests.fixtures.key_rotation import hangar_with

pytestmark = pytest.mark.skipif(not PG_URL, reason="PostgreSQL runs only")

PASSWORD = "pw-never-shown"  # the test server trusts loopback: any password is accepted


def with_password(url: str) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port or 5432}"
    return urlunsplit(parts._replace(netloc=netloc))


async def names(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as conn:
        return list(await conn.scalars(text("SELECT name FROM organizations")))


async def test_a_postgresql_round_trip_replaces_only_what_it_may(
    blank_database_url: str, restored_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, blank_database_url)
    source, target = make_engine(blank_database_url), make_engine(restored_url)
    try:
        await make_org(source, "Postgres Aero")
        named = await names(source)
        backup = tmp_path / "pg.tar"
        dump = hangar_with(source, with_password(blank_database_url), tmp_path, SECRET)
        made = await dump.run("backup", str(backup))
        assert made.json()["database_kind"] == "postgresql"
        assert PASSWORD not in made.stdout + made.stderr

        restore = hangar_with(target, with_password(restored_url), tmp_path, SECRET)
        first = await restore.run("restore", str(backup))
        # The URL it was given, the password left out (and the port it named kept).
        assert first.json()["database"] == with_password(restored_url).replace(f":{PASSWORD}", "")
        assert PASSWORD not in first.stdout + first.stderr
        async with target.begin() as conn:
            await conn.execute(text("UPDATE organizations SET name = 'changed since'"))
        await target.dispose()  # a connection of hangar's left open is a hangar using it

        refused = (await restore.run("restore", str(backup))).refused()
        assert "already holds a database" in refused
        assert "--force" in refused
        assert PASSWORD not in refused
        (await restore.run("restore", "--force", str(backup))).json()
        assert await names(target) == named

        # A table the backup does not hold (a later release's) would outlive --clean.
        async with target.begin() as conn:
            await conn.execute(text("CREATE TABLE later_feature (id int)"))
        await target.dispose()
        extra = (await restore.run("restore", "--force", str(backup))).refused()
        assert "holds tables this backup does not (later_feature)" in extra
    finally:
        await source.dispose()
        await target.dispose()


async def test_without_pg_dump_on_the_path_the_line_says_what_to_install(
    blank_database_url: str, tmp_path: Path
) -> None:
    await asyncio.to_thread(upgrade, blank_database_url)
    engine = make_engine(blank_database_url)
    try:
        dump = hangar_with(engine, blank_database_url, tmp_path, SECRET)
        bare = {"PATH": os.path.dirname(os.__file__)}  # no PostgreSQL tools there
        refused = (await dump.run("backup", str(tmp_path / "pg.tar"), env=bare)).refused()
        assert refused == (
            "hangar: pg_dump is not on the PATH: install the PostgreSQL client tools of the "
            "server's major version (Debian and Ubuntu: apt install postgresql-client)"
        )
    finally:
        await engine.dispose()
