"""The `retention` job: each kind of row in turn, one batch at a time, within a time budget.

Taking turns (deliveries, sessions, invitations, deliveries, ...; once the deliveries are
done, the events no delivery refers to) keeps every kind moving when one has a backlog.
Between batches the job pauses at least as long as the batch took, so it holds its
connection at most half the time, and on SQLite (one writer) a delivery's or a product
action's write waits for one batch at most: tens of milliseconds. When the budget is spent
it stops; the next minute's tick, on whichever worker claims it, carries on. A stopping
worker ends the run at its next pause.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from hangar.audit import service as audit
from hangar.auth import sessions
from hangar.foundation.metrics import RETENTION_PRUNED
from hangar.idempotency import replay as idempotency
from hangar.jobs.scheduler import Done, JobRun
from hangar.kit.batches import Batch, Batches
from hangar.orgs import invitations
from hangar.webhooks.delivery import pruning as delivery_log
from hangar.webhooks.delivery.pruning import Deliveries, Events, PreviousSecrets

# Every table retention deletes from (and the previous secrets it erases), in the order it
# reports them.
TABLES = (
    *delivery_log.TABLES,
    sessions.TABLE,
    invitations.TABLE,
    audit.TABLE,
    idempotency.TABLE,
)

# An invitation's row outlives its expiry (7 days after it was issued, used or not) by this
# much. Its link answers the same 404 with or without the row, so the grace is for the people
# asked "why did my link not work?": the row still says whether it was used, and when it
# expired.
INVITATION_GRACE = timedelta(days=7)


@dataclass(frozen=True)
class Pacing:
    # Deliveries per transaction, each with its attempts (one to three, more after
    # redeliveries) and redeliveries.
    deliveries: int
    # Events, sessions, invitations, audit entries or idempotency keys per transaction: small
    # rows with no dependants.
    rows: int
    # Then stop until the next minute: the run ends inside its minute, so the next tick
    # never waits for it, and busy half the time while it runs, the job keeps its one
    # connection busy a quarter of each minute at most.
    budget: timedelta = timedelta(seconds=30)
    # The least pause between batches, in seconds (otherwise: as long as the batch took).
    pause: float = 0.05


# Measured (docs/operators/retention.md): on PostgreSQL a batch of 500 deliveries with their
# attempts and events takes 75 to 150 ms and locks only the finished rows it deletes; 1,000
# deleted no more per second (the foreign-key checks and index entries cost per row) and
# would hold their locks and the vacuum horizon twice as long; 250 paid the transaction's
# fixed cost twice as often. On SQLite a batch holds the one write lock every delivery and
# product action needs: 100 deliveries take 15 to 20 ms there (500, 60 to 100 ms), and an
# install on SQLite makes far fewer deliveries than that pace deletes.
PACING = {
    "postgresql": Pacing(deliveries=500, rows=1000),
    "sqlite": Pacing(deliveries=100, rows=200),
}

Sleep = Callable[[float], Awaitable[None]]


async def _until_stopping(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)


def _count(pruned: dict[str, int], batch: Batch) -> None:
    for table, rows in batch.deleted.items():
        pruned[table] += rows
        if rows:
            RETENTION_PRUNED.labels(table).inc(rows)


async def prune(run: JobRun, pacing: Pacing | None = None, sleep: Sleep | None = None) -> Done:
    """Deletes what is past retention at `run.now`, in batches, until nothing is left or the
    budget is spent; returns the rows deleted, by table. `pacing` is the database's own by
    default; `sleep` is how it pauses (tests pass their own): by default a pause ends early
    when the worker is stopping."""
    clock, engine = run.services.clock, run.services.engine
    pacing = pacing or PACING[engine.dialect.name]
    pause = sleep or partial(_until_stopping, run.stopping)
    settings = run.services.settings
    cutoff = run.now - timedelta(days=settings.delivery_retention_days)
    deliveries = Deliveries(cutoff, pacing.deliveries)  # with their events
    turns: deque[Batches] = deque(
        (
            deliveries,
            sessions.expired(run.now, pacing.rows),
            invitations.expired(run.now - INVITATION_GRACE, pacing.rows),
            PreviousSecrets(run.now),
            delivery_log.recoveries(cutoff, pacing.rows),
            audit.expired(run.now - timedelta(days=settings.audit_retention_days), pacing.rows),
            idempotency.expired(run.now - idempotency.KEPT, pacing.rows),
        )
    )
    pruned = dict.fromkeys(TABLES, 0)
    started = clock.now()
    while turns:
        kind = turns.popleft()
        began = clock.now()
        batch = await kind.run(engine)
        took = clock.now() - began
        _count(pruned, batch)
        if batch.more:
            turns.append(kind)
        elif kind is deliveries:
            # The events no delivery refers to, once the old deliveries are gone: the old
            # events still referred to are then few (pending deliveries'), where earlier the
            # scan would walk those of every delivery not yet deleted.
            turns.append(Events(cutoff, pacing.rows))
        if not turns or run.stopping.is_set() or clock.now() - started >= pacing.budget:
            break
        if any(batch.deleted.values()):  # a write to make room after; a read needs none
            await pause(max(pacing.pause, took.total_seconds()))
    return pruned
