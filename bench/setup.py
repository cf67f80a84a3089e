"""Data for the benchmarks: one seeded organization per database, made once and reused.

The organization is made with the `hangar` command as a user would (`hangar org create`,
`hangar seed`); how long `hangar seed` took is kept with the database (PostgreSQL: the
database's comment; SQLite: a file beside it), so a later run still reports it (G10).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.foundation.ids import ascending_id
from hangar.foundation.sqlite_files import sqlite_path
from hangar.kit import cursor
from hangar.kit.scopes import SCOPES
from hangar.orgs.models import Organization
from hangar.reservations.models import Reservation
from hangar.webhooks.events.catalogue import reservation_created
from hangar.webhooks.events.outbox import serialize
from hangar.webhooks.models import Event

ORG_NAME = "Bench Aero"
SECRET = "bench-secret-key-" + "x" * 32
HANGAR = [str(Path(sys.executable).with_name("hangar"))]


@dataclass(frozen=True)
class Sizes:
    reservations: int
    aircraft: int = 60
    members: int = 2000


@dataclass
class Dataset:
    database_url: str
    env: dict[str, str]
    org_id: uuid.UUID
    key: str
    reservations: int
    seed_seconds: float | None
    seeded_now: bool


def hangar_env(database_url: str, redis_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_") or k == "HANGAR_TEST"}
    env.update(
        HANGAR_DATABASE_URL=database_url,
        HANGAR_SECRET_KEY=SECRET,
        HANGAR_REDIS_PREFIX="hangar-bench",
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
    )
    if redis_url:
        env["HANGAR_REDIS_URL"] = redis_url
    return env


def hangar(env: dict[str, str], *args: str, timeout: float = 600) -> dict[str, Any]:
    out = subprocess.run(  # noqa: S603 (our own command)
        [*HANGAR, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"hangar {' '.join(args[:2])} failed: {out.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def create_pg_database(url: str) -> None:
    import asyncpg

    base, _, name = url.rpartition("/")
    conn = await asyncpg.connect(base.replace("postgresql://", "postgres://", 1) + "/postgres")
    try:
        if not await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


# The delivery tables churn: each delivery is inserted, leased, settled. Production keeps
# their dead rows in check with autovacuum (PostgreSQL's default); this machine's server runs
# with it off, so a run would inherit every earlier run's dead index entries. Each delivery
# row starts from a vacuumed database instead, as a server with autovacuum would be.
QUEUE_TABLES = "webhook_deliveries, webhook_attempts, webhook_redeliveries, events"


async def vacuum_queue(url: str) -> None:
    """VACUUM (ANALYZE) the delivery tables of `url`, if it is a PostgreSQL database."""
    await _on_queue(url, "VACUUM (ANALYZE)")


async def analyze_queue(url: str) -> None:
    """ANALYZE the delivery tables of `url` after a bulk write, if it is PostgreSQL: what
    autovacuum does within a minute of one in production. Without it (this machine runs with
    autovacuum off) the planner goes on believing the queue as small as when it was last
    vacuumed, and plans the claim's lookups as scans of the whole table: a claim among a
    bulk-written backlog of 20,000 took 0.4-3.6 s, where with statistics it takes a few ms."""
    await _on_queue(url, "ANALYZE")


async def _on_queue(url: str, command: str) -> None:
    """`command` on the delivery tables of `url`, if it is a PostgreSQL database."""
    import asyncpg

    if not url.startswith(("postgresql://", "postgres://")):
        return
    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://", 1))
    try:
        await conn.execute(f"{command} {QUEUE_TABLES}")
    finally:
        await conn.close()


async def _pg_comment(url: str, value: str | None = None) -> str | None:
    import asyncpg

    name = url.rpartition("/")[2]
    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://", 1))
    try:
        if value is not None:
            quoted = value.replace("'", "''")
            await conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{quoted}'")
            return value
        found: str | None = await conn.fetchval(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1",
            name,
        )
        return found
    finally:
        await conn.close()


def _read_seed_seconds(url: str) -> float | None:
    path = sqlite_path(url)
    if path is not None:
        note = path.with_name(path.name + ".seed.json")
        text = note.read_text() if note.exists() else None
    else:
        text = asyncio.run(_pg_comment(url))
    try:
        return float(json.loads(text)["seed_seconds"]) if text else None
    except (ValueError, KeyError, TypeError):
        return None


def _write_seed_seconds(url: str, seconds: float) -> None:
    text = json.dumps({"seed_seconds": round(seconds, 2)})
    path = sqlite_path(url)
    if path is not None:
        path.with_name(path.name + ".seed.json").write_text(text)
    else:
        asyncio.run(_pg_comment(url, text))


async def _find_org(engine: AsyncEngine) -> tuple[uuid.UUID | None, int]:
    async with engine.connect() as conn:
        org_id = await conn.scalar(
            select(Organization.id).where(Organization.name == ORG_NAME).limit(1)
        )
        if org_id is None:
            return None, 0
        count = await conn.scalar(
            select(func.count()).select_from(Reservation).where(Reservation.org_id == org_id)
        )
        return org_id, int(count or 0)


def prepare(
    database_url: str, sizes: Sizes, redis_url: str | None, log: Any, *, reseed: bool = False
) -> Dataset:
    """The seeded organization and a fresh key holding every scope."""
    env = hangar_env(database_url, redis_url)
    path = sqlite_path(database_url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if reseed:
            for suffix in ("", "-wal", "-shm", ".seed.json"):
                Path(str(path) + suffix).unlink(missing_ok=True)
    else:
        asyncio.run(create_pg_database(database_url))
    hangar(env, "db", "upgrade")

    async def find() -> tuple[uuid.UUID | None, int]:
        engine = make_engine(database_url, pool_size=1)
        try:
            return await _find_org(engine)
        finally:
            await engine.dispose()

    org_id, count = asyncio.run(find())
    seeded_now = False
    seconds = _read_seed_seconds(database_url)
    if org_id is None or count != sizes.reservations or reseed:
        if org_id is not None:
            raise RuntimeError(
                f"{database_url} holds a '{ORG_NAME}' with {count} reservations, not "
                f"{sizes.reservations}: drop that database (or pass --reseed for SQLite)"
            )
        log(f"seeding {sizes.reservations:,} reservations into {database_url} ...")
        org_id = uuid.UUID(hangar(env, "org", "create", "--name", ORG_NAME)["id"])
        started = time.monotonic()
        hangar(
            env,
            "seed",
            "--org",
            str(org_id),
            "--aircraft",
            str(sizes.aircraft),
            "--members",
            str(sizes.members),
            "--reservations",
            str(sizes.reservations),
            timeout=3600,
        )
        seconds = time.monotonic() - started
        _write_seed_seconds(database_url, seconds)
        seeded_now = True
        log(f"  seeded in {seconds:.1f} s")
    scopes = [arg for s in SCOPES for arg in ("--scope", s)]
    key = hangar(env, "key", "create", "--org", str(org_id), "--name", "bench", *scopes)["key"]
    return Dataset(database_url, env, org_id, key, sizes.reservations, seconds, seeded_now)


def cursor_at_depth(data: Dataset, depth: int) -> tuple[str, datetime]:
    """The `after` that a client walking page by page would hold `depth` rows in, and the
    start time of the row it points at."""

    async def position() -> cursor.Position:
        engine = make_engine(data.database_url, pool_size=1)
        try:
            async with engine.connect() as conn:
                row = (
                    await conn.execute(
                        select(Reservation.start_time, Reservation.id)
                        .where(
                            Reservation.org_id == data.org_id,
                            Reservation.deleted_at.is_(None),
                            Reservation.start_time.is_not(None),
                        )
                        .order_by(Reservation.start_time.desc(), Reservation.id.desc())
                        .offset(depth - 1)
                        .limit(1)
                    )
                ).one()
                return cursor.Position(start_time=row.start_time, id=row.id)
        finally:
            await engine.dispose()

    keys = cursor.CursorKeys.derive(SECRET)
    at = asyncio.run(position())
    assert at.start_time is not None
    return cursor.encode(keys, data.org_id, "||||", at), at.start_time


EVENTS = 2_000  # G15's log: four full pages
RESERVATION_EVENT_COLUMNS = [
    getattr(Reservation, name)
    for name in (
        "id",
        "aircraft_id",
        "pilot_id",
        "instructor_id",
        "start_time",
        "end_time",
        "activity_type",
        "status",
        "is_backup",
    )
]


def ensure_events(data: Dataset, log: Any) -> None:
    """`EVENTS` reservation.created events of the last day in the organization's log, written
    as the outbox writes them (ascending ids, the data serialized once) but without
    deliveries: G15 reads the log, it does not deliver. Kept for later runs; topped up when
    the retention window has taken some."""

    async def top_up() -> None:
        engine = make_engine(data.database_url, pool_size=1)
        now = datetime.now(UTC)
        try:
            async with engine.begin() as conn:
                have = await conn.scalar(
                    select(func.count())
                    .select_from(Event)
                    .where(Event.org_id == data.org_id, Event.created_at >= now - timedelta(days=1))
                )
                missing = EVENTS - (have or 0)
                if missing <= 0:
                    return
                log(f"G15: recording {missing:,} events")
                rows = (
                    await conn.execute(
                        select(*RESERVATION_EVENT_COLUMNS)
                        .where(Reservation.org_id == data.org_id)
                        .limit(missing)
                    )
                ).all()
                await conn.execute(
                    insert(Event),
                    [
                        {
                            "id": ascending_id(),
                            "org_id": data.org_id,
                            "name": "reservation.created",
                            "data": serialize(reservation_created(row._mapping)),
                            "created_at": now,
                        }
                        for row in rows
                    ],
                )
        finally:
            await engine.dispose()

    asyncio.run(top_up())
