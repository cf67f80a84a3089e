"""Recording what attempts did: outcomes written in batches, one transaction per batch.

Every attempt ends in an outcome (the delivery's new state, the attempt row, its effect on
the subscription's count of consecutive failures). Outcomes that finish while a batch is
being written wait for the next one, so under load a few dozen share one transaction (and
one WAL flush) instead of each having its own; an idle dispatcher's single outcome is
written at once. Each attempt waits for the commit of its outcome before it gives up its
slot, so `Dispatcher.run_once` returns with everything recorded. A worker that dies before
the commit loses only outcomes, never a delivery: their leases run out and they are
attempted again (at least once).

An outcome is written only while its lease is still the worker's: the batch locks its
deliveries and keeps those whose lease is the one claimed, so of two workers that both
believe they hold a delivery, only one records anything.

The slots a batch frees are refilled in its own transaction (`Refill`, given by the dispatcher
when it makes its recorder): the next due deliveries are leased as the finished ones are
settled, so a slot is never idle between an attempt's end and the next claim, and one commit
does both. The hand-off goes one way: the recorder calls the refill it was given, and nothing
reaches into the recorder.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar, cast

import orjson
from sqlalchemy import JSON, Table, bindparam, func, insert, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.db.base import UTCDateTime
from hangar.foundation.metrics import DATABASE_ERRORS, SUBSCRIPTIONS_AUTO_DISABLED
from hangar.webhooks.delivery.failure_runs import (
    FAILURES_BEFORE_DISABLE,
    Disabled,
    count_runs,
    note_timeouts,
)
from hangar.webhooks.models import Attempt, Delivery, DeliveryStatus

log = logging.getLogger("hangar.webhooks")

# Enough for every slot of a busy dispatcher to share one transaction.
MAX_BATCH = 200


T = TypeVar("T")


@dataclass(frozen=True)
class Refill(Generic[T]):
    """How each batch refills the slots it frees, given to the recorder when it is made (by
    the dispatcher, whose claim it is)."""

    # Inside the batch's transaction, after the settling (so it sees those leases gone):
    # leases what the slots the batch's `finishing` attempts free can take.
    claim: Callable[[AsyncConnection, int], Awaitable[list[T]]]
    # After the commit: what the batch leased, or None when it leased nothing because it
    # could not (the batch failed and its outcomes were written one by one).
    start: Callable[[list[T] | None], None]


@dataclass(frozen=True)
class Outcome:
    delivery_id: uuid.UUID
    subscription_id: uuid.UUID
    lease_until: datetime  # the lease this worker claimed
    status: DeliveryStatus  # pending (a retry is scheduled), succeeded, failed or skipped
    attempts_made: int
    next_attempt_at: datetime | None  # set for a retry only
    completed_at: datetime | None
    attempt: dict[str, Any] | None  # the webhook_attempts row; None when nothing was sent
    # What it does to the subscription's run of consecutive failed deliveries.
    counts: Literal["success", "failure"] | None


# SQLite: one statement for every outcome of a batch (executemany); the lease is restated
# although the batch holds the row locks, so a write can never land on a delivery taken over
# since.
_SETTLE = (
    update(Delivery)
    .where(
        Delivery.id == bindparam("o_id"),
        Delivery.status == "pending",
        Delivery.lease_until == bindparam("o_lease", type_=UTCDateTime()),
    )
    .values(
        lease_until=None,
        status=bindparam("o_status"),
        attempts_made=bindparam("o_made"),
        next_attempt_at=func.coalesce(
            bindparam("o_next", type_=UTCDateTime()), Delivery.next_attempt_at
        ),
        completed_at=bindparam("o_done", type_=UTCDateTime()),
    )
)


# PostgreSQL: the batch's outcomes as arrays, in one execution of each statement (an
# executemany runs its statement once per outcome, and SQLAlchemy processes each row's
# parameters in Python: on a busy worker, most of the cost of recording). The settle locks,
# checks the lease and writes in one UPDATE and returns the deliveries it settled: those whose
# lease was still the one claimed. Its outcomes come sorted by id, and the planner joins them
# in that order (a merge or nested-loop join on the primary key), so the row locks are taken
# in one order by every worker, as `_lock_held` takes them on SQLite. Were they not, two
# workers settling the same deliveries (one with a late outcome of a lease that ran out)
# could deadlock: PostgreSQL fails one batch, and its outcomes are then written one by one.
_SETTLE_PG = """
UPDATE webhook_deliveries AS d
SET lease_until = NULL, status = o.status, attempts_made = o.made,
    next_attempt_at = coalesce(o.next, d.next_attempt_at), completed_at = o.done
FROM (
    SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::integer[],
                         $5::timestamptz[], $6::timestamptz[])
        AS o (id, lease, status, made, next, done)
    ORDER BY id
) AS o
WHERE d.id = o.id AND d.status = 'pending' AND d.lease_until = o.lease
RETURNING d.id
"""


async def _settle_pg(conn: AsyncConnection, outcomes: Sequence[Outcome]) -> set[uuid.UUID]:
    # Through SQLAlchemy's connection, as driver SQL (no compiling, no per-row processing):
    # so it is the statement that begins the batch's transaction.
    rows = await conn.exec_driver_sql(_SETTLE_PG, _settle_arrays(outcomes))
    return set(rows.scalars())


def _settle_arrays(outcomes: Sequence[Outcome]) -> tuple[list[Any], ...]:
    return (
        [o.delivery_id for o in outcomes],
        [o.lease_until for o in outcomes],
        [o.status for o in outcomes],
        [o.attempts_made for o in outcomes],
        [o.next_attempt_at for o in outcomes],
        [o.completed_at for o in outcomes],
    )


@dataclass(frozen=True)
class _ArrayInsert:
    """INSERT ... SELECT FROM unnest(one array per column), for rows given as dicts keyed by
    the table's column names; the columns and their types are the table's own. `rows` is the
    unnest as a row source named `a` (its parameters numbered from `first`), for an insert
    that filters them."""

    sql: str
    rows: str
    columns: tuple[str, ...]
    json: frozenset[int]  # which columns are JSON: sent as their text

    @classmethod
    def of(cls, table: Table, first: int = 1) -> _ArrayInsert:
        pg = postgresql.dialect()  # type: ignore[no-untyped-call]
        columns = list(table.columns)
        arrays = ", ".join(
            f"${i}::{c.type.compile(dialect=pg)}[]" for i, c in enumerate(columns, start=first)
        )
        names = ", ".join(c.name for c in columns)
        return cls(
            # Names and types from the table's own definition, never from input.
            f"INSERT INTO {table.name} ({names}) SELECT * FROM unnest({arrays})",  # noqa: S608
            f"unnest({arrays}) AS a ({names})",
            tuple(c.name for c in columns),
            frozenset(i for i, c in enumerate(columns) if isinstance(c.type, JSON)),
        )

    def arrays(self, rows: Sequence[dict[str, Any]]) -> tuple[list[Any], ...]:
        found = [[row.get(name) for row in rows] for name in self.columns]
        for i in self.json:
            found[i] = [None if v is None else orjson.dumps(v).decode() for v in found[i]]
        return tuple(found)


_ATTEMPTS_PG = _ArrayInsert.of(cast(Table, Attempt.__table__))

# PostgreSQL, a batch whose every outcome is an answered success (what a busy dispatcher
# writes most): the settle, the attempts of the deliveries it settled, and their
# subscriptions' runs of failures and timing-out marks cleared (written only where set), in
# one statement. A batch's statements are round trips through an event loop busy with
# attempts, and the slots a batch frees wait for its commit: four round trips made one were
# a third of the time between an attempt's answer and its slot's next attempt (issue 39).
_ATTEMPTS_AFTER_SETTLE = _ArrayInsert.of(cast(Table, Attempt.__table__), first=7)
_SETTLE_SUCCESSES_PG = f"""
WITH settled AS (
    {_SETTLE_PG.strip().removesuffix("RETURNING d.id")}RETURNING d.id, d.subscription_id
), attempts AS (
    INSERT INTO webhook_attempts ({", ".join(_ATTEMPTS_AFTER_SETTLE.columns)})
    SELECT * FROM {_ATTEMPTS_AFTER_SETTLE.rows}
    WHERE a.delivery_id IN (SELECT id FROM settled)
), answered AS (
    UPDATE webhook_subscriptions AS s
    SET consecutive_failures = CASE WHEN s.enabled THEN 0 ELSE s.consecutive_failures END,
        timing_out_since = NULL
    WHERE s.id IN (SELECT subscription_id FROM settled)
      AND ((s.enabled AND s.consecutive_failures <> 0) OR s.timing_out_since IS NOT NULL)
)
SELECT id FROM settled
"""  # noqa: S608 (names from the tables' own definitions)


def _only_answered_successes(outcomes: Sequence[Outcome]) -> bool:
    return all(o.counts == "success" and o.attempt is not None for o in outcomes)


async def _settle_successes_pg(
    conn: AsyncConnection, outcomes: Sequence[Outcome]
) -> set[uuid.UUID]:
    """What `_settle_pg`, the attempts' insert, `count_runs` and `note_timeouts` write for a batch
    of answered successes, in one statement; the deliveries it settled."""
    attempts = [cast(dict[str, Any], o.attempt) for o in outcomes]
    rows = await conn.exec_driver_sql(
        _SETTLE_SUCCESSES_PG, (*_settle_arrays(outcomes), *_ATTEMPTS_AFTER_SETTLE.arrays(attempts))
    )
    return set(rows.scalars())


class Recorder(Generic[T]):
    """Writes outcomes for one dispatcher; `write` returns once its outcome is committed.
    Given a `refill`, each batch also refills the slots it frees."""

    def __init__(self, engine: AsyncEngine, refill: Refill[T] | None = None) -> None:
        self._engine = engine
        self._queue: list[tuple[Outcome, asyncio.Future[bool]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._refill = refill

    async def write(self, outcome: Outcome) -> bool:
        """Records `outcome`; False if the lease had been lost and nothing was written."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queue.append((outcome, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain())
        # Shielded: an attempt cancelled now (the worker stopping) still gets its outcome
        # written by the batch it is in.
        return await asyncio.shield(done)

    async def _drain(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            refill = self._refill
            try:
                held, found = await self._write([o for o, _ in batch], refill)
            except Exception:
                DATABASE_ERRORS.labels("dispatcher").inc()
                # One outcome the database refuses must not take the others down with it.
                log.exception("recording %d outcomes failed; recording them one by one", len(batch))
                held, found = set(), None
                for outcome, done in batch:
                    try:
                        held |= (await self._write([outcome], None))[0]
                    except Exception as exc:
                        if not done.done():
                            done.set_exception(exc)
            if refill is not None:
                refill.start(found)
            for outcome, done in batch:
                if not done.done():
                    done.set_result(outcome.delivery_id in held)

    async def _write(
        self, outcomes: Sequence[Outcome], refill: Refill[T] | None
    ) -> tuple[set[uuid.UUID], list[T] | None]:
        disabled: list[Disabled] = []
        found: list[T] | None = None
        async with self._engine.begin() as conn:
            on_pg = conn.dialect.name == "postgresql"
            if on_pg and _only_answered_successes(outcomes):
                held = await _settle_successes_pg(conn, outcomes)
                if held and refill is not None:
                    found = await refill.claim(conn, len(outcomes))
                return held, found
            if on_pg:
                held = await _settle_pg(conn, outcomes)
            else:
                held = await _lock_held(conn, outcomes)
            mine = [o for o in outcomes if o.delivery_id in held]
            if not mine:
                return held, found
            attempts = [o.attempt for o in mine if o.attempt is not None]
            if on_pg:
                if attempts:
                    await conn.exec_driver_sql(_ATTEMPTS_PG.sql, _ATTEMPTS_PG.arrays(attempts))
            else:
                await conn.execute(_SETTLE, [_settled(o) for o in mine])
                if attempts:
                    await conn.execute(insert(Attempt), attempts)
            disabled = await count_runs(conn, mine)
            await note_timeouts(conn, mine)
            if refill is not None:
                found = await refill.claim(conn, len(outcomes))
        # Counted and told once committed: a batch rolled back disabled nothing.
        for d in disabled:
            SUBSCRIPTIONS_AUTO_DISABLED.inc()
            log.warning(
                "webhook subscription %s of organization %s disabled after %d consecutive "
                "failed deliveries; its admins are told, and Enable then Recover sends what "
                "it missed",
                d.subscription_id,
                d.org_id,
                FAILURES_BEFORE_DISABLE,
                extra={"subscription_id": str(d.subscription_id), "org_id": str(d.org_id)},
            )
        return held, found


def _settled(o: Outcome) -> dict[str, Any]:
    return {
        "o_id": o.delivery_id,
        "o_lease": o.lease_until,
        "o_status": o.status,
        "o_made": o.attempts_made,
        "o_next": o.next_attempt_at,
        "o_done": o.completed_at,
    }


async def _lock_held(conn: AsyncConnection, outcomes: Sequence[Outcome]) -> set[uuid.UUID]:
    """The deliveries among `outcomes` still leased as claimed, locked until the commit."""
    rows = await conn.execute(
        select(Delivery.id, Delivery.lease_until)
        .where(Delivery.id.in_([o.delivery_id for o in outcomes]), Delivery.status == "pending")
        .order_by(Delivery.id)  # one lock order for every worker
        .with_for_update()
    )
    leases = {row.id: row.lease_until for row in rows}
    return {o.delivery_id for o in outcomes if leases.get(o.delivery_id) == o.lease_until}
