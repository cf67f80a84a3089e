"""/api/orgs/{org_id}/webhooks: create, list, get, edit, delete, Enable, Test, deliveries."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.kit.container import Services
from hangar.webhooks.models import Delivery, Event, Subscription
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock, FakeResolver

VIEW_FIELDS = {
    "id",
    "name",
    "url",
    "events",
    "enabled",
    "consecutive_failures",
    "secret_prefix",
    "created_at",
    "updated_at",
    "disabled_at",
    # Added by secret rotation (issue 28): until when the replaced secret also signs, or null.
    "previous_secret_expires_at",
}
GOOD = {"name": "ops", "url": "https://hooks.example.com/hangar", "events": ["*"]}


def url(org: Org, *rest: str) -> str:
    return "/".join([f"/api/orgs/{org.id}/webhooks", *rest])


async def create(admin: httpx.AsyncClient, org: Org, **body: object) -> dict[str, object]:
    response = await admin.post(url(org), json={**GOOD, **body})
    assert response.status_code == 201, response.text
    created: dict[str, object] = response.json()
    return created


async def test_create_shows_the_secret_once(
    admin: httpx.AsyncClient, org: Org, services: Services, engine: AsyncEngine
) -> None:
    created = await create(admin, org, events=["squawk.created", "mel.expired"])

    assert set(created) == VIEW_FIELDS | {"secret", "secret_whsec"}
    secret = str(created["secret"])
    assert re.fullmatch(r"[0-9a-f]{64}", secret)
    assert created["secret_prefix"] == secret[:8]
    assert created["enabled"] is True
    assert created["consecutive_failures"] == 0
    assert created["events"] == ["squawk.created", "mel.expired"]

    fetched = (await admin.get(url(org, str(created["id"])))).json()
    assert set(fetched) == VIEW_FIELDS
    listed = (await admin.get(url(org))).json()
    assert [s["id"] for s in listed] == [created["id"]]
    assert secret not in str(listed) + str(fetched)
    # At rest it is encrypted, and opens with the service's key.
    async with engine.connect() as conn:
        sealed = await conn.scalar(
            select(Subscription.secret_encrypted).where(
                Subscription.id == uuid.UUID(str(created["id"]))
            )
        )
    assert sealed is not None
    assert secret not in sealed
    assert services.secret_box.open(sealed) == secret


@pytest.mark.parametrize(
    ("target", "code"),
    [
        ("not a url", "WEBHOOK_URL_PARSE_FAILED"),
        ("http://hooks.example.com/x", "WEBHOOK_URL_HTTPS_REQUIRED"),
        ("http://127.0.0.1/x", "WEBHOOK_URL_HTTPS_REQUIRED"),
        ("https:///nohost", "WEBHOOK_URL_HOST_REQUIRED"),
        ("https://127.0.0.1/x", "WEBHOOK_URL_PRIVATE_IP"),
        ("https://2130706433/x", "WEBHOOK_URL_PRIVATE_IP"),
        ("https://[::ffff:10.0.0.1]/x", "WEBHOOK_URL_PRIVATE_IP"),
        ("https://localhost/x", "WEBHOOK_URL_PRIVATE_IP"),
        ("https://internal.example.net/x", "WEBHOOK_URL_PRIVATE_IP"),
        ("https://nxdomain.example.net/x", "WEBHOOK_URL_DNS_FAILED"),
    ],
)
async def test_urls_are_checked_on_save(
    admin: httpx.AsyncClient, org: Org, resolver: FakeResolver, target: str, code: str
) -> None:
    resolver.answers["internal.example.net"] = ["93.184.216.34", "10.1.2.3"]
    response = await admin.post(url(org), json={**GOOD, "url": target})
    assert response.status_code == 422
    assert response.json()["code"] == code
    assert response.json()["detail"]
    assert (await admin.get(url(org))).json() == []


@pytest.mark.parametrize("events", [["squawk.*"], ["test.ping"], ["*", "nope"], ["Squawk.Created"]])
async def test_unknown_events_are_refused(
    admin: httpx.AsyncClient, org: Org, events: list[str]
) -> None:
    response = await admin.post(url(org), json={**GOOD, "events": events})
    assert response.status_code == 422
    assert response.json()["code"] == "UNKNOWN_EVENT"


async def test_all_events_with_named_events_is_refused_as_saying_two_things(
    admin: httpx.AsyncClient, org: Org
) -> None:
    mixed = await admin.post(url(org), json={**GOOD, "events": ["*", "squawk.created"]})
    assert mixed.status_code == 422
    assert mixed.json()["code"] == "VALIDATION_ERROR"
    assert "* already means every event" in mixed.json()["detail"]
    assert (await admin.get(url(org))).json() == []
    # A repeated * is still just *.
    assert (await admin.post(url(org), json={**GOOD, "events": ["*", "*"]})).status_code == 201


async def test_edit_changes_fields_but_never_the_secret(
    admin: httpx.AsyncClient, org: Org, engine: AsyncEngine, clock: FakeClock
) -> None:
    created = await create(admin, org)
    sub = url(org, str(created["id"]))
    async with engine.connect() as conn:
        sealed_before = await conn.scalar(select(Subscription.secret_encrypted))
    clock.advance(minutes=5)

    edited = await admin.patch(
        sub,
        json={
            "name": "renamed",
            "url": "https://receiver.example.org/h",
            "events": ["mel.created"],
        },
    )

    assert edited.status_code == 200
    body = edited.json()
    assert (body["name"], body["url"], body["events"]) == (
        "renamed",
        "https://receiver.example.org/h",
        ["mel.created"],
    )
    assert body["secret_prefix"] == created["secret_prefix"]
    assert body["updated_at"] != created["updated_at"]
    bad = await admin.patch(sub, json={"url": "https://10.0.0.1/"})
    assert bad.json()["code"] == "WEBHOOK_URL_PRIVATE_IP"
    assert (await admin.get(sub)).json()["url"] == "https://receiver.example.org/h"
    async with engine.connect() as conn:
        assert await conn.scalar(select(Subscription.secret_encrypted)) == sealed_before


async def test_delete_then_404(admin: httpx.AsyncClient, org: Org) -> None:
    created = await create(admin, org)
    sub = url(org, str(created["id"]))
    assert (await admin.delete(sub)).status_code == 204
    assert (await admin.get(sub)).status_code == 404
    assert (await admin.delete(sub)).status_code == 404
    assert (await admin.get(url(org))).json() == []


async def created_then_failed(
    admin: httpx.AsyncClient, org: Org, engine: AsyncEngine, **values: object
) -> tuple[dict[str, object], uuid.UUID]:
    """A subscription made through the API, then written disabled after five failures in a
    row (and `values`), as the dispatcher leaves one."""
    created = await create(admin, org)
    sub_id = uuid.UUID(str(created["id"]))
    async with engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id)
            .values(enabled=False, consecutive_failures=5, **values)
        )
    return created, sub_id


async def test_enable_resets_the_counter_and_keeps_the_secret(
    admin: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    created, sub_id = await created_then_failed(
        admin, org, engine, disabled_at=Subscription.created_at
    )
    disabled = (await admin.get(url(org, str(sub_id)))).json()
    assert disabled["enabled"] is False
    assert disabled["disabled_at"] is not None

    enabled = await admin.post(url(org, str(sub_id), "enable"))

    assert enabled.status_code == 200
    body = enabled.json()
    assert (body["enabled"], body["consecutive_failures"], body["disabled_at"]) == (True, 0, None)
    assert body["secret_prefix"] == created["secret_prefix"]


async def test_test_fires_ten_per_hour_to_the_chosen_subscription(
    admin: httpx.AsyncClient, org: Org, engine: AsyncEngine, clock: FakeClock
) -> None:
    created = await create(admin, org, events=["mel.created"])
    test = url(org, str(created["id"]), "test")

    ids = []
    for _ in range(10):
        response = await admin.post(test)
        assert response.status_code == 202
        ids.append(response.json()["delivery_id"])
    refused = await admin.post(test)
    assert refused.status_code == 429
    assert refused.json()["code"] == "RATE_LIMITED"

    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(Delivery.id, Delivery.event_name, Delivery.status, Event.data)
                .join(Event, Event.id == Delivery.event_id)
                .where(Delivery.subscription_id == uuid.UUID(str(created["id"])))
            )
        ).all()
    assert sorted(str(r.id) for r in rows) == sorted(ids)
    assert {(r.event_name, r.status) for r in rows} == {("test.ping", "pending")}
    assert all(r.data.startswith('{"message":') for r in rows)

    clock.advance(minutes=59, seconds=29)  # 10:59:59, still the same calendar hour
    assert (await admin.post(test)).status_code == 429
    clock.advance(seconds=1)  # 11:00:00, a new hour
    assert (await admin.post(test)).status_code == 202


async def test_test_on_a_disabled_subscription_resets_only_the_counter(
    admin: httpx.AsyncClient, org: Org, engine: AsyncEngine
) -> None:
    _, sub_id = await created_then_failed(admin, org, engine)
    assert (await admin.post(url(org, str(sub_id), "test"))).status_code == 202
    after = (await admin.get(url(org, str(sub_id)))).json()
    assert (after["enabled"], after["consecutive_failures"]) == (False, 0)


async def test_delivery_log_lists_newest_first(admin: httpx.AsyncClient, org: Org) -> None:
    created = await create(admin, org)
    first = (await admin.post(url(org, str(created["id"]), "test"))).json()["delivery_id"]
    second = (await admin.post(url(org, str(created["id"]), "test"))).json()["delivery_id"]

    log = await admin.get(url(org, str(created["id"]), "deliveries"), params={"limit": 1})

    assert log.status_code == 200
    assert [d["id"] for d in log.json()] == [second]
    entry = log.json()[0]
    assert set(entry) == {
        "id",
        "event",
        "event_id",
        "status",
        "attempts",
        "created_at",
        "completed_at",
        "redeliveries",
    }
    assert (entry["event"], entry["status"], entry["attempts"]) == ("test.ping", "pending", [])
    full = (await admin.get(url(org, str(created["id"]), "deliveries"))).json()
    assert {d["id"] for d in full} == {first, second}


async def test_management_is_for_org_settings_of_this_org_only(
    admin: httpx.AsyncClient, member: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org
) -> None:
    created = await create(admin, org)
    sub = url(org, str(created["id"]))
    refused = await member.get(url(org))
    assert refused.status_code == 403
    assert "org.settings" in refused.json()["detail"]
    for method, path in (
        ("GET", url(org)),
        ("GET", sub),
        ("PATCH", sub),
        ("DELETE", sub),
        ("POST", f"{sub}/enable"),
        ("POST", f"{sub}/test"),
        ("GET", f"{sub}/deliveries"),
    ):
        response = await outsider.request(method, path, json={} if method == "PATCH" else None)
        assert response.status_code == 404, (method, path)
    assert (await admin.get(sub)).json()["name"] == "ops"


async def test_csrf_is_required_for_changes(admin: httpx.AsyncClient, org: Org) -> None:
    response = await admin.post(url(org), json=GOOD, headers={"X-CSRF-Token": "wrong"})
    assert response.status_code == 403
    assert response.json()["code"] == "CSRF_FAILED"
