"""Test any event (issue 42, point 3): the Test action sends test.ping or a sample of any of
the 13 events, valid against that event's schema, signed like a real delivery and marked
`X-Service-Test: true`; within the same 10-an-hour budget; never an event of the log."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import httpx
import orjson
from sqlalchemy import select

from hangar.webhooks.events.catalogue import EVENT_NAMES, TEST_PING
from hangar.webhooks.models import Delivery
from hangar_client import parse_event, verify_delivery
from tests.fixtures.event_schemas import data_properties, served_schemas, validator
from tests.fixtures.factories import Org
from tests.fixtures.pages import page_csrf
from tests.fixtures.webhooks import SECRET, Hooks, delivery_log, subscribe


def action_url(org: Org, sub_id: uuid.UUID | str) -> str:
    return f"/api/orgs/{org.id}/webhooks/{sub_id}/test"


async def test_a_sample_of_each_event_is_sent_as_that_event_and_marked_a_test(
    hooks: Hooks, admin: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    org, clock = hooks.org, hooks.clock
    schemas = await served_schemas(client)
    # A subscription to one event only: a Test sends whatever it names, whatever the list.
    url = hooks.receiver.url("/hook")
    sub_id = await subscribe(hooks.services, org, url, ["squawk.created"])
    work = hooks.dispatcher()
    for number, event in enumerate(EVENT_NAMES):
        if number == 10:
            clock.advance(hours=1)  # the budget: 10 an hour
        tested = await admin.post(action_url(org, sub_id), json={"event": event})
        assert tested.status_code == 202, tested.text
        assert await work.run_once() == 1

    heard = hooks.receiver.heard("/hook")
    assert [got.headers["X-Service-Event"] for got in heard] == list(EVENT_NAMES)
    for got in heard:
        event = got.headers["X-Service-Event"]
        assert got.headers["X-Service-Test"] == "true", event
        assert got.headers["X-Service-Organization"] == str(org.id)
        body = orjson.loads(got.body)
        sent_at = datetime.fromisoformat(body["delivered_at"])
        assert verify_delivery(SECRET, got.body, got.headers, now=sent_at), event
        assert body["event"] == event
        errors = [e.message for e in validator(schemas[event]).iter_errors(body)]
        assert errors == [], (event, body)
        assert set(body["data"]) == data_properties(schemas[event], body["data"]), event
        assert type(parse_event(got.body).data).__name__ != "UnknownData", event
    # The log lists each under the event it was sent as.
    logged = await delivery_log(admin, org, sub_id, limit=50)
    assert sorted(entry["event"] for entry in logged) == sorted(EVENT_NAMES)


async def test_no_body_or_an_empty_one_sends_test_ping_marked_a_test(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org = hooks.org
    sub_id = await hooks.subscribe()
    assert (await admin.post(action_url(org, sub_id))).status_code == 202
    assert (await admin.post(action_url(org, sub_id), json={})).status_code == 202
    assert (await admin.post(action_url(org, sub_id), json={"event": TEST_PING})).status_code == 202
    assert await hooks.dispatcher().run_once() == 3
    heard = hooks.receiver.heard("/hook")
    assert [got.headers["X-Service-Event"] for got in heard] == [TEST_PING] * 3
    assert all(got.headers["X-Service-Test"] == "true" for got in heard)
    # A real delivery is no test.
    await hooks.fire()
    assert await hooks.dispatcher().run_once() == 1
    real = hooks.receiver.heard("/hook")[-1]
    assert real.headers["X-Service-Event"] == "squawk.created"
    assert "X-Service-Test" not in real.headers


async def test_a_sample_is_no_event_of_the_log_and_is_never_recovered(
    hooks: Hooks, admin: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    org, clock = hooks.org, hooks.clock
    tested_sub = await hooks.subscribe()
    other_sub = await hooks.subscribe("/second")
    since = clock.now() - timedelta(minutes=1)
    sent = await admin.post(action_url(org, tested_sub), json={"event": "reservation.cancelled"})
    assert sent.status_code == 202
    assert await hooks.dispatcher().run_once() == 1

    events = await client.get("/api/v1/external/events", headers=org.auth)
    assert events.status_code == 200
    assert events.json()["items"] == []
    # Recover on another subscription finds no event to send it.
    recovered = await admin.post(
        f"/api/orgs/{org.id}/webhooks/{other_sub}/recover",
        json={"since": since.isoformat().replace("+00:00", "Z")},
    )
    assert recovered.status_code == 202, recovered.text
    assert recovered.json() == {"deliveries": 0}
    assert hooks.receiver.heard("/second") == []


async def test_a_disabled_subscription_gets_its_sample(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org = hooks.org
    sub_id = await hooks.subscribe(enabled=False, consecutive_failures=5)
    sent = await admin.post(action_url(org, sub_id), json={"event": "mel.expired"})
    assert sent.status_code == 202, sent.text
    assert await hooks.dispatcher().run_once() == 1
    [got] = hooks.receiver.heard("/hook")
    assert got.headers["X-Service-Event"] == "mel.expired"
    assert got.headers["X-Service-Test"] == "true"


async def test_unknown_or_malformed_events_are_refused_and_not_counted(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org = hooks.org
    sub_id = await hooks.subscribe()
    for body, code in (
        ({"event": "reservation.exploded"}, "UNKNOWN_EVENT"),
        ({"event": "*"}, "UNKNOWN_EVENT"),
        ({"event": "RESERVATION.CREATED"}, "UNKNOWN_EVENT"),
        ({"event": "x" * 10_000}, "UNKNOWN_EVENT"),
        ({"event": 5}, "VALIDATION_ERROR"),
        ({"event": None}, "VALIDATION_ERROR"),
        ({"event": ["squawk.created"]}, "VALIDATION_ERROR"),
        ({"event": "squawk.created", "extra": 1}, "VALIDATION_ERROR"),
        ({"event": "squawk.created\x00"}, "VALIDATION_ERROR"),
    ):
        refused = await admin.post(action_url(org, sub_id), json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["code"] == code, body
        assert refused.json()["detail"]
    not_json = await admin.post(
        action_url(org, sub_id), content=b"{", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 422
    # None of them spent the budget: ten samples still go, the eleventh is refused.
    for _ in range(10):
        sent = await admin.post(action_url(org, sub_id), json={"event": "aircraft.grounded"})
        assert sent.status_code == 202, sent.text
    over = await admin.post(action_url(org, sub_id), json={"event": TEST_PING})
    assert over.status_code == 429
    assert over.json()["code"] == "RATE_LIMITED"


async def test_another_organizations_admin_cannot_test_our_webhook(
    hooks: Hooks, outsider: httpx.AsyncClient
) -> None:
    sub_id = await hooks.subscribe()
    refused = await outsider.post(action_url(hooks.org, sub_id), json={"event": "mel.created"})
    assert refused.status_code == 404
    async with hooks.services.engine.connect() as conn:
        queued = select(Delivery.id).where(Delivery.subscription_id == sub_id)
        assert await conn.scalar(queued) is None


async def test_the_screen_offers_every_event_and_says_what_it_sent(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org = hooks.org
    sub_id = await hooks.subscribe()
    page_path = f"/settings/{org.id}/webhooks/{sub_id}/deliveries"
    page = await admin.get(page_path)
    assert page.status_code == 200
    for event in (TEST_PING, *EVENT_NAMES):
        assert f'<option value="{event}"' in page.text
    csrf = await page_csrf(admin, page_path)

    sent = await admin.post(
        f"/settings/{org.id}/webhooks/{sub_id}/test",
        data={"csrf_token": csrf, "event": "reservation.checked_in"},
    )

    assert sent.status_code == 303
    assert sent.headers["location"] == f"{page_path}?done=test&event=reservation.checked_in"
    shown = await admin.get(sent.headers["location"])
    assert "sample of <code>reservation.checked_in</code>" in shown.text
    assert '<option value="reservation.checked_in" selected>' in shown.text
    async with hooks.services.engine.connect() as conn:
        queued = select(Delivery.event_name).where(Delivery.subscription_id == sub_id)
        names = (await conn.scalars(queued)).all()
    assert names == ["reservation.checked_in"]
    # A name the page does not offer is refused, and a made-up one in the address not shown.
    refused = await admin.post(
        f"/settings/{org.id}/webhooks/{sub_id}/test",
        data={"csrf_token": csrf, "event": "nope"},
    )
    assert refused.status_code == 422
    forged = await admin.get(f"{page_path}?done=test&event=<script>")
    assert "<script>" not in forged.text
    assert "<code>test.ping</code> is queued" in forged.text
