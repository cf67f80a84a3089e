"""How the retention job paces itself: one bounded batch per short transaction, pauses
between batches at least as long as the batch took, a time budget after which the next
minute carries on, an early end when the worker stops, and the rows counted in the metric.
Time is the injected clock; pauses are recorded, never slept."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Literal

from prometheus_client import REGISTRY
from sqlalchemy import event as sa_event
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.jobs.scheduler import JobRun
from hangar.kit.container import Services
from hangar.retention import prune
from hangar.retention.job import TABLES, Pacing
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.retention import NOW, OLD, delivery, event, kept, pruned, subscription

Statement = tuple[str, str, int]  # verb, table, rows


@contextmanager
def transactions(engine: AsyncEngine) -> Iterator[list[list[Statement]]]:
    """Every transaction begun on `engine` meanwhile, as the statements it ran."""
    seen: list[list[Statement]] = []

    def begun(_conn: Any) -> None:
        seen.append([])

    def ran(_conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        verb = statement.split()[0].upper()
        table = re.search(r"\b(?:FROM|UPDATE)\s+(\w+)", statement, re.IGNORECASE)
        seen[-1].append((verb, table.group(1) if table else "", cursor.rowcount))

    sync = engine.sync_engine
    sa_event.listen(sync, "begin", begun)
    sa_event.listen(sync, "after_cursor_execute", ran)
    try:
        yield seen
    finally:
        sa_event.remove(sync, "after_cursor_execute", ran)
        sa_event.remove(sync, "begin", begun)


async def test_each_batch_is_one_short_transaction_of_a_bounded_size(
    services: Services, org: Org, other: Org
) -> None:
    await pruned(services)  # what other tests left: from here on, only this test's rows
    sub, theirs = await subscription(services, org), await subscription(services, other)
    for n in range(5):
        owner, to = (org, sub) if n % 2 else (other, theirs)
        await delivery(services, owner, to, finished=OLD + timedelta(seconds=n), attempts=2)
    for n in range(3):
        await event(services.engine, org, OLD + timedelta(seconds=n))  # no delivery has these

    with transactions(services.engine) as seen:
        done = await pruned(services)  # batches of 2

    assert done == {
        "webhook_deliveries": 5,
        "webhook_attempts": 10,
        "webhook_redeliveries": 0,
        "events": 8,
        "webhook_previous_secrets": 0,
        "webhook_recoveries": 0,
        "sessions": 0,
        "invitations": 0,
        "audit_entries": 0,
        "idempotency_keys": 0,
    }
    deleting = [[(v, t, n) for v, t, n in tx if v == "DELETE"] for tx in seen]
    # A batch of deliveries: read (locked on PostgreSQL) through the index, then its
    # attempts, redeliveries, the deliveries, their events; no more than two deliveries.
    deliveries = [tx for tx in deleting if ("DELETE", "webhook_deliveries") in {s[:2] for s in tx}]
    assert [[table for _, table, _ in tx] for tx in deliveries] == [
        ["webhook_attempts", "webhook_redeliveries", "webhook_deliveries", "events"]
    ] * 3
    assert [tx[2][2] for tx in deliveries] == [2, 2, 1]
    assert [tx[0][2] for tx in deliveries] == [4, 4, 2]
    assert [tx[3][2] for tx in deliveries] == [2, 2, 1]
    # Then the events no delivery refers to, two at a time (old ones other tests left, still
    # referred to by a pending delivery, are read and kept); and every transaction is one
    # read of where its batch ends (or which rows it holds) and its deletes, nothing else.
    events = [tx[0][2] for tx in deleting if len(tx) == 1 and tx[0][1] == "events"]
    assert sum(events) == 3
    assert max(events) == 2
    assert all(len(tx) <= 5 for tx in seen)
    # And the one statement that erases the previous secrets past their grace (none here).
    erasing = [tx for tx in seen if any(v == "UPDATE" for v, _, _ in tx)]
    assert erasing == [[("UPDATE", "webhook_subscriptions", 0)]]
    assert all(v in ("SELECT", "DELETE") for tx in seen if tx not in erasing for v, _, _ in tx)


class Pauses:
    """The job's pauses, recorded; each moves the clock on by `step` seconds."""

    def __init__(self, clock: FakeClock, step: float = 0) -> None:
        self.clock, self.step = clock, step
        self.taken: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.taken.append(seconds)
        self.clock.advance(seconds=self.step)


async def test_the_run_stops_when_its_budget_is_spent_and_the_next_minute_carries_on(
    services: Services, org: Org, clock: FakeClock
) -> None:
    # What other tests left, up to the later of the two runs' horizons: from here on, only
    # this test's rows are past the window.
    await pruned(services, NOW + timedelta(minutes=1))
    sub = await subscription(services, org)
    made = [
        await delivery(services, org, sub, finished=OLD + timedelta(seconds=n)) for n in range(12)
    ]
    pacing = Pacing(deliveries=2, rows=2, budget=timedelta(seconds=25), pause=0)
    pauses = Pauses(clock, step=10)

    first = await prune(JobRun(services, NOW), pacing, pauses)

    # 2 deliveries, a pause (10 s), 2, a pause (20 s), 2, a pause (30 s), 2, and time is up.
    assert (first["webhook_deliveries"], len(pauses.taken)) == (8, 3)
    left_after_first = [m for m in made if (await kept(services.engine, m)) == m.rows]
    assert left_after_first == made[8:]  # oldest first

    second = await prune(JobRun(services, NOW + timedelta(minutes=1)), pacing, pauses)
    assert second["webhook_deliveries"] == 4
    assert [m for m in made if (await kept(services.engine, m)) == m.rows] == []


class StepClock:
    """A clock that moves `step` each time it is read: every batch takes `step`."""

    def __init__(self, start: datetime, step: timedelta) -> None:
        self._now, self._step = start, step

    def now(self) -> datetime:
        self._now += self._step
        return self._now

    async def sleep(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)


async def finished_long_ago(services: Services, org: Org, count: int) -> uuid.UUID:
    """An empty start, then `count` deliveries of one subscription finished before the window,
    a second apart; the subscription's id."""
    await pruned(services)
    sub = await subscription(services, org)
    for n in range(count):
        await delivery(services, org, sub, finished=OLD + timedelta(seconds=n))
    return sub


async def test_each_pause_is_at_least_as_long_as_the_batch_took(
    services: Services, org: Org
) -> None:
    sub = await finished_long_ago(services, org, 5)
    slow = dataclasses.replace(services, clock=StepClock(NOW, timedelta(seconds=0.3)))
    pauses = Pauses(FakeClock())

    await prune(JobRun(slow, NOW), Pacing(deliveries=2, rows=2, pause=0.05), pauses)

    assert pauses.taken == [0.3, 0.3, 0.3]  # after each batch that deleted rows
    pauses.taken.clear()
    await delivery(services, org, sub, finished=OLD)
    await prune(JobRun(slow, NOW), Pacing(deliveries=2, rows=2, pause=0.5), pauses)
    assert pauses.taken == [0.5]


class Watched(asyncio.Event):
    """A stop signal that tells when the job is waiting on it (pausing)."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = asyncio.Event()

    async def wait(self) -> Literal[True]:
        self.waited.set()
        return await super().wait()


async def test_a_stopping_worker_ends_the_run_at_its_next_pause(
    services: Services, org: Org
) -> None:
    await finished_long_ago(services, org, 6)
    stopping = Watched()
    # An hour's pause: only the stop signal can end it.
    pacing = Pacing(deliveries=2, rows=2, pause=3600)
    run = asyncio.create_task(prune(JobRun(services, NOW, stopping), pacing))

    await asyncio.wait_for(stopping.waited.wait(), 10)
    assert not run.done()
    stopping.set()
    done = await asyncio.wait_for(run, 10)

    assert done["webhook_deliveries"] == 2  # one batch, then the pause the stop cut short


def pruned_total(table: str) -> float:
    value = REGISTRY.get_sample_value("hangar_retention_rows_pruned_total", {"table": table})
    return value or 0.0


async def test_the_metric_counts_the_rows_pruned_by_table(services: Services, org: Org) -> None:
    await pruned(services)
    sub = await subscription(services, org)
    for _ in range(3):
        await delivery(services, org, sub, finished=OLD, attempts=2, redeliveries=1)
    await event(services.engine, org, OLD)
    before = {table: pruned_total(table) for table in TABLES}

    done = await pruned(services)

    assert {table: pruned_total(table) - before[table] for table in TABLES} == done
    assert done == {
        "webhook_deliveries": 3,
        "webhook_attempts": 6,
        "webhook_redeliveries": 3,
        "events": 4,
        "webhook_previous_secrets": 0,
        "webhook_recoveries": 0,
        "sessions": 0,
        "invitations": 0,
        "audit_entries": 0,
        "idempotency_keys": 0,
    }
