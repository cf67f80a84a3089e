"""Alembic, driven from code: `hangar db upgrade`, `hangar serve` and the tests all come here."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from hangar.db.engine import async_url

# Alembic's package-resource form: the scripts are found through the installed package
# (importlib.resources), wherever it is installed.
MIGRATIONS = "hangar.db:migrations"


def alembic_config(database_url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS)
    if database_url is not None:
        cfg.set_main_option("sqlalchemy.url", async_url(database_url).replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    # env.py runs its own event loop; keep it off the caller's.
    await asyncio.to_thread(upgrade, database_url, revision)


@dataclass(frozen=True)
class Revisions:
    heads: frozenset[str]  # where this code's migrations end
    known: frozenset[str]  # every revision this code has a script for


@cache
def code_revisions() -> Revisions:
    """The migrations this code ships, read from their scripts once per process."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return Revisions(
        heads=frozenset(scripts.get_heads()),
        known=frozenset(script.revision for script in scripts.walk_revisions()),
    )


def database_revisions(connection: Connection) -> frozenset[str]:
    """The revisions the database is at (none when it was never migrated)."""
    return frozenset(MigrationContext.configure(connection).get_current_heads())
