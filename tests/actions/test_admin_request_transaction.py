"""The admin actions (API keys, webhook subscriptions, the Test delivery) run in the request's
one transaction (`hangar.http.routing.Tx`), JSON and screens alike: a request that fails after
the action did its work keeps none of it, neither the change nor the delivery it queued."""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.routes import keys as key_routes
from hangar.routes import webhooks as webhook_routes
from hangar.web import keys as key_screens
from hangar.web import webhooks as webhook_screens
from hangar.webhooks.models import Delivery, Subscription
from tests.fixtures.actions import url
from tests.fixtures.clients import signed_in_as
from tests.fixtures.factories import Org
from tests.fixtures.pages import page_csrf
from tests.fixtures.webhooks import subscribe

HOOK = "https://hooks.example.com/hangar"


def explode(*_: Any, **__: Any) -> NoReturn:
    raise RuntimeError("the answer could not be built")


def assert_internal_error(response: httpx.Response) -> None:
    assert response.status_code == 500
    assert response.json()["code"] == "INTERNAL_ERROR"


async def keys_named(engine: AsyncEngine, org: Org, name: str) -> int:
    async with engine.connect() as conn:
        query = select(func.count()).where(ApiKey.org_id == org.id, ApiKey.name == name)
        return int((await conn.execute(query)).scalar_one())


async def state_of(engine: AsyncEngine, sub_id: uuid.UUID) -> tuple[int, int]:
    """The subscription's failure counter and how many deliveries it has."""
    async with engine.connect() as conn:
        failures = await conn.scalar(
            select(Subscription.consecutive_failures).where(Subscription.id == sub_id)
        )
        queued = await conn.scalar(select(func.count()).where(Delivery.subscription_id == sub_id))
    return int(failures or 0), int(queued or 0)


async def test_a_key_request_that_fails_after_the_action_keeps_no_key(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    body = {"name": "half made", "scopes": ["read:aircraft"]}
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(key_routes, "json_response", explode)
        assert_internal_error(await admin.post(url(org, "api-keys"), json=body))
    assert await keys_named(services.engine, org, "half made") == 0

    async with signed_in_as(services, org.admin_id) as browser:
        csrf = await page_csrf(browser, f"/settings/{org.id}/keys/new")
        form = {"csrf_token": csrf, "name": "half shown", "scopes": "read:aircraft"}
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(key_screens, "_to_shown", explode)
            failed = await browser.post(f"/settings/{org.id}/keys/new", data=form)
        assert_internal_error(failed)
        assert await keys_named(services.engine, org, "half shown") == 0
        # The same form, answered: the key is there.
        shown = await browser.post(f"/settings/{org.id}/keys/new", data=form)
    assert shown.status_code == 303  # to the key's one-time view
    assert await keys_named(services.engine, org, "half shown") == 1
    assert await keys_named(services.engine, other, "half shown") == 0


async def test_a_test_delivery_and_its_counter_reset_roll_back_with_the_request(
    admin: httpx.AsyncClient, services: Services, org: Org, other: Org
) -> None:
    sub_id = await subscribe(services, org, HOOK, enabled=False, consecutive_failures=5)
    theirs = await subscribe(services, other, HOOK)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(webhook_routes, "json_response", explode)
        assert_internal_error(await admin.post(url(org, f"webhooks/{sub_id}/test")))
    assert await state_of(services.engine, sub_id) == (5, 0)

    async with signed_in_as(services, org.admin_id) as browser:
        csrf = await page_csrf(browser, f"/settings/{org.id}/webhooks")
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(webhook_screens, "redirect", explode)
            failed = await browser.post(
                f"/settings/{org.id}/webhooks/{sub_id}/test", data={"csrf_token": csrf}
            )
        assert_internal_error(failed)
        assert await state_of(services.engine, sub_id) == (5, 0)

    fired = await admin.post(url(org, f"webhooks/{sub_id}/test"))
    assert fired.status_code == 202
    assert await state_of(services.engine, sub_id) == (0, 1)
    assert await state_of(services.engine, theirs) == (0, 0)
