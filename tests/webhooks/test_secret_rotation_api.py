"""POST /api/orgs/{org_id}/webhooks/{id}/rotate-secret (issue 28): a new secret shown once, with
its `whsec_` form and until when the replaced one also signs; the grace's default, bounds and
type; rotating again during a grace; and who may rotate whose subscription."""

from __future__ import annotations

import base64
import re
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.kit.container import Services
from hangar.webhooks.models import Subscription
from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.secret_rotation import hooks_url, rotate_url, rotated, subscribed, zulu

create = subscribed
url = hooks_url


async def sealed(engine: AsyncEngine, sub_id: object) -> Any:
    async with engine.connect() as conn:
        return (
            await conn.execute(
                select(
                    Subscription.secret_encrypted,
                    Subscription.previous_secret_encrypted,
                    Subscription.previous_secret_expires_at,
                ).where(Subscription.id == uuid.UUID(str(sub_id)))
            )
        ).one()


async def test_rotation_shows_the_new_secret_once_and_keeps_the_old_one_sealed(
    admin: httpx.AsyncClient, org: Org, services: Services, clock: FakeClock
) -> None:
    created = await create(admin, org)
    answer = await rotated(admin, org, created["id"], grace_hours=72)

    fetched = (await admin.get(url(org, answer["id"]))).json()
    assert set(answer) == set(fetched) | {"secret", "secret_whsec"}
    secret = answer["secret"]
    assert re.fullmatch(r"[0-9a-f]{64}", secret)
    assert secret != created["secret"]
    assert answer["secret_prefix"] == secret[:8]
    assert base64.b64decode(answer["secret_whsec"].removeprefix("whsec_")) == secret.encode()
    expires = clock.now() + timedelta(hours=72)
    assert answer["previous_secret_expires_at"] == zulu(expires)
    # The rest is the subscription as it was, its id included: nothing new is addressable.
    unchanged = ("id", "name", "url", "events", "enabled", "consecutive_failures", "created_at")
    assert {k: answer[k] for k in unchanged} == {k: created[k] for k in unchanged}
    assert created["previous_secret_expires_at"] is None

    assert fetched["previous_secret_expires_at"] == answer["previous_secret_expires_at"]
    listed = (await admin.get(url(org))).json()
    shown_later = str(fetched) + str(listed)
    for shown_once in (secret, answer["secret_whsec"], created["secret"]):
        assert shown_once not in shown_later
    # At rest both are sealed, and open to the new secret and the one it replaced.
    row = await sealed(services.engine, answer["id"])
    assert services.secret_box.open(row.secret_encrypted) == secret
    assert services.secret_box.open(row.previous_secret_encrypted) == created["secret"]
    assert row.previous_secret_expires_at == expires


async def test_the_grace_is_24_hours_unless_given(
    admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    created = await create(admin, org)
    day = zulu(clock.now() + timedelta(hours=24))

    no_body = await admin.post(rotate_url(org, created["id"]))
    assert no_body.status_code == 200, no_body.text
    assert no_body.json()["previous_secret_expires_at"] == day
    assert (await rotated(admin, org, created["id"]))["previous_secret_expires_at"] == day


async def test_a_grace_of_0_stops_the_old_secret_at_once(
    admin: httpx.AsyncClient, org: Org, services: Services
) -> None:
    created = await create(admin, org)
    answer = await rotated(admin, org, created["id"], grace_hours=0)

    assert answer["previous_secret_expires_at"] is None
    row = await sealed(services.engine, created["id"])
    assert (row.previous_secret_encrypted, row.previous_secret_expires_at) == (None, None)
    assert services.secret_box.open(row.secret_encrypted) == answer["secret"]


async def test_rotating_again_during_a_grace_drops_the_oldest_secret(
    admin: httpx.AsyncClient, org: Org, services: Services, clock: FakeClock
) -> None:
    created = await create(admin, org)
    first = await rotated(admin, org, created["id"], grace_hours=72)
    clock.advance(hours=1)
    second = await rotated(admin, org, created["id"], grace_hours=2)

    # The previous secret is now the one the second rotation replaced, with its own grace;
    # the one created with the subscription is gone.
    row = await sealed(services.engine, created["id"])
    assert services.secret_box.open(row.secret_encrypted) == second["secret"]
    assert services.secret_box.open(row.previous_secret_encrypted) == first["secret"]
    assert row.previous_secret_expires_at == clock.now() + timedelta(hours=2)
    assert len({created["secret"], first["secret"], second["secret"]}) == 3


async def test_the_view_says_no_previous_secret_once_the_grace_is_over(
    admin: httpx.AsyncClient, org: Org, services: Services, clock: FakeClock
) -> None:
    created = await create(admin, org)
    await rotated(admin, org, created["id"], grace_hours=1)
    clock.advance(minutes=59, seconds=59)
    assert (await admin.get(url(org, created["id"]))).json()["previous_secret_expires_at"]

    clock.advance(seconds=1)
    assert (await admin.get(url(org, created["id"]))).json()["previous_secret_expires_at"] is None
    [listed] = (await admin.get(url(org))).json()
    assert listed["previous_secret_expires_at"] is None
    renamed = await admin.patch(url(org, created["id"]), json={"name": "renamed"})
    assert renamed.json()["previous_secret_expires_at"] is None


@pytest.mark.parametrize(
    "body",
    [
        {"grace_hours": 73},
        {"grace_hours": -1},
        {"grace_hours": 1000000},
        {"grace_hours": "24"},
        {"grace_hours": 1.5},
        {"grace_hours": True},
        {"grace_hours": None},
        {"grace_hours": 24, "secret": "mine"},
        {"grace": 24},
        [24],
    ],
)
async def test_a_grace_out_of_range_or_of_the_wrong_type_is_refused(
    admin: httpx.AsyncClient, org: Org, services: Services, body: object
) -> None:
    created = await create(admin, org)
    before = await sealed(services.engine, created["id"])

    response = await admin.post(rotate_url(org, created["id"]), json=body)

    assert response.status_code == 422, response.text
    refused = response.json()
    assert refused["code"] == "VALIDATION_ERROR"
    assert refused["detail"]
    assert refused["errors"]
    assert all(set(error) == {"loc", "msg"} for error in refused["errors"])
    assert await sealed(services.engine, created["id"]) == before  # nothing rotated


async def test_a_body_that_is_not_json_is_refused(admin: httpx.AsyncClient, org: Org) -> None:
    created = await create(admin, org)
    response = await admin.post(
        rotate_url(org, created["id"]),
        content=b"grace_hours=1",
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"


async def test_only_this_organizations_live_subscriptions_are_found(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    services: Services,
) -> None:
    mine = await create(admin, org)
    theirs = await create(outsider, other)
    before = await sealed(services.engine, mine["id"])

    for client, target in (
        (outsider, rotate_url(org, mine["id"])),  # their admin, my organization
        (admin, rotate_url(org, theirs["id"])),  # my organization, their subscription
        (outsider, rotate_url(other, mine["id"])),  # their organization, my subscription
        (admin, rotate_url(org, uuid.uuid4())),
        (admin, rotate_url(org, "not-an-id")),
    ):
        response = await client.post(target, json={"grace_hours": 1})
        assert response.status_code == 404, target
        assert response.json()["code"] == "NOT_FOUND"
    assert await sealed(services.engine, mine["id"]) == before

    assert (await admin.delete(url(org, mine["id"]))).status_code == 204
    gone = await admin.post(rotate_url(org, mine["id"]), json={"grace_hours": 1})
    assert gone.status_code == 404


@pytest.mark.parametrize("role", ["mechanic", "member", "instructor"])
async def test_rotation_needs_org_settings(
    admin: httpx.AsyncClient, org: Org, services: Services, role: str
) -> None:
    created = await create(admin, org)
    before = await sealed(services.engine, created["id"])
    async with signed_in_client(services, org, role) as someone:
        response = await someone.post(rotate_url(org, created["id"]), json={"grace_hours": 1})
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"
    assert "org.settings" in response.json()["detail"]
    assert await sealed(services.engine, created["id"]) == before


async def test_rotation_needs_the_csrf_token_and_a_session(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, services: Services
) -> None:
    created = await create(admin, org)
    before = await sealed(services.engine, created["id"])
    target = rotate_url(org, created["id"])

    forged = await admin.post(target, json={"grace_hours": 1}, headers={"X-CSRF-Token": "no"})
    assert forged.status_code == 403
    assert forged.json()["code"] == "CSRF_FAILED"
    token = admin.headers.pop("X-CSRF-Token")
    bare = await admin.post(target, json={"grace_hours": 1})
    admin.headers["X-CSRF-Token"] = token
    assert bare.status_code == 403
    assert bare.json()["code"] == "CSRF_FAILED"
    # An API key is never a session: not signed in.
    keyed = await client.post(target, headers={"Authorization": f"Bearer {org.key}"})
    assert keyed.status_code == 401
    assert await sealed(services.engine, created["id"]) == before


async def test_a_disabled_subscription_can_be_rotated_and_stays_disabled(
    admin: httpx.AsyncClient, org: Org, services: Services
) -> None:
    created = await create(admin, org)
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == uuid.UUID(created["id"]))
            .values(enabled=False, consecutive_failures=5, disabled_at=services.clock.now())
        )
    answer = await rotated(admin, org, created["id"], grace_hours=1)
    assert (answer["enabled"], answer["consecutive_failures"]) == (False, 5)
    assert answer["disabled_at"] is not None
