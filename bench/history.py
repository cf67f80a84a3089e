"""A delivery history for G14: millions of finished deliveries with their attempts, written
straight into a PostgreSQL database of its own by INSERT ... SELECT (the dispatcher would
take days to make them), once, and reused by later runs.

The rows are shaped as hangar writes them: UUIDv7 ids in time order, one event per action
for two subscriptions, deliveries finished (96% succeeded with one attempt, 4% failed after
three), attempts with the request and response headers the delivery log keeps. Spread over
the 29 days before now, so retention keeps them all; `add_prunable` adds rows older than the
window for G14b.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import asyncpg

SUBSCRIPTIONS = 2  # of the history's organization: one event, two deliveries
CHUNK = 200_000  # deliveries per INSERT statement

# A time-ordered UUID (version 7) for a timestamp, as hangar.foundation.ids.new_id makes them.
_V7 = """
CREATE OR REPLACE FUNCTION pg_temp.v7(ts timestamptz) RETURNS uuid LANGUAGE sql AS $$
  SELECT (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
          || substr(md5(random()::text), 1, 3) || to_hex(8 + (random() * 3)::int)
          || substr(md5(random()::text), 1, 15))::uuid
$$
"""

# $1 org, $2 first subscription, $3 second, $4 the first event's time, $5 ms between events,
# $6 first event number, $7 last event number (inclusive).
_CHUNK_SQL = """
WITH e AS (
  INSERT INTO events (id, org_id, name, data, created_at)
  SELECT pg_temp.v7(ts), $1, 'squawk.created',
         '{"id":"' || gen_random_uuid() || '","aircraft_id":"' || gen_random_uuid()
           || '","description":"Left brake soft; pedal travels to the floor after two pumps",'
           || '"severity":"major","is_grounding":false,"reported_by":"' || gen_random_uuid()
           || '","created_at":"' || to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '"}',
         ts
  FROM (SELECT $4::timestamptz + (g * $5::float8) * interval '1 millisecond' AS ts
        FROM generate_series($6::bigint, $7::bigint) g) t
  RETURNING id, created_at
), d AS (
  INSERT INTO webhook_deliveries (id, org_id, subscription_id, event_id, event_name, status,
                                  attempts_made, next_attempt_at, lease_until, created_at,
                                  completed_at, series_from)
  SELECT pg_temp.v7(e.created_at), $1, s.id, e.id, 'squawk.created', f.status,
         CASE f.status WHEN 'failed' THEN 3 ELSE 1 END, e.created_at, NULL, e.created_at,
         e.created_at + CASE f.status WHEN 'failed' THEN interval '10.3 seconds'
                                      ELSE interval '80 milliseconds' END, 0
  FROM e CROSS JOIN (VALUES ($2::uuid), ($3::uuid)) s(id)
  CROSS JOIN LATERAL (SELECT CASE WHEN random() < 0.04 THEN 'failed' ELSE 'succeeded' END
                      AS status) f
  RETURNING id, status, created_at
)
INSERT INTO webhook_attempts (id, delivery_id, number, started_at, duration_ms, status_code,
                              error, response_body, outcome, outcome_detail, request_headers,
                              response_reason, response_headers)
SELECT pg_temp.v7(d.created_at), d.id, n, d.created_at + (n - 1) * interval '5 seconds',
       40 + (random() * 200)::int,
       CASE d.status WHEN 'failed' THEN 500 ELSE 200 END, NULL,
       CASE d.status WHEN 'failed' THEN '{"error":"temporarily unavailable"}'
                     ELSE '{"received":true}' END,
       CASE d.status WHEN 'failed' THEN 'http_error' ELSE 'succeeded' END, NULL,
       json_build_array(
         json_build_array('Content-Type', 'application/json'),
         json_build_array('X-Service-Event', 'squawk.created'),
         json_build_array('X-Service-Signature', 'sha256=' || md5(random()::text)
                                                  || md5(random()::text)),
         json_build_array('User-Agent', 'Service-Webhooks/1.0'),
         json_build_array('X-Service-Delivery', d.id::text)),
       CASE d.status WHEN 'failed' THEN 'Internal Server Error' ELSE 'OK' END,
       json_build_array(
         json_build_array('Content-Type', 'application/json'),
         json_build_array('Content-Length', '18'),
         json_build_array('Date', to_char(d.created_at, 'Dy, DD Mon YYYY HH24:MI:SS "GMT"')),
         json_build_array('Server', 'nginx'))
FROM d CROSS JOIN LATERAL generate_series(1, CASE d.status WHEN 'failed' THEN 3 ELSE 1 END) n
"""

MARK = "hangar bench history: {} deliveries"


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def history_size(url: str) -> int:
    """How many deliveries the history of this database holds (0: not made yet)."""
    conn = await asyncpg.connect(_plain(url))
    try:
        found = await conn.fetchval(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database"
            " WHERE datname = current_database()"
        )
    finally:
        await conn.close()
    prefix = MARK.split("{}")[0]
    if not found or not found.startswith(prefix):
        return 0
    return int(found.removeprefix(prefix).split()[0])


async def write_history(
    url: str, org_id: uuid.UUID, subs: list[uuid.UUID], deliveries: int, log: Callable[[str], None]
) -> float:
    """`deliveries` finished deliveries over the 29 days before now, with their events and
    attempts; returns the seconds it took. Marked on the database, so it is made once."""
    events = deliveries // SUBSCRIPTIONS
    start = datetime.now(UTC) - timedelta(days=29)
    step_ms = timedelta(days=28).total_seconds() * 1000 / events
    began = time.monotonic()
    conn = await asyncpg.connect(_plain(url))
    try:
        await conn.execute(_V7)
        per_chunk = CHUNK // SUBSCRIPTIONS
        for first in range(0, events, per_chunk):
            last = min(first + per_chunk, events) - 1
            await conn.execute(_CHUNK_SQL, org_id, subs[0], subs[1], start, step_ms, first, last)
            done = (last + 1) * SUBSCRIPTIONS
            seconds = time.monotonic() - began
            log(f"  history: {done:,} of {deliveries:,} deliveries ({seconds:.0f} s)")
        await conn.execute("ANALYZE")
        name = await conn.fetchval("SELECT current_database()")
        await conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{MARK.format(deliveries)}'")
    finally:
        await conn.close()
    return time.monotonic() - began


async def history_subscriptions(url: str) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """The history's organization and its subscriptions (made by `write_history`'s caller)."""
    conn = await asyncpg.connect(_plain(url))
    try:
        rows = await conn.fetch(
            "SELECT org_id, id FROM webhook_subscriptions WHERE url LIKE '%/history/%' ORDER BY url"
        )
    finally:
        await conn.close()
    return rows[0]["org_id"], [row["id"] for row in rows]


async def add_prunable(
    url: str, org_id: uuid.UUID, subs: list[uuid.UUID], deliveries: int, days_old: int
) -> None:
    """`deliveries` more finished deliveries, all older than `days_old` days: what the
    retention job will prune (G14b)."""
    events = deliveries // SUBSCRIPTIONS
    start = datetime.now(UTC) - timedelta(days=days_old + 2)
    step_ms = timedelta(days=1).total_seconds() * 1000 / events
    conn = await asyncpg.connect(_plain(url))
    try:
        await conn.execute(_V7)
        per_chunk = CHUNK // SUBSCRIPTIONS
        for first in range(0, events, per_chunk):
            last = min(first + per_chunk, events) - 1
            await conn.execute(_CHUNK_SQL, org_id, subs[0], subs[1], start, step_ms, first, last)
        await conn.execute("ANALYZE")
    finally:
        await conn.close()
