"""Every statement of a retention batch can be answered through an index, never by reading a
whole table: the partial index on finished deliveries included, which a planner uses only
when the statement says `status <> 'pending'` in so many words.

Each statement is planned as the job sends it, parameters bound. SQLite: EXPLAIN QUERY
PLAN names the index and never SCANs a table. PostgreSQL: the generic plan of the prepared
statement (the one asyncpg's statements settle on after a few runs, made without the
parameters' values), with sequential scans priced out of the planner's reach, still reads no
table whole, which it would only do if no index fitted the statement. (On a table of a few
pages PostgreSQL may rightly prefer to read it whole; docs/operators/retention.md has the plans at a
million deliveries.)
"""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from sqlalchemy import event as sa_event
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.auth import sessions
from hangar.foundation.ids import new_id
from hangar.orgs import invitations
from hangar.webhooks.delivery import pruning as batches
from tests.fixtures.retention import CUTOFF, NOW, OLD

IDS = [new_id(), new_id(), new_id()]
SESSIONS = sessions.expired(NOW, 1000)
INVITATIONS = invitations.expired(NOW, 1000)

# (what, the statement, the indexes its plan must name; "a|b": either, as both partial
# indexes of finished deliveries serve the batch, and which the planner takes depends on the
# statistics of whatever the run's other tests left in the tables)
FINISHED = "ix_webhook_deliveries_finished|ix_webhook_deliveries_subscription_finished"
STATEMENTS: list[tuple[str, Any, set[str]]] = [
    (
        "the oldest finished deliveries",
        batches.finished_deliveries(CUTOFF, None, 500),
        {FINISHED},
    ),
    (
        "the next batch of deliveries",
        batches.finished_deliveries(CUTOFF, OLD, 500),
        {FINISHED},
    ),
    ("their attempts", batches.attempts_of(IDS, CUTOFF), {"ix_webhook_attempts_delivery_id"}),
    (
        "their redeliveries",
        batches.redeliveries_of(IDS, CUTOFF),
        {"ix_webhook_redeliveries_delivery_id"},
    ),
    ("the deliveries", batches.deliveries_of(IDS, CUTOFF), set()),
    ("their events", batches.events_of(IDS, CUTOFF), {"ix_webhook_deliveries_event_id"}),
    ("the oldest events", batches.old_events(CUTOFF, None, 1000), {"ix_events_created_at"}),
    (
        "the next batch of events",
        batches.old_events(CUTOFF, (OLD, IDS[0]), 1000),
        {"ix_events_created_at"},
    ),
    ("the end of a batch of sessions", SESSIONS.end_of_batch(), {"ix_sessions_expires_at"}),
    ("a batch of sessions", SESSIONS.deleted(OLD), {"ix_sessions_expires_at"}),
    (
        "the end of a batch of invitations",
        INVITATIONS.end_of_batch(),
        {"ix_invitations_expires_at"},
    ),
    ("a batch of invitations", INVITATIONS.deleted(OLD), {"ix_invitations_expires_at"}),
]


async def plan(database_url: str, engine: AsyncEngine, stmt: Any) -> list[str]:
    """The plan of `stmt` as the job sends it: its parameters bound, not written in."""
    if engine.dialect.name == "sqlite":
        return await sqlite_plan(engine, stmt)
    return await generic_plan(database_url, engine, stmt)


async def sqlite_plan(engine: AsyncEngine, stmt: Any) -> list[str]:
    async with engine.connect() as conn:

        def explained(*args: Any) -> tuple[str, Any]:
            statement, parameters = args[2], args[3]
            return "EXPLAIN QUERY PLAN " + statement, parameters

        rows: list[Any] = []

        def read(*args: Any) -> None:
            rows.extend(args[1].fetchall())  # the plan, before the statement's types read it

        sync = conn.sync_connection
        assert sync is not None
        sa_event.listen(sync, "before_cursor_execute", explained, retval=True)
        sa_event.listen(sync, "after_cursor_execute", read)
        try:
            (await conn.execute(stmt)).close()
        finally:
            sa_event.remove(sync, "after_cursor_execute", read)
            sa_event.remove(sync, "before_cursor_execute", explained)
        await conn.rollback()
    return [str(row[-1]) for row in rows]


async def generic_plan(database_url: str, engine: AsyncEngine, stmt: Any) -> list[str]:
    """PostgreSQL's generic plan of the prepared statement, the one it settles on after a
    statement has run a few times: made without the parameters' values."""
    compiled = stmt.compile(dialect=engine.dialect, compile_kwargs={"render_postcompile": True})
    values = ", ".join(
        "'{}'".format(str(compiled.params[name]).replace("'", "''"))
        for name in compiled.positiontup
    )
    conn = await asyncpg.connect(database_url.replace("postgresql://", "postgres://", 1))
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await conn.execute("SET LOCAL enable_seqscan = off")
            await conn.execute(f"PREPARE retention_plan AS {compiled}")
            rows = await conn.fetch(f"EXPLAIN EXECUTE retention_plan({values})")
            await conn.execute("DEALLOCATE retention_plan")
    finally:
        await conn.close()
    return [str(row[0]) for row in rows]


@pytest.mark.parametrize(("what", "stmt", "indexes"), STATEMENTS, ids=[s[0] for s in STATEMENTS])
async def test_each_statement_reads_through_an_index(
    database_url: str, engine: AsyncEngine, what: str, stmt: Any, indexes: set[str]
) -> None:
    lines = await plan(database_url, engine, stmt)
    shown = "\n".join(lines)
    for index in indexes:
        assert any(name in shown for name in index.split("|")), f"{what}:\n{shown}"
    assert not [line for line in lines if "Seq Scan" in line], f"{what}:\n{shown}"
    # SQLite: "SCAN t" reads a table whole; "SCAN t USING ... INDEX" an index in order.
    assert not [line for line in lines if line.startswith("SCAN") and "INDEX" not in line], (
        f"{what}:\n{shown}"
    )
