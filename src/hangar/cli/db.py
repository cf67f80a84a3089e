"""`hangar db`: the database schema."""

from __future__ import annotations

import asyncio
from collections import Counter

import typer
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.cli.common import (
    command_group,
    emit,
    fail,
    migrated_settings,
    settings,
    unreachable,
)
from hangar.db import key_check
from hangar.db.backup.refusals import HANGAR_CONNECTIONS
from hangar.db.engine import make_engine
from hangar.db.key_check import Keys
from hangar.db.migrate import code_revisions, database_revisions, pending_revisions
from hangar.foundation.config import Settings

db_app = command_group("Database schema.")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply all migrations."""
    current = migrated_settings()
    emit({"database": _redacted(current.database_url), "revision": "head"})


def _redacted(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        creds, _, host = rest.rpartition("@")
        rest = f"{creds.split(':')[0]}@{host}"
    return scheme + sep + rest


@db_app.command("status")
def db_status() -> None:
    """Say where the database's schema is, without changing it.

    One JSON object: `revision` (the migrations the database is at), `head` (this release's),
    `pending` (what `hangar db upgrade` would apply), `state` (`current`, `behind`, or
    `ahead`: a newer release migrated it), `secret_key` (whether this process's key is the
    one the database records: `ok`, `wrong key`, `not recorded`) and, on PostgreSQL,
    `processes`: the hangar releases connected to it now, by application name
    (`hangar/VERSION`), with their connection counts. Exits 1 unless the state is current."""
    current = settings()
    try:
        found = asyncio.run(_status(current))
    except Exception as exc:
        fail(unreachable("cannot read the database's schema", exc))
    emit(found)
    if found["state"] != "current":
        raise typer.Exit(1)


async def _status(current: Settings) -> dict[str, object]:
    code = code_revisions()
    engine = make_engine(current.database_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            at = await conn.run_sync(database_revisions)
            recorded = await key_check.recorded(conn) if at == code.heads else None
            processes = await _processes(conn) if conn.dialect.name == "postgresql" else None
    finally:
        await engine.dispose()
    keys = Keys(current.secret_key, current.previous_secret_keys)
    pending = pending_revisions(at)
    return {
        "database": _redacted(current.database_url),
        "revision": sorted(at),
        "head": sorted(code.heads),
        "pending": pending,
        "state": "ahead" if at - code.known else "current" if at == code.heads else "behind",
        "secret_key": (
            "not recorded" if recorded is None else "ok" if keys.hold(recorded) else "wrong key"
        ),
        "processes": processes,
    }


async def _processes(conn: AsyncConnection) -> list[dict[str, object]]:
    """The hangar releases connected now, by application name, with their connections."""
    rows = (await conn.execute(text(HANGAR_CONNECTIONS))).all()
    named = Counter(str(row.application_name) for row in rows)
    return [{"application": name, "connections": named[name]} for name in sorted(named)]
