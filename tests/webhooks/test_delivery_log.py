"""GET /api/orgs/{org_id}/webhooks/{id}/deliveries with real attempts behind it, and what the
Test action and test pings do to a subscription's counter (interfaces.md §4).

Subscriptions are written directly (the save-time check refuses the loopback receiver); the
deliveries are made by the production dispatcher, on the injected clock.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
from scripts.scratch import free_port

from hangar.webhooks.events import catalogue
from tests.fixtures.factories import Org
from tests.fixtures.receivers import HOST
from tests.fixtures.webhooks import (
    Hooks,
    delivery_log,
    log_url,
    subscribe,
    subscription,
)


def sub_url(org: Org, sub_id: uuid.UUID | str, *rest: str) -> str:
    return "/".join([f"/api/orgs/{org.id}/webhooks/{sub_id}", *rest])


def moment(text: str | None) -> datetime | None:
    """A timestamp as the API writes it: ISO 8601 in UTC, with Z."""
    if text is None:
        return None
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text).astimezone(UTC)


async def test_a_failed_attempt_then_a_retry_success_newest_first(
    hooks: Hooks, admin: httpx.AsyncClient, outsider: httpx.AsyncClient, other: Org
) -> None:
    org, receiver, clock = hooks.org, hooks.receiver, hooks.clock
    receiver.statuses = [200, 500, 200]  # answers in order of arrival
    sub_id = await hooks.subscribe()
    foreign_sub = await hooks.subscribe("/other", org=other)
    work = hooks.dispatcher()
    await hooks.fire(org=other)  # the other organization's delivery: never in our log
    assert await work.run_once() == 1
    fired_at = clock.now()
    await hooks.fire(catalogue.SQUAWK_CREATED)

    assert await work.run_once() == 1  # 500
    clock.advance(seconds=2)
    assert await work.run_once() == 1  # the retry: 200
    ours = [r for r in receiver.requests if r.path == "/hook"]
    assert len(ours) == 2
    clock.advance(minutes=1)
    later = clock.now()
    await hooks.fire(catalogue.RESERVATION_CREATED)  # queued, not yet attempted

    entries = await delivery_log(admin, org, sub_id)

    assert [e["event"] for e in entries] == ["reservation.created", "squawk.created"]
    newest, retried = entries
    assert retried["id"] == ours[0].headers["X-Service-Delivery"]
    assert (retried["status"], moment(retried["created_at"])) == ("succeeded", fired_at)
    assert moment(retried["completed_at"]) == fired_at + timedelta(seconds=2)
    first, second = retried["attempts"]
    assert (first["number"], first["status_code"], first["error"]) == (1, 500, None)
    assert (second["number"], second["status_code"], second["error"]) == (2, 200, None)
    assert moment(first["started_at"]) == fired_at
    assert moment(second["started_at"]) == fired_at + timedelta(seconds=2)
    for attempt in (first, second):
        assert isinstance(attempt["duration_ms"], int)
        assert attempt["duration_ms"] >= 0
    assert (newest["status"], newest["attempts"], newest["completed_at"]) == ("pending", [], None)
    assert moment(newest["created_at"]) == later
    assert newest["id"] != retried["id"]

    # limit
    assert [e["id"] for e in await delivery_log(admin, org, sub_id, limit=1)] == [newest["id"]]
    assert len(await delivery_log(admin, org, sub_id, limit=2)) == 2
    for bad in (0, 201, "x", "1_0", " 1", "+1"):
        refused = await admin.get(log_url(org, sub_id), params={"limit": bad})
        assert refused.status_code == 422, bad

    # Another organization's admin: not found, for the log and the subscription alike.
    for path in (log_url(org, sub_id), sub_url(org, sub_id)):
        hidden = await outsider.get(path)
        assert hidden.status_code == 404
        assert hidden.json()["code"] == "NOT_FOUND"
    # Nor through their own organization's path.
    assert (await outsider.get(log_url(other, sub_id))).status_code == 404
    theirs = (await outsider.get(log_url(other, foreign_sub))).json()
    assert [e["status"] for e in theirs] == ["succeeded"]
    assert not {e["id"] for e in theirs} & {e["id"] for e in entries}


async def test_a_connection_failure_is_an_error_string_without_a_status_code(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org = hooks.org
    dead = await subscribe(hooks.services, org, f"https://{HOST}:{free_port()}/hook")
    live = await hooks.subscribe()
    await hooks.fire()
    work = hooks.dispatcher()
    assert await work.run_once() == 2
    hooks.clock.advance(seconds=2)
    assert await work.run_once() == 1  # the dead one's retry

    [entry] = await delivery_log(admin, org, dead)
    assert entry["status"] == "pending"
    assert [a["number"] for a in entry["attempts"]] == [1, 2]
    for attempt in entry["attempts"]:
        assert attempt["status_code"] is None
        assert isinstance(attempt["error"], str)
        assert attempt["error"].startswith("connection failed")
    [ok] = await delivery_log(admin, org, live)
    assert [(a["status_code"], a["error"]) for a in ok["attempts"]] == [(200, None)]


async def test_test_on_a_disabled_subscription_keeps_it_disabled_and_a_failing_ping_counts_nothing(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org, receiver = hooks.org, hooks.receiver
    disabled_at = hooks.clock.now() - timedelta(hours=3)
    sub_id = await hooks.subscribe(enabled=False, consecutive_failures=5, disabled_at=disabled_at)
    receiver.statuses = [500]

    fired = await admin.post(sub_url(org, sub_id, "test"))

    assert fired.status_code == 202, fired.text
    delivery_id = fired.json()["delivery_id"]
    view = (await admin.get(sub_url(org, sub_id))).json()
    assert (view["enabled"], view["consecutive_failures"]) == (False, 0)
    assert moment(view["disabled_at"]) == disabled_at

    await hooks.run_all_attempts()

    assert len(receiver.requests) == 3  # the ping went out, disabled or not
    assert {r.headers["X-Service-Event"] for r in receiver.requests} == {"test.ping"}
    enabled, failures, disabled = await subscription(hooks.services.engine, sub_id)
    assert (enabled, failures) == (False, 0)
    assert disabled is not None
    assert disabled.astimezone(UTC) == disabled_at
    [entry] = await delivery_log(admin, org, sub_id)
    assert (entry["id"], entry["event"], entry["status"]) == (delivery_id, "test.ping", "failed")
    assert [(a["number"], a["status_code"]) for a in entry["attempts"]] == [
        (1, 500),
        (2, 500),
        (3, 500),
    ]
    view = (await admin.get(sub_url(org, sub_id))).json()
    assert (view["enabled"], view["consecutive_failures"]) == (False, 0)
    assert moment(view["disabled_at"]) == disabled_at


async def test_a_failing_ping_leaves_an_enabled_subscriptions_counter_alone(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org, engine = hooks.org, hooks.services.engine
    # One failure short of being disabled: a failing ping must not be the fifth.
    near = await hooks.subscribe("/near", consecutive_failures=4)
    fresh = await hooks.subscribe("/fresh")
    hooks.receiver.statuses = [503]
    for sub_id in (near, fresh):
        assert (await admin.post(sub_url(org, sub_id, "test"))).status_code == 202

    await hooks.run_all_attempts()

    assert len(hooks.receiver.requests) == 6
    assert await subscription(engine, near) == (True, 4, None)
    enabled, failures, _ = await subscription(engine, fresh)
    assert (enabled, failures) == (True, 0)
    for sub_id in (near, fresh):
        [entry] = await delivery_log(admin, org, sub_id)
        assert (entry["event"], entry["status"]) == ("test.ping", "failed")
        assert [a["status_code"] for a in entry["attempts"]] == [503, 503, 503]
