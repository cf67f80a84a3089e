"""Fixtures: one database per test run (SQLite, or PostgreSQL when HANGAR_TEST_DATABASE_URL
is set), one app per test with its own clock, and organizations that never share rows."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher
from redis.asyncio import Redis
from scripts.scratch import scratch_database
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.app import create_app
from hangar.auth import passwords
from hangar.db import key_check
from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade_async
from hangar.foundation.config import Settings
from hangar.kit.container import Services
from hangar.kit.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from hangar.webhooks.delivery.sender import Sender
from tests.fixtures.clients import role_client, signed_in_client
from tests.fixtures.command_server import stop_command_server
from tests.fixtures.environment import PG_URL, REDIS_URL, SECRET
from tests.fixtures.factories import Org, make_org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.live_server import api_server  # noqa: F401 (tests/client, tests/external)
from tests.fixtures.placement import place

# pytester: tests/test_placement.py runs small suites of its own through the placement.
pytest_plugins = ("pytester",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    place(items)  # which tests the PostgreSQL + Redis pass repeats: tests/fixtures/placement.py


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    # pytest-randomly names its seed in the header, which -q leaves out: a failure that only
    # one order shows must be repeatable from the run's output.
    seed = config.getoption("randomly_seed", None)
    if isinstance(seed, int) and config.pluginmanager.has_plugin("randomly"):
        terminalreporter.write_line(
            f"random order: repeat it with -p randomly --randomly-seed={seed}"
        )


@pytest.fixture
async def closing() -> AsyncIterator[Callable[[Sender], Sender]]:
    """`closing(Sender(...))`: a sender of the test's own, closed when the test ends (its
    kept-alive aiohttp sessions would otherwise be collected, and warned about, during some
    later test)."""
    made: list[Sender] = []

    def keep(sender: Sender) -> Sender:
        made.append(sender)
        return sender

    yield keep
    for sender in made:
        await sender.close()


@pytest.fixture(scope="session", autouse=True)
def production_hasher() -> Iterator[PasswordHasher]:
    """argon2 at its cheapest for the suite's own process, as Django's tests hash with MD5:
    a real hash costs 64 MiB and some 100 ms of two cores, some 1,100 of them a run (a fifth
    of its time), and under a parallel run's load a second sign-in could wait out the hashing
    slot's bound. A hash says its own parameters, so processes the tests start (which hash at
    the production cost) verify these and these verify theirs. The production parameters are
    this fixture's value, tested by tests/sessions/test_sign_in_throttles.py."""
    production = passwords._hasher
    passwords._hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    yield production
    passwords._hasher = production


@pytest.fixture(scope="session", autouse=True)
def command_server_stopped() -> Iterator[None]:
    """The `hangar` command server of this worker (tests/fixtures/command_server.py), which
    its first command starts, stops with the session."""
    yield
    stop_command_server()


async def started(url: str) -> str:
    """`url` as hangar's first process leaves it: migrated, the tests' key recorded."""
    await upgrade_async(url)
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await key_check.record(conn, SECRET, FakeClock().now())
    finally:
        await engine.dispose()
    return url


@pytest.fixture(scope="session")
async def database_url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A fresh database for this run, migrated to head by the real migrations, as hangar's
    first process leaves it."""
    if not PG_URL:
        yield await started(f"sqlite:///{tmp_path_factory.mktemp('db') / 'hangar.db'}")
        return
    async with scratch_database(PG_URL, "hangar_test") as url:
        yield await started(url)


@pytest.fixture
async def blank_database_url(tmp_path: Path) -> AsyncIterator[str]:
    """An empty database of this run's kind, not migrated: for tests of the migrations."""
    if not PG_URL:
        yield f"sqlite:///{tmp_path / 'blank.db'}"
        return
    async with scratch_database(PG_URL, "hangar_blank") as url:
        yield url


@pytest.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
def redis_prefix() -> str:
    # One per test, as the in-memory limiter is: every test's requests come from the same
    # address, and its failed sign-ins must not spend the next test's budget.
    return f"hangar-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def redis() -> AsyncIterator[Redis | None]:
    if not REDIS_URL:
        yield None
        return
    client = Redis.from_url(REDIS_URL)
    yield client
    await client.aclose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def limiter(redis: Redis | None, redis_prefix: str) -> RateLimiter:
    return RedisRateLimiter(redis, redis_prefix) if redis else MemoryRateLimiter()


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(
        database_url=database_url,
        secret_key=SECRET,
        public_url="https://hangar.example",
        service_domain="hangar.example",
        redis_url=REDIS_URL,
    )


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver()


@pytest.fixture
def services(
    settings: Settings,
    engine: AsyncEngine,
    clock: FakeClock,
    limiter: RateLimiter,
    redis: Redis | None,
    resolver: FakeResolver,
) -> Services:
    return Services(
        settings=settings,
        engine=engine,
        clock=clock,
        limiter=limiter,
        redis=redis,
        resolver=resolver,
    )


@pytest.fixture
async def client(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    # No lifespan: the engine is the run's, not this app's, to close.
    app = create_app(services)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        yield c


@pytest.fixture
async def org(engine: AsyncEngine) -> Org:
    return await make_org(engine, "Acme Flight School")


@pytest.fixture
async def other(engine: AsyncEngine) -> Org:
    """The second organization every read test carries: its rows must never show up."""
    return await make_org(engine, "Other Aero Club")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


# Signed-in clients: sessions of a given role in a given organization.


admin = role_client("admin")
member = role_client("member")


@pytest.fixture
async def outsider(services: Services, other: Org) -> AsyncIterator[httpx.AsyncClient]:
    """An admin, but of the other organization."""
    async with signed_in_client(services, other, "admin") as c:
        yield c
