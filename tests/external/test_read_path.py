"""How the public API reads: statements built once and run on the driver's connection
(hangar.db.reads.Read), through the read engine (hangar.db.engine.reader)."""

from __future__ import annotations

from typing import Any

import asyncpg
import httpx
import pytest
from fastapi.routing import APIRoute
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.app import create_app
from hangar.db.engine import make_engine
from hangar.db.read_pool import READ_POOL_NAME, read_connection
from hangar.db.reads import SQLITE_READ_POOL, Read, reader
from hangar.external import keyed
from hangar.fleet.models import Aircraft
from hangar.kit.container import Services
from hangar.kit.errors import is_unavailable
from hangar.squawks.models import Squawk
from tests.fixtures.factories import T0, Org

API = "/api/v1/external"


async def test_sqlite_reads_have_a_small_pool_of_their_own_disposed_with_the_engine(
    engine: AsyncEngine,
) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite only: on PostgreSQL reads share the pool, in autocommit")
    main = make_engine(f"sqlite:///{engine.url.database}")
    try:
        read = reader(main)
        assert read is not main
        assert reader(main) is read
        async with read.connect() as conn:
            assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
            assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar() == 1
        pool = read.sync_engine.pool
        assert pool.size() == SQLITE_READ_POOL  # type: ignore[attr-defined]
        assert pool.checkedin() == 1  # type: ignore[attr-defined]
    finally:
        await main.dispose()
    assert pool.checkedin() == 0  # type: ignore[attr-defined]  # closed with the engine


async def test_no_read_goes_through_sqlalchemy_execute(
    client: httpx.AsyncClient, org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    plane = await org.add(Aircraft)
    await org.add(Squawk, aircraft_id=plane["id"], created_at=T0, is_grounding=True)
    plane_id = str(plane["id"])
    urls = [
        "/reservations?limit=5",
        f"/reservations?aircraft_id={plane_id}&status=confirmed"
        "&start_after=2020-01-01T00:00:00Z&start_before=2030-01-01T00:00:00Z",
        "/aircraft",
        "/squawks",
        f"/squawks?status=open&aircraft_id={plane_id}&is_grounding=true",
        "/members",
        "/maintenance-logs",
        f"/maintenance-logs?aircraft_id={plane_id}",
        "/work-orders",
        "/work-orders?status=open",
        f"/reservations.ics?token={org.key}",
    ]
    # The first request writes the key's last_used_at (a real UPDATE): let it happen first.
    assert (await client.get(f"{API}/aircraft", headers=org.auth)).status_code == 200

    executed: list[str] = []
    real = AsyncConnection.execute

    async def spy(self: AsyncConnection, statement: Any, *args: Any, **kwargs: Any) -> Any:
        executed.append(str(statement))
        return await real(self, statement, *args, **kwargs)

    monkeypatch.setattr(AsyncConnection, "execute", spy)
    for url in urls:
        response = await client.get(API + url, headers=org.auth)
        assert response.status_code == 200, (url, response.text)
    assert executed == []


async def test_a_request_checks_out_one_read_connection_and_a_malformed_key_none(
    client: httpx.AsyncClient, org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkouts: list[object] = []
    used: list[int] = []  # the connection of each statement run

    def counting(engine: AsyncEngine) -> Any:
        checkouts.append(engine)
        return read_connection(engine)

    real_rows = Read.rows

    async def spy(self: Read[Any], conn: Any, params: dict[str, Any]) -> list[dict[str, Any]]:
        used.append(id(conn))
        return await real_rows(self, conn, params)

    monkeypatch.setattr(keyed, "read_connection", counting)
    monkeypatch.setattr(Read, "rows", spy)
    for url in ("/aircraft", "/reservations?limit=2", f"/reservations.ics?token={org.key}"):
        checkouts.clear()
        used.clear()
        assert (await client.get(API + url, headers=org.auth)).status_code == 200
        assert len(checkouts) == 1, url
        assert len(used) >= 2, url  # the key lookup, then the data
        assert len(set(used)) == 1, url  # on the one connection
    checkouts.clear()
    for auth in ({}, {"Authorization": "Bearer svc_pk_short"}):
        assert (await client.get(f"{API}/aircraft", headers=auth)).status_code == 401
    assert (await client.get(f"{API}/reservations.ics?token=nope")).status_code == 401
    assert checkouts == []


async def test_postgresql_reads_recover_when_the_server_drops_their_connections(
    client: httpx.AsyncClient, org: Org, other: Org, engine: AsyncEngine
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only: the public reads' own asyncpg pool")
    assert (await client.get(f"{API}/aircraft", headers=org.auth)).status_code == 200
    async with engine.connect() as conn:
        dropped = await conn.scalar(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = :name"
            ),
            {"name": READ_POOL_NAME},
        )
    assert dropped >= 1  # the read pool's connections are named, and were there
    # Each answer is either the data or a 503 (never a 500); the pool drops each dead
    # connection it hands out, so it is serving again before it has handed out all of them.
    statuses: list[int] = []
    while 200 not in statuses and len(statuses) <= dropped:
        statuses.append((await client.get(f"{API}/aircraft", headers=org.auth)).status_code)
    assert set(statuses) <= {200, 503}
    assert statuses[-1] == 200
    mine = await client.get(f"{API}/aircraft", headers=org.auth)
    assert mine.status_code == 200
    assert mine.json() == []  # org has no aircraft; the other org's never show up
    await other.add(Aircraft)
    assert (await client.get(f"{API}/aircraft", headers=org.auth)).json() == []


def test_the_read_pools_connection_errors_are_unavailable_not_bugs() -> None:
    lost = asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed")
    assert is_unavailable(lost)
    assert is_unavailable(asyncpg.exceptions.CannotConnectNowError("starting up"))
    assert is_unavailable(asyncpg.exceptions.TooManyConnectionsError("too many"))
    # A connection the server closed while it sat idle in the pool fails its next query so:
    assert is_unavailable(asyncpg.exceptions.InternalClientError("cannot switch to state 12"))
    assert not is_unavailable(asyncpg.exceptions.UndefinedColumnError("a bug"))


def test_the_public_api_is_matched_first_each_route_once(services: Services) -> None:
    """Its routes lie flat on the app's router, ahead of every other: a request to it is
    matched against them once, not walked through included routers first."""
    routes = create_app(services).router.routes
    operations = [route for route in routes if isinstance(route, keyed.KeyedRoute)]
    assert len(operations) == 9
    assert routes[:9] == operations
    # Every route stands on its own but for the screens' router, which includes others.
    assert [type(route).__name__ for route in routes if not isinstance(route, APIRoute)] == [
        "_IncludedRouter"
    ]
