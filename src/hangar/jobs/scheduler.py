"""Jobs that run each minute in every worker, and exactly once per minute in the cluster.

A tick is claimed by inserting (job, minute) into job_ticks: the primary key lets one
worker win and the others skip, on SQLite and PostgreSQL alike. Which jobs exist is not
this module's business: the worker process (hangar.process.JOBS) passes them in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta

from sqlalchemy import delete, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.clock import Clock
from hangar.jobs.models import JobTick
from hangar.metrics import DATABASE_ERRORS, JOB_RUNS, SCHEDULER_TICKS

log = logging.getLogger("hangar.scheduler")

Job = Callable[[AsyncEngine, datetime], Awaitable[int]]
KEEP_TICKS = timedelta(days=1)


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


async def claim_tick(engine: AsyncEngine, job: str, tick: datetime, now: datetime) -> bool:
    try:
        async with engine.begin() as conn:
            await conn.execute(insert(JobTick).values(job=job, tick=tick, ran_at=now))
            await conn.execute(delete(JobTick).where(JobTick.tick < tick - KEEP_TICKS))
    except IntegrityError:
        return False  # another worker has this minute
    return True


async def run_tick(engine: AsyncEngine, now: datetime, jobs: Mapping[str, Job]) -> list[str]:
    """Runs every job whose tick for this minute nobody has claimed; returns those it ran."""
    SCHEDULER_TICKS.inc()
    ran = []
    for name, job in jobs.items():
        if not await claim_tick(engine, name, minute_of(now), now):
            JOB_RUNS.labels(name, "skipped").inc()
            continue
        try:
            done = await job(engine, now)
            log.info("job %s: %s", name, done)
            JOB_RUNS.labels(name, "ok").inc()
        except Exception:
            log.exception("job %s failed; it runs again next minute", name)
            JOB_RUNS.labels(name, "failed").inc()
        ran.append(name)
    return ran


async def run_every_minute(
    engine: AsyncEngine, clock: Clock, stop: asyncio.Event, jobs: Mapping[str, Job]
) -> None:
    while not stop.is_set():
        try:
            await run_tick(engine, clock.now(), jobs)
        except Exception:
            # Jobs' own failures are caught in run_tick: what fails here is claiming a tick.
            DATABASE_ERRORS.labels("scheduler").inc()
            log.exception("scheduler tick failed")
        now = clock.now()
        next_minute = minute_of(now) + timedelta(minutes=1)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), (next_minute - now).total_seconds())
