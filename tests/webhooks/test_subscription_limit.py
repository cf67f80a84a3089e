"""HANGAR_MAX_SUBSCRIPTIONS_PER_ORG: at most that many live (not deleted) subscriptions per
organization; one more is 422 SUBSCRIPTION_LIMIT with a sentence that names the limit, from
the management API and on the Org Settings form alike, and nothing is written. The bound
holds when creations race (PostgreSQL: serialized per organization; SQLite: one writer).
The setting is a whole number from 1 to 1000 (default 20); anything else stops every
process at its start with one line."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, text, update

from hangar.audit.service import OPERATOR
from hangar.db.engine import make_engine
from hangar.foundation.config import ConfigError, load_settings
from hangar.kit.container import Services
from hangar.kit.errors import ApiError
from hangar.webhooks import service
from hangar.webhooks.models import Subscription
from hangar.webhooks.service import NewSubscription
from tests.fixtures.clients import signed_in_client
from tests.fixtures.environment import PG_URL
from tests.fixtures.factories import Org
from tests.fixtures.pages import page_csrf
from tests.fixtures.subprocesses import refused_at_start

REFUSAL = "HANGAR_MAX_SUBSCRIPTIONS_PER_ORG must be a whole number from 1 to 1000, not {!r}"
LIMIT = 3
SAYS = "An organization has at most 3 webhook subscriptions; delete one to add another"
BOUND = 10.0  # seconds a wait here may take before the test fails


def limit_of(tmp_path: Path, value: str | None) -> int:
    env = {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path}/x.db"}
    if value is not None:
        env["HANGAR_MAX_SUBSCRIPTIONS_PER_ORG"] = value
    return load_settings(env).max_subscriptions_per_org


@pytest.mark.parametrize(
    ("value", "limit"),
    [(None, 20), ("", 20), ("1", 1), (" 50 ", 50), ("1000", 1000)],
)
def test_whole_numbers_from_1_to_1000_are_read(
    tmp_path: Path, value: str | None, limit: int
) -> None:
    assert limit_of(tmp_path, value) == limit


@pytest.mark.parametrize(
    "value", ["0", "1001", "-1", "2.5", "20x", "twenty", "\u0662\u0660", "1e3"]
)
def test_anything_else_is_refused_naming_the_setting(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as refused:
        limit_of(tmp_path, value)
    assert str(refused.value) == REFUSAL.format(value.strip())


@pytest.mark.parametrize("command", [["serve"], ["worker"], ["jobs", "run", "webhook-alerts"]])
def test_a_process_does_not_start_with_a_bad_value_and_says_why_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    stderr = refused_at_start(tmp_path, command, HANGAR_MAX_SUBSCRIPTIONS_PER_ORG="0")
    assert stderr == f"hangar: {REFUSAL.format('0')}\n"


@pytest.fixture
def limited(services: Services) -> Services:
    """`services` with HANGAR_MAX_SUBSCRIPTIONS_PER_ORG=3."""
    settings = dataclasses.replace(services.settings, max_subscriptions_per_org=LIMIT)
    return dataclasses.replace(services, settings=settings)


@pytest.fixture
async def boss(limited: Services, org: Org) -> AsyncIterator[httpx.AsyncClient]:
    """An admin of `org`, on an app with the limit of 3."""
    async with signed_in_client(limited, org, "admin") as client:
        yield client


@pytest.fixture
async def their_boss(limited: Services, other: Org) -> AsyncIterator[httpx.AsyncClient]:
    async with signed_in_client(limited, other, "admin") as client:
        yield client


def new(name: str) -> dict[str, Any]:
    return {"name": name, "url": "https://hooks.example.com/in", "events": ["*"]}


async def live(services: Services, org: Org) -> list[str]:
    async with services.engine.connect() as conn:
        names = await conn.scalars(
            select(Subscription.name)
            .where(Subscription.org_id == org.id, Subscription.deleted_at.is_(None))
            .order_by(Subscription.created_at, Subscription.id)
        )
        return list(names)


async def test_one_more_than_the_limit_is_422_naming_it_and_each_organization_has_its_own(
    limited: Services, boss: httpx.AsyncClient, their_boss: httpx.AsyncClient, org: Org, other: Org
) -> None:
    url = f"/api/orgs/{org.id}/webhooks"
    for n in range(LIMIT):
        made = await boss.post(url, json=new(f"hook {n}"))
        assert made.status_code == 201, made.text
    # A disabled subscription is live: it counts.
    async with limited.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.org_id == org.id, Subscription.name == "hook 0")
            .values(enabled=False)
        )

    refused = await boss.post(url, json=new("one too many"))

    assert refused.status_code == 422
    assert refused.json() == {"detail": SAYS, "code": "SUBSCRIPTION_LIMIT"}
    assert await live(limited, org) == ["hook 0", "hook 1", "hook 2"]
    # The other organization's three are its own.
    for n in range(LIMIT):
        theirs = await their_boss.post(f"/api/orgs/{other.id}/webhooks", json=new(f"their {n}"))
        assert theirs.status_code == 201, theirs.text
    assert (await their_boss.post(f"/api/orgs/{other.id}/webhooks", json=new("x"))).json()[
        "code"
    ] == "SUBSCRIPTION_LIMIT"
    # A deleted one does not count: deleting one makes room for one.
    first = (await boss.get(url)).json()[0]["id"]
    assert (await boss.delete(f"{url}/{first}")).status_code == 204
    assert (await boss.post(url, json=new("in its place"))).status_code == 201
    assert (await boss.post(url, json=new("and no more"))).status_code == 422
    assert await live(limited, org) == ["hook 1", "hook 2", "in its place"]


async def test_the_form_says_so_above_its_fields_and_keeps_what_was_typed(
    limited: Services, boss: httpx.AsyncClient, org: Org
) -> None:
    for n in range(LIMIT):
        assert (await boss.post(f"/api/orgs/{org.id}/webhooks", json=new(f"h{n}"))).is_success
    listing = await boss.get(f"/settings/{org.id}/webhooks")
    assert "3 of at most 3 webhooks for this organization: delete one to add another" in (
        listing.text
    )
    path = f"/settings/{org.id}/webhooks/new"
    token = await page_csrf(boss, path)

    shown = await boss.post(
        path,
        data={
            "csrf_token": token,
            "name": "fourth",
            "url": "https://hooks.example.com/fourth",
            "events": ["squawk.created"],
        },
    )

    assert shown.status_code == 422
    assert f'<p class="notice notice-bad" role="alert">{SAYS}</p>' in shown.text
    assert 'value="fourth"' in shown.text
    assert 'value="https://hooks.example.com/fourth"' in shown.text
    assert await live(limited, org) == ["h0", "h1", "h2"]


async def test_creations_at_once_never_pass_the_limit(
    limited: Services, boss: httpx.AsyncClient, org: Org
) -> None:
    """Ten creations sent together, two places left: two are made, eight refused (SQLite
    writes one at a time; PostgreSQL serializes one organization's creations)."""
    url = f"/api/orgs/{org.id}/webhooks"
    assert (await boss.post(url, json=new("first"))).status_code == 201
    answers = await asyncio.gather(*(boss.post(url, json=new(f"at once {n}")) for n in range(10)))
    assert sorted(a.status_code for a in answers) == [201] * 2 + [422] * 8
    assert len(await live(limited, org)) == LIMIT


async def _blocked_on_advisory_lock(services: Services) -> bool:
    async with services.engine.connect() as conn:
        waiting = await conn.scalar(
            text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        )
    return bool(waiting)


@pytest.mark.skipif(not PG_URL, reason="the race of two transactions at once, on PostgreSQL")
async def test_two_creations_at_the_limit_on_postgresql_one_waits_and_is_refused(
    limited: Services, org: Org
) -> None:
    """With 2 of 3 made, one creation writes the third and has not committed yet; another
    starts meanwhile. Counting alone, it would see 2 and make a fourth. It waits for the
    first to commit, then counts 3 and is refused."""
    for n in range(LIMIT - 1):
        async with limited.engine.begin() as conn:
            await service.create(
                conn, limited, org.id, NewSubscription(**new(f"h{n}")), now(limited), by=OPERATOR
            )
    second_engine = make_engine(limited.settings.database_url)
    try:
        second = dataclasses.replace(limited, engine=second_engine)
        async with limited.engine.connect() as first:
            await first.begin()
            await service.create(
                first, limited, org.id, NewSubscription(**new("third")), now(limited), by=OPERATOR
            )

            async def another() -> object:
                async with second_engine.begin() as conn:
                    body = NewSubscription(**new("fourth"))
                    return await service.create(
                        conn, second, org.id, body, now(second), by=OPERATOR
                    )

            racing = asyncio.create_task(another())
            started = time.monotonic()
            while not await _blocked_on_advisory_lock(limited):
                assert not racing.done(), "the second creation did not wait for the first"
                assert time.monotonic() - started < BOUND
                await asyncio.sleep(0.01)
            await first.commit()
        with pytest.raises(ApiError) as refused:
            await asyncio.wait_for(racing, BOUND)
    finally:
        await second_engine.dispose()
    assert (refused.value.status, refused.value.code) == (422, "SUBSCRIPTION_LIMIT")
    async with limited.engine.connect() as conn:
        count = await conn.scalar(
            select(func.count())
            .select_from(Subscription)
            .where(Subscription.org_id == org.id, Subscription.deleted_at.is_(None))
        )
    assert count == LIMIT


def now(services: Services) -> datetime:
    return services.clock.now()
