"""GET /api/health"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.app import create_app
from hangar.db.engine import make_engine
from hangar.kit.services import Services

URL = "/api/health"


def closed_port() -> int:
    """A local port nothing listens on: bound once to pick it, then released."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def health_of(services: Services) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        return await c.get(URL)


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
