"""GET /api/health (the spec's: the stores answer) and GET /api/health/ready (for load
balancers: this instance's database answers and its migrations are this release's head;
Redis is reported, and does not make it unready). Both answer within their bound whatever
the stores do: a hung database or Redis is a port that accepts and never answers."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.app import create_app
from hangar.db import key_check
from hangar.db.engine import make_engine
from hangar.db.migrate import code_revisions, upgrade_async
from hangar.http.health import liveness, readiness
from hangar.kit.container import Services
from tests.fixtures.environment import REDIS_URL

URL = "/api/health"
READY = "/api/health/ready"
LIVE = "/api/health/live"


def closed_port() -> int:
    """A local port nothing listens on: bound once to pick it, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def health_of(services: Services, url: str = URL) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        return await c.get(url)


def assert_unavailable(response: httpx.Response, store: str) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert isinstance(body["detail"], str)
    assert body["code"] == "SERVICE_UNAVAILABLE"  # the same code the API answers with
    assert store in body["detail"].lower()
    assert body.get("status") != "ok"
    assert "Traceback" not in response.text


async def test_ok_when_every_store_answers(client: httpx.AsyncClient) -> None:
    response = await client.get(URL)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"status": "ok"}


async def test_needs_no_key_and_ignores_a_bad_one(client: httpx.AsyncClient) -> None:
    response = await client.get(URL, headers={"Authorization": "Bearer nonsense"})
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.fixture(params=["sqlite-missing-directory", "postgresql-closed-port"])
async def dead_engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    if request.param == "sqlite-missing-directory":
        url = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'hangar.db'}"
    else:
        url = f"postgresql://root@127.0.0.1:{closed_port()}/test"
    engine = make_engine(url)
    yield engine
    await engine.dispose()


async def test_503_naming_the_database_when_it_is_unreachable(
    services: Services, dead_engine: AsyncEngine
) -> None:
    response = await health_of(replace(services, engine=dead_engine))
    assert_unavailable(response, "database")


async def test_503_naming_redis_when_it_is_unreachable(services: Services) -> None:
    # No retries: the refusal is immediate, so the test does not wait out the check's timeout.
    dead = Redis(host="127.0.0.1", port=closed_port(), retry=Retry(NoBackoff(), 0))
    try:
        response = await health_of(replace(services, redis=dead))
    finally:
        await dead.aclose()
    assert_unavailable(response, "redis")


# --- GET /api/health/ready ----------------------------------------------------------------


def assert_not_ready(response: httpx.Response, **failed: str) -> dict[str, str]:
    """A 503 in the one error shape, whose checks name exactly the failed ones."""
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["code"] == "SERVICE_UNAVAILABLE"
    assert body["status"] == "unavailable"
    assert body["detail"].startswith("Not ready: ")
    checks: dict[str, str] = body["checks"]
    assert {name: checks[name] for name in failed} == failed
    assert "Traceback" not in response.text
    return checks


REDIS_STATE = "ok" if REDIS_URL else "not configured"


async def test_ready_when_the_stores_answer_and_the_migrations_are_at_head(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(READY)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "status": "ready",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "secret_key": "ok",
            "redis": REDIS_STATE,
        },
    }


@pytest.fixture
async def blank_engine(blank_database_url: str) -> AsyncIterator[tuple[str, AsyncEngine]]:
    engine = make_engine(blank_database_url)
    yield blank_database_url, engine
    await engine.dispose()


@pytest.mark.parametrize("revision", ["0005", None], ids=["one-behind", "never-migrated"])
async def test_not_ready_while_the_database_is_behind_the_code(
    services: Services, blank_engine: tuple[str, AsyncEngine], revision: str | None
) -> None:
    url, engine = blank_engine
    if revision is not None:
        await upgrade_async(url, revision)
    assert code_revisions().heads != {revision}  # the test means something only if so
    response = await health_of(replace(services, engine=engine), READY)
    checks = assert_not_ready(response, migrations="behind")
    assert checks["database"] == "ok"
    detail = response.json()["detail"]
    assert "hangar db upgrade" in detail
    assert (f"at migration {revision}" if revision else "not migrated") in detail
    # The spec's health says the stores answer; being behind is readiness's business alone.
    assert (await health_of(replace(services, engine=engine))).status_code == 200

    await upgrade_async(url)
    ready = await health_of(replace(services, engine=engine), READY)
    assert ready.status_code == 200, ready.text


async def test_not_ready_when_a_newer_release_migrated_to_a_schema_it_cannot_use(
    services: Services, blank_engine: tuple[str, AsyncEngine]
) -> None:
    url, engine = blank_engine
    await upgrade_async(url)
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        # A contract step: only 9999's own code works on it.
        await conn.execute(text("UPDATE schema_compatibility SET oldest_head = '9999'"))
    response = await health_of(replace(services, engine=engine), READY)
    assert_not_ready(response, database="ok", migrations="unknown revision")
    assert "9999" in response.json()["detail"]
    assert "cannot use" in response.json()["detail"]


async def test_ready_when_a_newer_release_migrated_to_a_schema_it_still_works_on(
    services: Services, blank_engine: tuple[str, AsyncEngine]
) -> None:
    """Expand steps leave the previous release serving during an upgrade (issue 40: every
    old instance went unready at once): the newer schema names the oldest head whose code
    still works on it, and a release at or past that head stays ready."""
    url, engine = blank_engine
    await upgrade_async(url)
    (head,) = code_revisions().heads
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        await conn.execute(
            text("UPDATE schema_compatibility SET oldest_head = :head"), {"head": head}
        )
    response = await health_of(replace(services, engine=engine), READY)
    assert response.status_code == 200, response.text
    assert response.json()["checks"]["migrations"] == "newer, compatible"


async def test_not_ready_once_the_database_records_a_key_this_process_does_not_hold(
    services: Services, blank_engine: tuple[str, AsyncEngine]
) -> None:
    """A reseal run with a new key while this process holds only the old one: it can no
    longer open what the others seal (issue 40)."""
    url, engine = blank_engine
    await upgrade_async(url)
    before = await health_of(replace(services, engine=engine), READY)
    assert before.status_code == 200, before.text
    assert before.json()["checks"]["secret_key"] == "not checked"  # no process recorded one

    async with engine.begin() as conn:
        await key_check.record(conn, services.settings.secret_key, services.clock.now())
    mine = await health_of(replace(services, engine=engine), READY)
    assert mine.json()["checks"]["secret_key"] == "ok"

    async with engine.begin() as conn:
        await key_check.record(conn, "a-key-this-process-lacks-" + "x" * 32, services.clock.now())
    response = await health_of(replace(services, engine=engine), READY)
    assert_not_ready(response, database="ok", migrations="ok", secret_key="wrong key")
    assert "HANGAR_SECRET_KEY" in response.json()["detail"]
    # Listed as a previous key (mid-rotation), it is held again.
    rotated = replace(
        services.settings, previous_secret_keys=("a-key-this-process-lacks-" + "x" * 32,)
    )
    held = await health_of(replace(services, engine=engine, settings=rotated), READY)
    assert held.status_code == 200, held.text


async def test_not_ready_naming_the_database_when_it_is_unreachable(
    services: Services, dead_engine: AsyncEngine
) -> None:
    response = await health_of(replace(services, engine=dead_engine), READY)
    assert_not_ready(response, database="unreachable", migrations="not checked")
    assert "database" in response.json()["detail"]


def redis_up() -> float | None:
    return REGISTRY.get_sample_value("hangar_redis_up")


async def test_ready_reporting_redis_when_it_is_configured_and_unreachable(
    services: Services,
) -> None:
    # Every instance shares the one Redis: were it a reason to be unready, a Redis outage
    # would pull the whole service, although each instance serves (limits in-process).
    dead = Redis(host="127.0.0.1", port=closed_port(), retry=Retry(NoBackoff(), 0))
    try:
        response = await health_of(replace(services, redis=dead), READY)
        assert redis_up() == 0
    finally:
        await dead.aclose()
    assert response.status_code == 200, response.text
    assert response.json() == {
        "status": "ready",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "secret_key": "ok",
            "redis": "unreachable",
        },
    }
    if REDIS_URL:
        assert (await health_of(services, READY)).status_code == 200
        assert redis_up() == 1


async def test_a_hanging_redis_does_not_hang_the_probe(
    services: Services, silent_port: int
) -> None:
    # No timeouts of the client's own: only the probe's bound can end the wait.
    hanging = Redis(host="127.0.0.1", port=silent_port, retry=Retry(NoBackoff(), 0))
    started = time.monotonic()
    try:
        # The test's own bound turns a probe that hangs into a failure, not a stuck run. The
        # probe's bound is the database's too: 1 s, so that a loaded CI machine's database
        # still answers within it (0.2 s did not, once).
        response = await asyncio.wait_for(readiness(replace(services, redis=hanging), 1.0), 5)
    finally:
        await hanging.aclose()
    assert time.monotonic() - started < 2.5  # the probe's 1 s, not the hang's forever
    assert response.status_code == 200
    body = orjson.loads(bytes(response.body))
    assert body["checks"] == {
        "database": "ok",
        "migrations": "ok",
        "secret_key": "ok",
        "redis": "timed out",
    }


async def test_health_answers_within_its_bound_when_both_stores_hang(
    services: Services, silent_port: int
) -> None:
    # A PostgreSQL that hangs (on either run: nothing of PostgreSQL is reached) and a Redis
    # that hangs. The checks run side by side: the probe costs one bound, not one each, and
    # does not wait for the abandoned connection attempts to give up.
    hung_db = make_engine(f"postgresql://root@127.0.0.1:{silent_port}/test")
    hanging = Redis(host="127.0.0.1", port=silent_port, retry=Retry(NoBackoff(), 0))
    bound = 1.0
    started = time.monotonic()
    try:
        response = await asyncio.wait_for(
            liveness(replace(services, engine=hung_db, redis=hanging), bound), 5
        )
        took = time.monotonic() - started
    finally:
        await hanging.aclose()
        await hung_db.dispose()
    # One after the other, the checks take two bounds however idle the machine; side by side,
    # one, and only a whole bound of scheduling delay could make that look like two.
    assert took < bound * 2, took
    assert response.status_code == 503
    body = orjson.loads(bytes(response.body))
    assert body["code"] == "SERVICE_UNAVAILABLE"
    assert body["detail"] == (
        "The database gave no answer within 1 s; the redis gave no answer within 1 s"
    )


# --- GET /api/health/live ----------------------------------------------------------------


async def test_alive_whatever_the_stores_do(services: Services, dead_engine: AsyncEngine) -> None:
    """A liveness probe must not restart every process while a store is down (issue 40)."""
    dead_redis = Redis(host="127.0.0.1", port=closed_port(), retry=Retry(NoBackoff(), 0))
    try:
        response = await health_of(replace(services, engine=dead_engine, redis=dead_redis), LIVE)
    finally:
        await dead_redis.aclose()
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "alive"}
