"""What each migration since a release costs at scale: its time, and how long it held up the
product's writes while it ran (issue 40: "No migration holds a lock that blocks product
actions for more than 1 s at 1M rows"; each CHANGELOG upgrade note gives these figures).

    .venv/bin/python -m bench.migrations                 # since 0014 (1.5.0), 1,000,000 events
    .venv/bin/python -m bench.migrations --since 0016 --events 100000

On a PostgreSQL database of its own (HANGAR_TEST_DATABASE_URL's server, or --pg): the schema
at head, `--events` events with two finished deliveries each and their attempts written
straight in (bench/history.py's rows), then migrated back down to `--since` and up again one
migration at a time. While each runs, a writer does what a product action does to those
tables every 20 ms (read the organization's subscriptions, insert an event and a delivery,
in one transaction) and the longest it waited is that migration's stall. Prints a Markdown
table for the CHANGELOG.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
from alembic.script import ScriptDirectory
from scripts.scratch import scratch_database

from bench import history, webhooks
from bench.setup import SECRET
from hangar.db.migrate import alembic_config, code_revisions, upgrade
from hangar.foundation.config import Settings
from hangar.foundation.ids import new_id
from hangar.wiring.container import build_services

PROBE_EVERY_S = 0.02
_DEFAULT_PG = "postgresql://root@127.0.0.1:5432/test"


@dataclass(frozen=True)
class Measured:
    revision: str
    doc: str
    seconds: float
    longest_stall_s: float
    probes: int


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def revisions_after(since: str) -> list[tuple[str, str]]:
    """(revision, first line of its docstring) of each migration after `since`, in order."""
    scripts = ScriptDirectory.from_config(alembic_config())
    (head,) = code_revisions().heads
    found = []
    for script in scripts.iterate_revisions(head, since):
        if script.revision != since:
            found.append((script.revision, (script.doc or "").splitlines()[0]))
    return list(reversed(found))


async def seed(url: str, events: int) -> tuple[uuid.UUID, list[uuid.UUID]]:
    services = build_services(Settings(database_url=url, secret_key=SECRET))
    try:
        org_id = await webhooks.new_org(services.engine, "Bench Migrations")
        urls = [f"https://{webhooks.HOST}/history/{i}" for i in range(history.SUBSCRIPTIONS)]
        subs = [sub for sub, _ in await webhooks.subscribe(services, org_id, urls)]
    finally:
        await services.close()
    await history.write_history(url, org_id, subs, events * history.SUBSCRIPTIONS, log)
    return org_id, subs


async def probe(url: str, org_id: uuid.UUID, sub_id: uuid.UUID, stop: asyncio.Event) -> list[float]:
    """The seconds each product-like write took, every PROBE_EVERY_S, until `stop`."""
    conn = await asyncpg.connect(url)
    took: list[float] = []
    try:
        while not stop.is_set():
            began = time.monotonic()
            async with conn.transaction():
                await conn.fetch("SELECT id FROM webhook_subscriptions WHERE org_id = $1", org_id)
                event_id, now = new_id(), datetime.now(UTC)
                await conn.execute(
                    "INSERT INTO events (id, org_id, name, data, created_at)"
                    " VALUES ($1, $2, 'squawk.created', '{}', $3)",
                    event_id,
                    org_id,
                    now,
                )
                await conn.execute(
                    "INSERT INTO webhook_deliveries (id, org_id, subscription_id, event_id,"
                    " event_name, status, attempts_made, next_attempt_at, created_at,"
                    " series_from) VALUES ($1, $2, $3, $4, 'squawk.created', 'succeeded', 1,"
                    " $5, $5, 0)",
                    new_id(),
                    org_id,
                    sub_id,
                    event_id,
                    now,
                )
            took.append(time.monotonic() - began)
            await asyncio.sleep(PROBE_EVERY_S)
    finally:
        await conn.close()
    return took


async def measure(url: str, since: str, events: int) -> list[Measured]:
    await asyncio.to_thread(upgrade, url, "head")
    log(f"seeding {events:,} events, {events * history.SUBSCRIPTIONS:,} deliveries at head")
    org_id, subs = await seed(url, events)
    log(f"down to {since}")
    from alembic import command

    await asyncio.to_thread(command.downgrade, alembic_config(url), since)
    measured = []
    for revision, doc in revisions_after(since):
        stop = asyncio.Event()
        writer = asyncio.create_task(probe(url, org_id, subs[0], stop))
        await asyncio.sleep(0.5)  # the writer at its pace first
        began = time.monotonic()
        await asyncio.to_thread(upgrade, url, revision)
        seconds = time.monotonic() - began
        await asyncio.sleep(0.2)
        stop.set()
        took = await writer
        measured.append(Measured(revision, doc, seconds, max(took), len(took)))
        log(f"  {revision}: {seconds:.2f} s, longest write {max(took) * 1000:.0f} ms")
    return measured


async def main_async(server: str, since: str, events: int) -> list[Measured]:
    async with scratch_database(server, "hangar_bench_migrations") as url:
        return await measure(url, since, events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", default="0014", help="the last release's head revision")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--pg", default=os.environ.get("HANGAR_TEST_DATABASE_URL", _DEFAULT_PG))
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        found = asyncio.run(main_async(args.pg, args.since, args.events))
        print(f"At {args.events:,} events ({args.events * 2:,} deliveries), PostgreSQL:\n")
        print("| migration | what | time | longest product write meanwhile |")
        print("|---|---|---|---|")
        for row in found:
            stall = f"{row.longest_stall_s * 1000:.0f} ms ({row.probes} writes)"
            print(f"| {row.revision} | {row.doc} | {row.seconds:.2f} s | {stall} |")


if __name__ == "__main__":
    main()
