"""Bytes stored per delivery, measured: how much the delivery tables grow per delivery kept.

Inserts N deliveries into a fresh database at head, each of its own event (a squawk.created
as the catalogue makes it) and with one attempt as the dispatcher records it: the request
headers as sent (the signed set and what aiohttp adds), a receiver's usual response headers,
and a 2 KB response body (the most the log keeps). Prints the growth of each table with its
indexes (and TOAST), per delivery. PostgreSQL: pg_total_relation_size, after VACUUM (ANALYZE)
so the visibility and free-space maps are counted; SQLite: the pages of each table and index
(dbstat). The figures are in docs/operators/retention.md.

    .venv/bin/python scripts/delivery_bytes.py                 # SQLite, in a temporary file
    .venv/bin/python scripts/delivery_bytes.py --database-url postgresql://root@127.0.0.1/x
        # PostgreSQL: a scratch database on that server, dropped afterwards
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncEngine

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from scripts.scratch import scratch_database  # noqa: E402

from hangar.db.engine import make_engine  # noqa: E402
from hangar.db.migrate import upgrade_async  # noqa: E402
from hangar.foundation.crypto import SecretBox  # noqa: E402
from hangar.foundation.ids import new_id  # noqa: E402
from hangar.kit.container import WEBHOOK_SECRETS  # noqa: E402
from hangar.orgs.commands import create_org  # noqa: E402
from hangar.webhooks.delivery import signing  # noqa: E402
from hangar.webhooks.events import catalogue, outbox  # noqa: E402
from hangar.webhooks.models import Attempt, Delivery, Event, Subscription  # noqa: E402

TABLES = (Event.__tablename__, Delivery.__tablename__, Attempt.__tablename__)
CHUNK = 1000
T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
SECRET = secrets.token_hex(32)


@asynccontextmanager
async def database(server_url: str | None) -> AsyncIterator[str]:
    if server_url is None:
        with tempfile.TemporaryDirectory() as where:
            yield f"sqlite:///{where}/bytes.db"
        return
    async with scratch_database(server_url, "hangar_bytes") as url:
        yield url


def squawk(n: int) -> Mapping[str, Any]:
    return catalogue.squawk_created(
        {
            "id": new_id(),
            "aircraft_id": new_id(),
            "description": f"Left main tire worn to the cord, noticed on post-flight {n}",
            "severity": "major",
            "is_grounding": False,
            "reported_by": new_id(),
            "created_at": T0,
        }
    )


def response_body() -> str:
    """2 KB of a receiver's JSON answer, not one repeated string (that would compress)."""
    body = f'{{"received":true,"id":"{uuid.uuid4()}","trace":"'
    return (body + secrets.token_hex(1024))[:2046] + '"}'


def rows(sub_id: uuid.UUID, org_id: uuid.UUID, n: int) -> tuple[list[Any], list[Any], list[Any]]:
    events, deliveries, attempts = [], [], []
    at = T0 + timedelta(seconds=n)
    data = outbox.serialize(squawk(n))
    event_id = new_id()
    events.append(
        {
            "id": event_id,
            "org_id": org_id,
            "name": catalogue.SQUAWK_CREATED,
            "data": data,
            "created_at": at,
        }
    )
    delivery = outbox.pending_delivery(org_id, sub_id, event_id, catalogue.SQUAWK_CREATED, at)
    delivery |= {"status": "succeeded", "attempts_made": 1, "completed_at": at}
    deliveries.append(delivery)
    body = signing.envelope(catalogue.SQUAWK_CREATED, at, data)
    sent = signing.headers(catalogue.SQUAWK_CREATED, str(delivery["id"]), SECRET, body)
    attempts.append(
        {
            "id": new_id(),
            "delivery_id": delivery["id"],
            "number": 1,
            "started_at": at,
            "duration_ms": 143,
            "status_code": 200,
            "error": None,
            "response_body": response_body(),
            "outcome": "succeeded",
            "outcome_detail": None,
            # What aiohttp sends: the signed set, then the headers it adds.
            "request_headers": [
                ["Host", "hooks.example-receiver.com"],
                *([name, value] for name, value in sent.items()),
                ["Accept", "*/*"],
                ["Accept-Encoding", "identity"],
                ["Content-Length", str(len(body))],
            ],
            "response_reason": "OK",
            "response_headers": [
                ["Date", "Mon, 04 May 2026 10:00:30 GMT"],
                ["Content-Type", "application/json; charset=utf-8"],
                ["Content-Length", "2048"],
                ["Connection", "keep-alive"],
                ["Server", "nginx/1.24.0"],
                ["X-Request-Id", uuid.uuid4().hex],
                ["Strict-Transport-Security", "max-age=31536000; includeSubDomains"],
                ["Cache-Control", "no-store"],
            ],
        }
    )
    return events, deliveries, attempts


async def sizes(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            await conn.execute(text("COMMIT"))
            await conn.execute(text(f"VACUUM (ANALYZE) {', '.join(TABLES)}"))
            found = {
                t: await conn.scalar(text(f"SELECT pg_total_relation_size('{t}')")) for t in TABLES
            }
        else:
            await conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
            found = {
                t: await conn.scalar(
                    text(
                        "SELECT sum(pgsize) FROM dbstat WHERE name = :t OR name IN "
                        "(SELECT name FROM sqlite_master WHERE tbl_name = :t AND type = 'index')"
                    ),
                    {"t": t},
                )
                for t in TABLES
            }
    return {t: int(v or 0) for t, v in found.items()}


async def measure(url: str, n: int) -> None:
    await upgrade_async(url)
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.begin() as conn:
            org_id = await create_org(conn, "Bytes per delivery", T0)
            sub_id = new_id()
            await conn.execute(
                insert(Subscription).values(
                    id=sub_id,
                    org_id=org_id,
                    name="receiver",
                    url="https://hooks.example.com/",
                    events=["*"],
                    secret_encrypted=SecretBox(SECRET, WEBHOOK_SECRETS).seal(SECRET),
                    secret_prefix=SECRET[:8],
                    enabled=True,
                    consecutive_failures=0,
                    created_at=T0,
                    updated_at=T0,
                )
            )
        before = await sizes(engine)
        for start in range(0, n, CHUNK):
            made: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
            for i in range(start, min(start + CHUNK, n)):
                for kept, new in zip(made, rows(sub_id, org_id, i), strict=True):
                    kept.extend(new)
            async with engine.begin() as conn:
                for model, values in zip((Event, Delivery, Attempt), made, strict=True):
                    await conn.execute(insert(model), values)
        after = await sizes(engine)
    finally:
        await engine.dispose()
    print(f"{engine.dialect.name}, {n} deliveries, one attempt each:")
    for t in TABLES:
        print(f"  {t:20} {(after[t] - before[t]) / n:8.0f} bytes per delivery")
    total = sum(after[t] - before[t] for t in TABLES) / n
    a_million = total * 1_000_000 / 2**30
    print(f"  {'together':20} {total:8.0f} bytes per delivery ({a_million:.2f} GiB a million)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a PostgreSQL server (a scratch database is made)")
    parser.add_argument("-n", type=int, default=20_000, help="deliveries to insert")
    args = parser.parse_args()

    async def run() -> None:
        async with database(args.database_url) as url:
            await measure(url, args.n)

    asyncio.run(run())


if __name__ == "__main__":
    main()
