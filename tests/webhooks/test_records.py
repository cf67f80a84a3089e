"""Outcomes are written in batches: those that finish together share one transaction, only
leases still held are written, the failure run follows the order outcomes happened in, and
one outcome the database refuses does not take the others down with it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, func, select, update
from sqlalchemy.exc import IntegrityError

from hangar.foundation.ids import new_id
from hangar.kit.container import Services
from hangar.webhooks.delivery import claim_turns as turns_module
from hangar.webhooks.delivery import states as queue_module
from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.outcomes import Outcome, Recorder, Refill
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Attempt, Delivery, Subscription
from tests.fixtures.factories import Org
from tests.fixtures.webhooks import deliveries, fire, subscribe, subscription


@pytest.fixture(autouse=True)
def uncapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests record outcomes of many deliveries to one subscription, leased at once:
    the cap on attempts in flight (tests/webhooks/test_fair_delivery.py) is not theirs."""
    monkeypatch.setattr(turns_module, "MAX_IN_FLIGHT", 100)
    monkeypatch.setattr(queue_module, "MAX_IN_FLIGHT", 100)


async def claimed(services: Services, sender: Sender, org: Org, events: int) -> list[Claimed]:
    for _ in range(events):
        await fire(services, org)
    got = await Dispatcher(services.engine, services.clock, sender, services.secret_box).claim()
    assert len(got) == events
    return got


def outcome(services: Services, c: Claimed, status: str, **values: Any) -> Outcome:
    now = services.clock.now()
    made = c.attempts_made + 1
    return Outcome(
        **{
            "delivery_id": c.id,
            "subscription_id": c.subscription_id,
            "lease_until": c.lease_until,
            "status": status,
            "attempts_made": made,
            "next_attempt_at": None,
            "completed_at": now,
            "attempt": {
                "id": new_id(),
                "delivery_id": c.id,
                "number": made,
                "started_at": now,
                "duration_ms": 3,
                "status_code": 200 if status == "succeeded" else 500,
                "error": None,
                "response_body": "ok",
            },
            "counts": {"succeeded": "success", "failed": "failure"}.get(status),
            **values,
        }
    )


async def attempts(services: Services, sub_id: uuid.UUID) -> int:
    async with services.engine.connect() as conn:
        count = await conn.scalar(
            select(func.count())
            .select_from(Attempt)
            .join(Delivery, Delivery.id == Attempt.delivery_id)
            .where(Delivery.subscription_id == sub_id)
        )
    return int(count or 0)


async def test_outcomes_finishing_together_share_one_transaction(
    services: Services, org: Org, sender: Sender, receiver: Any
) -> None:
    sub_id = await subscribe(services, org, receiver.url())
    claims = await claimed(services, sender, org, 20)
    commits: list[int] = []
    listener = lambda _conn: commits.append(1)  # noqa: E731
    event.listen(services.engine.sync_engine, "commit", listener)
    try:
        recorder: Recorder[Claimed] = Recorder(services.engine)
        held = await asyncio.gather(
            *(recorder.write(outcome(services, c, "succeeded")) for c in claims)
        )
    finally:
        event.remove(services.engine.sync_engine, "commit", listener)
    assert held == [True] * 20
    assert len(commits) == 1
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)] * 20
    assert await attempts(services, sub_id) == 20


async def test_only_leases_still_held_are_written(
    services: Services, org: Org, sender: Sender, receiver: Any
) -> None:
    sub_id = await subscribe(services, org, receiver.url())
    lost, kept = await claimed(services, sender, org, 2)
    async with services.engine.begin() as conn:  # another worker took it over
        await conn.execute(
            update(Delivery)
            .where(Delivery.id == lost.id)
            .values(lease_until=lost.lease_until + timedelta(seconds=90))
        )
    recorder: Recorder[Claimed] = Recorder(services.engine)
    held = await asyncio.gather(
        recorder.write(outcome(services, lost, "succeeded")),
        recorder.write(outcome(services, kept, "succeeded")),
    )
    assert list(held) == [False, True]
    assert sorted(await deliveries(services.engine, sub_id)) == [
        ("pending", 0),
        ("succeeded", 1),
    ]
    assert await attempts(services, sub_id) == 1


@pytest.mark.parametrize(
    ("order", "failures", "enabled"),
    [
        (["failed", "succeeded"], 0, True),  # the success came last: the run is over
        (["succeeded", "failed"], 1, True),
        (["failed"] * 3, 5, False),  # 2 before the batch + 3
    ],
)
async def test_the_failure_run_follows_the_order_of_the_batch(
    services: Services,
    org: Org,
    sender: Sender,
    receiver: Any,
    order: list[str],
    failures: int,
    enabled: bool,
) -> None:
    sub_id = await subscribe(services, org, receiver.url(), consecutive_failures=2)
    claims = await claimed(services, sender, org, len(order))
    recorder: Recorder[Claimed] = Recorder(services.engine)
    await asyncio.gather(
        *(recorder.write(outcome(services, c, s)) for c, s in zip(claims, order, strict=True))
    )
    got_enabled, got_failures, disabled_at = await subscription(services.engine, sub_id)
    assert (got_enabled, got_failures) == (enabled, failures)
    assert (disabled_at is None) is enabled


async def test_an_outcome_the_database_refuses_does_not_lose_the_others(
    services: Services, org: Org, sender: Sender, receiver: Any
) -> None:
    sub_id = await subscribe(services, org, receiver.url())
    bad, good = await claimed(services, sender, org, 2)
    broken = outcome(services, bad, "succeeded")
    assert broken.attempt is not None
    broken.attempt["number"] = None  # NOT NULL: the database refuses the attempt
    recorder: Recorder[Claimed] = Recorder(services.engine)
    refused, held = await asyncio.gather(
        recorder.write(broken),
        recorder.write(outcome(services, good, "succeeded")),
        return_exceptions=True,
    )
    assert isinstance(refused, Exception)
    assert held is True
    # The refused one is left to its lease, to be attempted again.
    assert sorted(await deliveries(services.engine, sub_id)) == [
        ("pending", 0),
        ("succeeded", 1),
    ]


class Refills:
    """A dispatcher's refilling, minus starting the attempts: what each batch claimed."""

    def __init__(self, work: Dispatcher, slots: int) -> None:
        self.work, self.slots = work, slots
        self.found: list[list[Claimed] | None] = []

    def refill(self) -> Refill[Claimed]:
        return Refill(self.claim, self.found.append)

    async def claim(self, conn: Any, finishing: int) -> list[Claimed]:
        return await self.work.claim_on(conn, self.slots)


async def test_a_batch_refills_the_slots_it_frees_in_its_own_transaction(
    services: Services, org: Org, sender: Sender, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns_module, "MAX_IN_FLIGHT", 2)
    sub_id = await subscribe(services, org, receiver.url())
    for _ in range(5):
        await fire(services, org)
    work = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    first = await work.claim()
    assert len(first) == 2  # the cap
    refills = Refills(work, slots=10)
    recorder: Recorder[Claimed] = Recorder(services.engine, refills.refill())
    commits: list[int] = []
    listener = lambda _conn: commits.append(1)  # noqa: E731
    event.listen(services.engine.sync_engine, "commit", listener)
    try:
        await asyncio.gather(*(recorder.write(outcome(services, c, "succeeded")) for c in first))
    finally:
        event.remove(services.engine.sync_engine, "commit", listener)

    # One commit settled both and leased the next two: the room the two outcomes made.
    assert len(commits) == 1
    [refilled] = refills.found
    assert refilled is not None
    assert len(refilled) == 2
    assert {c.id for c in refilled}.isdisjoint(c.id for c in first)
    assert sorted(await deliveries(services.engine, sub_id)) == [
        ("pending", 0),
        ("pending", 0),
        ("pending", 0),
        ("succeeded", 1),
        ("succeeded", 1),
    ]


async def test_a_batch_that_fails_refills_nothing_and_says_so(
    services: Services, org: Org, sender: Sender, receiver: Any
) -> None:
    await subscribe(services, org, receiver.url())
    for _ in range(3):
        await fire(services, org)
    work = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    [c] = await work.claim(1)
    broken = outcome(services, c, "succeeded")
    assert broken.attempt is not None
    broken.attempt["number"] = None  # NOT NULL: the database refuses the attempt
    refills = Refills(work, slots=10)
    recorder: Recorder[Claimed] = Recorder(services.engine, refills.refill())
    with pytest.raises(IntegrityError):
        await recorder.write(broken)
    # Rolled back with the batch: no lease taken; the dispatcher is told to claim itself.
    assert refills.found == [None]
    assert len(await work.claim()) == 2


async def test_a_batch_of_successes_ends_runs_and_timing_out_but_not_a_disabled_run(
    services: Services, org: Org, sender: Sender, receiver: Any
) -> None:
    """On PostgreSQL such a batch is one statement (records._SETTLE_SUCCESSES_PG): it must
    write what the general path writes."""
    since = services.clock.now() - timedelta(minutes=3)
    failing = await subscribe(
        services, org, receiver.url(), consecutive_failures=2, timing_out_since=since
    )
    disabled = await subscribe(
        services, org, receiver.url() + "?b", consecutive_failures=4, timing_out_since=since
    )
    await fire(services, org)  # one delivery to each
    claims = await Dispatcher(services.engine, services.clock, sender, services.secret_box).claim()
    assert len(claims) == 2
    async with services.engine.begin() as conn:  # another worker's fifth failure, meanwhile
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == disabled)
            .values(enabled=False, consecutive_failures=5, disabled_at=services.clock.now())
        )
    recorder: Recorder[Claimed] = Recorder(services.engine)
    held = await asyncio.gather(
        *(recorder.write(outcome(services, c, "succeeded")) for c in claims)
    )
    assert held == [True] * 2
    assert (await subscription(services.engine, failing))[:2] == (True, 0)
    assert (await subscription(services.engine, disabled))[:2] == (False, 5)
    async with services.engine.connect() as conn:
        marks = (
            await conn.scalars(
                select(Subscription.timing_out_since).where(
                    Subscription.id.in_([failing, disabled])
                )
            )
        ).all()
    assert marks == [None, None]
    assert await attempts(services, failing) == 1
    assert await attempts(services, disabled) == 1
    assert await deliveries(services.engine, failing) == [("succeeded", 1)]
