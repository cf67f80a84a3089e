"""The event's id and the Standard Webhooks headers on every delivery (issue 27): the first
attempt, a retry, a redelivery and a test ping alike, each attempt timestamped with its own
start; the contract's headers as they were; and the delivery log showing the event's id."""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from datetime import datetime, timedelta

import httpx
import orjson
from gidgethub.sansio import validate_event
from sqlalchemy import select

from hangar.webhooks.delivery.signing import NOT_KEPT
from hangar.webhooks.models import Delivery
from tests.fixtures.factories import Org
from tests.fixtures.fakes import START
from tests.fixtures.receivers import Received
from tests.fixtures.webhooks import SECRET, Hooks, delivery_log

# START as unix seconds, written out rather than computed the way the code does.
START_UNIX = 1_777_888_830


async def event_of(hooks: Hooks, delivery_id: str) -> str:
    async with hooks.services.engine.connect() as conn:
        found = await conn.scalar(
            select(Delivery.event_id).where(Delivery.id == uuid.UUID(delivery_id))
        )
    assert found is not None
    return str(found)


def assert_sent(
    got: Received, *, event: str, event_id: str, delivery_id: str, at: int, org_id: str
) -> None:
    """What hangar put on one request: the contract's headers as they always were, and the
    new ones, all for this delivery, its event, its organization and the attempt's second
    `at`."""
    headers = got.headers
    assert headers["X-Service-Organization"] == org_id
    validate_event(got.body, signature=headers["X-Service-Signature"], secret=SECRET)
    assert headers["X-Service-Signature"] == (
        "sha256=" + hmac.new(SECRET.encode(), got.body, hashlib.sha256).hexdigest()
    )
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == "Service-Webhooks/1.0"
    assert headers["X-Service-Event"] == event
    assert headers["X-Service-Delivery"] == delivery_id
    assert headers["X-Service-Event-Id"] == event_id
    assert headers["webhook-id"] == delivery_id
    assert headers["webhook-timestamp"] == str(at)
    signed = f"{delivery_id}.{at}.".encode() + got.body
    digest = hmac.new(SECRET.encode(), signed, hashlib.sha256).digest()
    assert headers["webhook-signature"] == "v1," + base64.b64encode(digest).decode()
    # The envelope is unchanged, its delivered_at the same instant as the timestamp.
    envelope = orjson.loads(got.body)
    assert list(envelope) == ["event", "delivered_at", "data"]
    delivered_at = datetime.fromisoformat(envelope["delivered_at"])
    assert int(delivered_at.timestamp()) == at


async def test_every_attempt_carries_the_event_id_and_its_own_timestamp(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    org, receiver, clock = hooks.org, hooks.receiver, hooks.clock
    receiver.statuses = [200, 500, 200]  # the other organization's, then ours: fail, retry
    await hooks.subscribe("/other", org=other)
    await hooks.fire(org=other)
    work = hooks.dispatcher()
    assert await work.run_once() == 1
    sub_id = await hooks.subscribe()
    # Just short of the next second: the timestamp is rounded down, as the verifiers do.
    clock.set(START + timedelta(microseconds=999_999))
    await hooks.fire()

    assert await work.run_once() == 1  # 500
    clock.advance(seconds=2)
    assert await work.run_once() == 1  # the retry
    [entry] = await delivery_log(admin, org, sub_id)
    delivery_id = entry["id"]
    clock.advance(minutes=5)
    redeliver = f"/api/orgs/{org.id}/webhooks/{sub_id}/deliveries/{delivery_id}/redeliver"
    assert (await admin.post(redeliver)).status_code == 202
    assert await work.run_once() == 1
    clock.advance(seconds=30)
    tested = await admin.post(f"/api/orgs/{org.id}/webhooks/{sub_id}/test")
    assert tested.status_code == 202, tested.text
    ping_id = tested.json()["delivery_id"]
    assert await work.run_once() == 1

    event_id, ping_event_id = await event_of(hooks, delivery_id), await event_of(hooks, ping_id)
    assert event_id != ping_event_id  # the ping is an event row of its own
    first, retry, redelivered, ping = receiver.heard("/hook")
    for got, at in ((first, START_UNIX), (retry, START_UNIX + 2), (redelivered, START_UNIX + 302)):
        assert_sent(
            got, event="squawk.created", event_id=event_id, delivery_id=delivery_id, at=at,
            org_id=str(org.id),
        )  # fmt: skip
    assert_sent(
        ping, event="test.ping", event_id=ping_event_id, delivery_id=ping_id, at=START_UNIX + 332,
        org_id=str(org.id),
    )  # fmt: skip
    [theirs] = receiver.heard("/other")
    assert theirs.headers["X-Service-Event-Id"] not in (event_id, ping_event_id)
    # The other organization's delivery names its own organization (issue 42).
    assert theirs.headers["X-Service-Organization"] == str(other.id)

    # The log shows each delivery's event id, and each attempt's headers as they went out.
    pinged, fired = await delivery_log(admin, org, sub_id)
    assert (pinged["id"], pinged["event_id"]) == (ping_id, ping_event_id)
    assert (fired["id"], fired["event_id"]) == (delivery_id, event_id)
    for attempt, got in zip(
        fired["attempts"] + pinged["attempts"], (first, retry, redelivered, ping), strict=True
    ):
        shown = dict(attempt["request"]["headers"])
        kept = ("X-Service-Event-Id", "X-Service-Organization", "webhook-id", "webhook-timestamp")
        for name in kept:
            assert shown[name] == got.headers[name]
        assert shown["webhook-signature"] == NOT_KEPT  # a signature is never kept


async def test_one_event_has_one_id_across_subscriptions_and_the_screen_shows_it(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    org, receiver = hooks.org, hooks.receiver
    sub_id = await hooks.subscribe()
    await hooks.subscribe("/second")
    await hooks.subscribe("/other", org=other)
    await hooks.fire()
    await hooks.fire(org=other)

    assert await hooks.dispatcher().run_once() == 3

    [ours] = receiver.heard("/hook")
    [second] = receiver.heard("/second")
    [theirs] = receiver.heard("/other")
    # One event, two deliveries: a consumer of both webhooks and the events API drops
    # duplicates by the event id, a retried delivery by the delivery id.
    assert ours.headers["X-Service-Event-Id"] == second.headers["X-Service-Event-Id"]
    assert ours.headers["X-Service-Delivery"] != second.headers["X-Service-Delivery"]
    event_id = ours.headers["X-Service-Event-Id"]
    assert uuid.UUID(event_id)
    assert theirs.headers["X-Service-Event-Id"] != event_id
    [entry] = await delivery_log(admin, org, sub_id)
    assert entry["event_id"] == event_id

    page = await admin.get(f"/settings/{org.id}/webhooks/{sub_id}/deliveries")

    assert page.status_code == 200
    assert f'data-event-id="{event_id}">Event id <code>{event_id}</code>' in page.text
    assert theirs.headers["X-Service-Event-Id"] not in page.text
    assert theirs.headers["X-Service-Delivery"] not in page.text
