"""Alembic, driven from code: `hangar db upgrade`, `hangar serve` and the tests all come here."""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Integer, String
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from hangar.db.base import Base
from hangar.db.engine import async_url

# Alembic's package-resource form: the scripts are found through the installed package
# (importlib.resources), wherever it is installed.
MIGRATIONS = "hangar.db:migrations"
# Every hangar process that migrates PostgreSQL takes this advisory lock first (env.py;
# pg_advisory_lock's one bigint key, "hgr-migr" as bytes), so two machines upgrading at once
# take turns: the second waits, then finds nothing left to do, instead of failing halfway on
# the first's tables. Its session holds it until its connection closes, across the commits
# of CONCURRENTLY.
MIGRATION_LOCK = int.from_bytes(b"hgr-migr", "big")


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


class SchemaCompatibility(Base):
    """One row: what `oldest_compatible_head` was for the code that last migrated to its head."""

    __tablename__ = "schema_compatibility"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    oldest_head: Mapped[str] = mapped_column(String(32))


@cache
def oldest_compatible_head() -> str:
    """The oldest migration head whose code still works on this code's schema.

    Each migration says what code it leaves working in its module's `oldest_compatible` (an
    expand step, such as a new table or a nullable column, leaves the previous head's code
    working); one that does not say is a contract step, which only its own code survives.
    The schema at the head serves the code of the latest such floor along the way: a
    release at or after it stays ready on this schema (hangar.http.health)."""
    scripts = ScriptDirectory.from_config(alembic_config())
    chain = list(reversed(list(scripts.walk_revisions())))  # base first
    order = {script.revision: n for n, script in enumerate(chain)}
    floors = [getattr(s.module, "oldest_compatible", s.revision) for s in chain]
    return max(floors, key=order.__getitem__)


def pending_revisions(at: frozenset[str]) -> list[str]:
    """What `hangar db upgrade` would apply to a database at `at`, in the order it would
    (none for a database at this code's head or ahead of it)."""
    code = code_revisions()
    if at == code.heads or at - code.known:
        return []
    scripts = ScriptDirectory.from_config(alembic_config())
    lower = next(iter(at)) if len(at) == 1 else "base"
    found = scripts.iterate_revisions("heads", lower)
    return [script.revision for script in reversed(list(found))]


# Alembic's MigrationContext logs two lines at info each time it is made ("Context impl ...",
# "Will assume ..."): right while migrating, noise on every readiness probe, which makes one.
_reading_revisions: ContextVar[bool] = ContextVar("hangar_reading_revisions", default=False)


class _QuietWhileReading(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _reading_revisions.get()


# A filter (not a level) on Alembic's logger: it holds for this call's context only, so a
# migration running meanwhile in another thread or task still logs.
logging.getLogger("alembic.runtime.migration").addFilter(_QuietWhileReading())


def database_revisions(connection: Connection) -> frozenset[str]:
    """The revisions the database is at (none when it was never migrated); logs nothing."""
    reading = _reading_revisions.set(True)
    try:
        return frozenset(MigrationContext.configure(connection).get_current_heads())
    finally:
        _reading_revisions.reset(reading)
