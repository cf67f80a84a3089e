"""Recover: POST /api/orgs/{org_id}/webhooks/{id}/recover {"since"}. Every event since `since`
that the subscription takes and has no succeeded delivery to it is queued to it, oldest
first: deliveries that failed or were skipped are queued again (same delivery id, a
redelivery), events recorded while it was disabled get a delivery; what succeeded, what is
pending and what it does not take are left alone. Bounded by the retention window, by when
the subscription was created, by a cap per recovery, and by one recovery at a time.

Every test runs the real dispatcher against a loopback receiver; the other organization has
its own subscription and events at the same moments, and none of them may reach ours.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy import select, update

from hangar.webhooks.delivery import recovery
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.events import catalogue
from hangar.webhooks.models import Delivery, Event, Recovery, Subscription
from hangar.wiring.worker import Worker
from tests.fixtures.actions import user_id
from tests.fixtures.factories import Org
from tests.fixtures.subprocesses import eventually
from tests.fixtures.webhooks import Hooks, delivery_log, subscribe, subscription

BOUND = 10.0  # seconds any wait here may take before the test fails
SQUAWK = catalogue.SQUAWK_CREATED
RESOLVED = catalogue.SQUAWK_RESOLVED


def recover_url(org: Org, sub_id: uuid.UUID | str) -> str:
    return f"/api/orgs/{org.id}/webhooks/{sub_id}/recover"


async def recover(
    client: httpx.AsyncClient, org: Org, sub_id: uuid.UUID | str, since: object
) -> httpx.Response:
    return await client.post(recover_url(org, sub_id), json={"since": since})


def rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def one_at_a_time(hooks: Hooks) -> Dispatcher:
    """A dispatcher with one attempt slot: what it claims reaches the receiver in the order
    it was claimed."""
    services = hooks.services
    return Dispatcher(
        services.engine, services.clock, hooks.sender, services.secret_box, concurrency=1
    )


async def drain(work: Dispatcher) -> None:
    for _ in range(10_000):
        if await work.run_once() == 0:
            return
    raise AssertionError("the queue never emptied")


async def fired(hooks: Hooks, name: str = SQUAWK, org: Org | None = None) -> str:
    """Fires `name` for `org` (ours by default); its event's id."""
    owner = org or hooks.org
    await hooks.fire(name, org=owner)
    async with hooks.services.engine.connect() as conn:
        found = await conn.scalar(
            select(Event.id)
            .where(Event.org_id == owner.id)
            .order_by(Event.created_at.desc(), Event.id.desc())
            .limit(1)
        )
    return str(found)


async def finished(hooks: Hooks, sub_id: uuid.UUID, status: str) -> list[tuple[str, str]]:
    """(event id, delivery id) of the subscription's deliveries in `status`, in the order
    their events were made."""
    async with hooks.services.engine.connect() as conn:
        rows = await conn.execute(
            select(Delivery.event_id, Delivery.id)
            .join(Event, Event.id == Delivery.event_id)
            .where(Delivery.subscription_id == sub_id, Delivery.status == status)
            .order_by(Event.created_at, Event.id)
        )
        return [(str(e), str(d)) for e, d in rows]


async def disable_by_failures(hooks: Hooks, admin: httpx.AsyncClient, sub_id: uuid.UUID) -> None:
    """Five deliveries fail (3 attempts each): the dispatcher disables the subscription."""
    hooks.receiver.statuses = [500]
    for _ in range(5):
        await hooks.fire(SQUAWK)
    await hooks.run_all_attempts()
    enabled, failures, _ = await subscription(hooks.services.engine, sub_id)
    assert (enabled, failures) == (False, 5)


async def test_an_outage_is_recovered_oldest_first_and_only_once(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    """The whole story: one delivery succeeded, five failed and disabled the subscription,
    three events came while it was disabled (one it does not take), it is enabled again and
    recovered: the receiver gets the five failed ones again (same delivery ids) and the two
    it takes from while it was disabled, oldest first, and nothing it had. Again: nothing."""
    org, receiver, clock = hooks.org, hooks.receiver, hooks.clock
    sub_id = await subscribe(hooks.services, org, receiver.url(), [SQUAWK, RESOLVED])
    await hooks.subscribe("/theirs", org=other)
    start = clock.now()
    delivered = await fired(hooks)
    assert await hooks.dispatcher().run_once() == 1
    clock.advance(minutes=1)
    await disable_by_failures(hooks, admin, sub_id)
    failed = await finished(hooks, sub_id, "failed")  # (event id, delivery id), oldest first
    receiver.statuses = [200]
    missed = []
    for name in (SQUAWK, catalogue.MEL_CREATED, RESOLVED):  # while disabled
        clock.advance(minutes=1)
        missed.append((name, await fired(hooks, name)))
        await fired(hooks, name, other)
    assert await hooks.dispatcher().run_once() == 3  # the other organization's alone
    clock.advance(minutes=1)
    enabled = await admin.post(f"/api/orgs/{org.id}/webhooks/{sub_id}/enable")
    assert enabled.status_code == 200
    heard = len(receiver.heard("/hook"))

    answer = await recover(admin, org, sub_id, rfc3339(start))

    assert (answer.status_code, answer.json()) == (202, {"deliveries": 7}), answer.text
    await drain(one_at_a_time(hooks))
    got = receiver.heard("/hook")[heard:]
    wanted = [event for event, _ in failed] + [
        event for name, event in missed if name != catalogue.MEL_CREATED
    ]
    assert delivered not in wanted
    assert [r.headers["X-Service-Event-Id"] for r in got] == wanted  # oldest first
    assert [r.headers["X-Service-Event"] for r in got] == [SQUAWK] * 6 + [RESOLVED]
    # The five that failed come again under their own delivery ids; the two others are new.
    failed_ids = [delivery for _, delivery in failed]
    assert [r.headers["X-Service-Delivery"] for r in got[:5]] == failed_ids
    assert not {r.headers["X-Service-Delivery"] for r in got[5:]} & set(failed_ids)
    for r in got:
        assert json.loads(r.body)["event"] == r.headers["X-Service-Event"]
    # The other organization's subscription had its own three, and nothing of ours.
    theirs = receiver.heard("/theirs")
    assert len(theirs) == 3
    assert not {r.headers["X-Service-Event-Id"] for r in theirs} & {*wanted, delivered}

    again = await recover(admin, org, sub_id, rfc3339(start))
    assert (again.status_code, again.json()) == (202, {"deliveries": 0})
    await drain(one_at_a_time(hooks))
    assert len(receiver.heard("/hook")) == heard + 7  # nothing sent twice
    log = await delivery_log(admin, org, sub_id, limit=50)
    assert sorted(e["status"] for e in log) == ["succeeded"] * 8
    requeued = [e for e in log if e["redeliveries"]]
    assert sorted(e["id"] for e in requeued) == sorted(failed_ids)
    for entry in requeued:
        [asked] = entry["redeliveries"]
        assert asked["first_attempt"] == 4  # after the first series' 3
        assert asked["requested_by"]["email"].startswith("admin-")
        assert [a["number"] for a in entry["attempts"]] == [1, 2, 3, 4]


async def recoveries(hooks: Hooks, sub_id: uuid.UUID) -> list[tuple[datetime, int]]:
    async with hooks.services.engine.connect() as conn:
        rows = await conn.execute(
            select(Recovery.since, Recovery.deliveries)
            .where(Recovery.subscription_id == sub_id)
            .order_by(Recovery.requested_at)
        )
        return [(r.since, r.deliveries) for r in rows]


async def missed_while_disabled(hooks: Hooks, sub_id: uuid.UUID, count: int) -> list[str]:
    """`count` events recorded while the subscription was disabled (so with no delivery to
    it), then enabled again: their ids, oldest first."""
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id)
            .values(enabled=False, disabled_at=hooks.clock.now())
        )
    made = []
    for _ in range(count):
        hooks.clock.advance(seconds=1)
        made.append(await fired(hooks))
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id)
            .values(enabled=True, disabled_at=None, consecutive_failures=0)
        )
    return made


@pytest.mark.parametrize(
    "since",
    [
        "yesterday",
        "",
        12345,
        None,
        ["2026-05-04T10:00:00Z"],
        "2026-05-04T10:00:00",  # no offset
        "2026-05-04",  # a date alone
        "9999-12-31T23:59:59Z",  # far in the future
        "9999-12-31T23:59:59-01:00",  # past the end of time once in UTC
        "0001-01-01T00:00:00Z",  # far in the past
        "2026-05-04T10:05:00Z",  # minutes from now (the clock reads 10:00:32)
        "2026-04-04T09:59:59Z",  # just past the 30 days kept
        "2026-05-04T10:00:00Z\x00",
    ],
)
async def test_a_since_that_is_not_a_time_within_retention_is_422_and_queues_nothing(
    hooks: Hooks, admin: httpx.AsyncClient, since: object
) -> None:
    sub_id = await hooks.subscribe()
    await missed_while_disabled(hooks, sub_id, 2)

    refused = await recover(admin, hooks.org, sub_id, since)

    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["code"] == "VALIDATION_ERROR"
    assert [e["loc"][-1] for e in body["errors"]] == ["since"]
    assert await recoveries(hooks, sub_id) == []
    assert await finished(hooks, sub_id, "pending") == []


async def test_a_body_without_since_or_with_more_is_422(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    sub_id = await hooks.subscribe()
    url = recover_url(hooks.org, sub_id)
    for body in ({}, {"since": "2026-05-04T10:00:00Z", "until": "2026-05-04T10:00:00Z"}):
        refused = await admin.post(url, json=body)
        assert (refused.status_code, refused.json()["code"]) == (422, "VALIDATION_ERROR")
    assert (await admin.post(url, content=b"not json")).status_code == 422


async def test_the_edge_of_retention_and_before_the_subscription_was_created(
    hooks: Hooks, admin: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Exactly 30 days back is accepted; an event from before the subscription existed is
    never sent to it, however far back `since` goes. The recovery is recorded: a row, and a
    log line with its ids as fields."""
    before = await fired(hooks)  # no subscription yet
    hooks.clock.advance(minutes=1)
    sub_id = await hooks.subscribe()
    created = hooks.clock.now()
    [missed] = await missed_while_disabled(hooks, sub_id, 1)
    edge = hooks.clock.now() - timedelta(days=30)

    with caplog.at_level(logging.INFO, logger="hangar.webhooks"):
        answer = await recover(admin, hooks.org, sub_id, rfc3339(edge))

    assert (answer.status_code, answer.json()) == (202, {"deliveries": 1})
    [line] = [r for r in caplog.records if r.getMessage().startswith("recovery ")]
    assert f"of subscription {sub_id} since {created.isoformat()}: 1 queued (0 of them" in (
        line.getMessage()
    )
    assert line.__dict__["subscription_id"] == str(sub_id)
    assert line.__dict__["requested_by"] == await user_id(admin)
    await drain(hooks.dispatcher())
    assert [r.headers["X-Service-Event-Id"] for r in hooks.receiver.requests] == [missed]
    assert before != missed
    assert await recoveries(hooks, sub_id) == [(created, 1)]  # since as applied


async def test_one_recovery_at_a_time_and_pending_deliveries_are_not_queued_twice(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org, clock = hooks.org, hooks.clock
    sub_id = await hooks.subscribe()
    since = rfc3339(clock.now())
    pending = await fired(hooks)  # delivered by the outbox, not yet attempted
    missed = await missed_while_disabled(hooks, sub_id, 3)

    first = await recover(admin, org, sub_id, since)
    assert (first.status_code, first.json()) == (202, {"deliveries": 3})  # not `pending`
    running = await recover(admin, org, sub_id, since)
    assert (running.status_code, running.json()["code"]) == (409, "RECOVERY_RUNNING")
    assert "still sending" in running.json()["detail"]
    await drain(one_at_a_time(hooks))
    # Each event once: the one that was pending went out as it was (due first), then the
    # recovered ones, oldest first.
    heard = [r.headers["X-Service-Event-Id"] for r in hooks.receiver.requests]
    assert heard == [pending, *missed]

    done = await recover(admin, org, sub_id, since)
    assert (done.status_code, done.json()) == (202, {"deliveries": 0})
    assert [n for _, n in await recoveries(hooks, sub_id)] == [3, 0]


async def test_refused_for_other_organizations_deleted_disabled_and_non_admins(
    hooks: Hooks,
    admin: httpx.AsyncClient,
    member: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    other: Org,
) -> None:
    org = hooks.org
    sub_id = await hooks.subscribe()
    theirs = await hooks.subscribe("/theirs", org=other)
    await missed_while_disabled(hooks, sub_id, 1)
    since = rfc3339(hooks.clock.now() - timedelta(hours=1))

    forbidden = await recover(member, org, sub_id, since)
    assert (forbidden.status_code, forbidden.json()["code"]) == (403, "FORBIDDEN")
    assert "org.settings" in forbidden.json()["detail"]
    for client, path_org, target in (
        (outsider, org, sub_id),  # another organization's admin, by our path
        (admin, org, theirs),  # our admin, with their subscription's id
        (admin, other, theirs),  # our admin, in their organization
        (admin, org, uuid.uuid4()),
        (admin, org, "not-an-id"),
    ):
        hidden = await recover(client, path_org, target, since)
        assert (hidden.status_code, hidden.json()["code"]) == (404, "NOT_FOUND"), target

    deleted = await hooks.subscribe("/deleted")
    assert (await admin.delete(f"/api/orgs/{org.id}/webhooks/{deleted}")).status_code == 204
    gone = await recover(admin, org, deleted, since)
    assert (gone.status_code, gone.json()["code"]) == (404, "NOT_FOUND")

    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Subscription).where(Subscription.id == sub_id).values(enabled=False)
        )
    disabled = await recover(admin, org, sub_id, since)
    assert (disabled.status_code, disabled.json()["code"]) == (409, "WEBHOOK_DISABLED")
    assert "enable it first" in disabled.json()["detail"]

    for target in (sub_id, theirs, deleted):
        assert await recoveries(hooks, target) == []
    assert hooks.receiver.requests == []


async def test_a_recovery_queues_at_most_its_cap_and_the_next_one_goes_on(
    hooks: Hooks, admin: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recovery, "MAX_DELIVERIES", 3)
    monkeypatch.setattr(recovery, "BATCH", 2)  # and several batches to one recovery
    sub_id = await hooks.subscribe()
    since = rfc3339(hooks.clock.now())
    missed = await missed_while_disabled(hooks, sub_id, 5)

    first = await recover(admin, hooks.org, sub_id, since)
    assert (first.status_code, first.json()) == (202, {"deliveries": 3})
    await drain(one_at_a_time(hooks))
    second = await recover(admin, hooks.org, sub_id, since)
    assert (second.status_code, second.json()) == (202, {"deliveries": 2})
    await drain(one_at_a_time(hooks))

    assert [r.headers["X-Service-Event-Id"] for r in hooks.receiver.requests] == missed


async def test_recovered_deliveries_wake_a_sleeping_worker(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    """Like a new event's: NOTIFY on PostgreSQL, the wake flag on SQLite. The worker sleeps
    on the test's clock, which does not move: only the signal can wake it."""
    sub_id = await hooks.subscribe()
    since = rfc3339(hooks.clock.now())
    [missed] = await missed_while_disabled(hooks, sub_id, 1)
    worker = Worker(hooks.services, hooks.sender)
    await worker.start()
    try:
        await asyncio.wait_for(worker.dispatcher.asleep.wait(), BOUND)
        answer = await recover(admin, hooks.org, sub_id, since)
        assert answer.json() == {"deliveries": 1}
        await eventually(lambda: hooks.receiver.requests, BOUND, "the recovery woke no worker")
    finally:
        await worker.stop()
    assert hooks.receiver.requests[0].headers["X-Service-Event-Id"] == missed


async def test_a_recovery_backlog_takes_its_turn_with_other_organizations(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    """Recovered deliveries are ordinary queue rows: the claim takes another organization's
    due delivery at its turn, not behind our backlog."""
    sub_id = await hooks.subscribe()
    since = rfc3339(hooks.clock.now())
    await missed_while_disabled(hooks, sub_id, 30)
    assert (await recover(admin, hooks.org, sub_id, since)).json() == {"deliveries": 30}
    await hooks.subscribe("/theirs", org=other)
    theirs = await fired(hooks, SQUAWK, other)

    claimed = await hooks.dispatcher().claim(2)

    assert theirs in {str(c.event_id) for c in claimed}
    async with hooks.services.engine.begin() as conn:  # give the leases back
        await conn.execute(
            update(Delivery)
            .where(Delivery.id.in_([c.id for c in claimed]))
            .values(lease_until=None)
        )


async def test_two_recoveries_at_once_queue_each_event_once(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    """A double click: the second waits for the first (PostgreSQL: the subscription's row;
    SQLite: the one write lock, taken first), then finds it running."""
    sub_id = await hooks.subscribe()
    since = rfc3339(hooks.clock.now())
    missed = await missed_while_disabled(hooks, sub_id, 4)

    answers = await asyncio.gather(*(recover(admin, hooks.org, sub_id, since) for _ in range(2)))

    assert sorted(a.status_code for a in answers) == [202, 409]
    [queued] = [a.json() for a in answers if a.status_code == 202]
    assert queued == {"deliveries": 4}
    assert [e for e, _ in await finished(hooks, sub_id, "pending")] == missed
