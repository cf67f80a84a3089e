"""Every statement of a retention batch can be answered through an index, never by reading a
whole table: the partial index on finished deliveries included, which a planner uses only
when the statement says `status <> 'pending'` in so many words.

SQLite: EXPLAIN QUERY PLAN names the index and never SCANs a table. PostgreSQL: with
sequential scans priced out of the planner's reach, the plan still reads no table whole,
which it would only do if no index fitted the statement. (On a table of a few pages
PostgreSQL may rightly prefer to read it whole; README, "Retention", has the plans at a
million deliveries.)
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.ids import new_id
from hangar.retention import batches
from tests.fixtures.retention import CUTOFF, NOW, OLD

IDS = [new_id(), new_id(), new_id()]
SESSIONS = batches.sessions(NOW, 1000)
INVITATIONS = batches.invitations(NOW, 1000)

# (what, the statement, the indexes its plan must name)
STATEMENTS: list[tuple[str, Any, set[str]]] = [
    (
        "the oldest finished deliveries",
        batches.finished_deliveries(CUTOFF, None, 500),
        {"ix_webhook_deliveries_finished"},
    ),
    (
        "the next batch of them",
        batches.finished_deliveries(CUTOFF, OLD, 500),
        {"ix_webhook_deliveries_finished"},
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
        "the next batch of them",
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


async def plan(engine: AsyncEngine, stmt: Any) -> list[str]:
    async with engine.connect() as conn:
        sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        if conn.dialect.name == "sqlite":
            return [row.detail for row in await conn.execute(text("EXPLAIN QUERY PLAN " + sql))]
        await conn.execute(text("SET LOCAL enable_seqscan = off"))
        lines = [row[0] for row in await conn.execute(text("EXPLAIN " + sql))]
        await conn.rollback()
        return lines


@pytest.mark.parametrize(("what", "stmt", "indexes"), STATEMENTS, ids=[s[0] for s in STATEMENTS])
async def test_each_statement_reads_through_an_index(
    engine: AsyncEngine, what: str, stmt: Any, indexes: set[str]
) -> None:
    lines = await plan(engine, stmt)
    shown = "\n".join(lines)
    for index in indexes:
        assert index in shown, f"{what}:\n{shown}"
    assert not [line for line in lines if "Seq Scan" in line], f"{what}:\n{shown}"
    # SQLite: "SCAN t" reads a table whole; "SCAN t USING ... INDEX" an index in order.
    assert not [line for line in lines if line.startswith("SCAN") and "INDEX" not in line], (
        f"{what}:\n{shown}"
    )
