"""Jobs that run each minute in every worker, and exactly once per minute in the cluster.

A tick is claimed by inserting (job, minute) into job_ticks: the primary key lets one
worker win and the others skip, on SQLite and PostgreSQL alike. Which jobs exist is not
this module's business: the worker process (hangar.wiring.worker.JOBS) passes them in.

A job is given the process's services, the tick's time and the process's stop signal, and
answers what it did, counted by name (`{"expired": 2}`): the scheduler logs it when it is
not all zeros, and `hangar jobs run` prints it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import delete, insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.foundation.metrics import DATABASE_ERRORS, JOB_RUNS, SCHEDULER_TICKS
from hangar.jobs.models import JobTick
from hangar.kit.container import Services

log = logging.getLogger("hangar.scheduler")

KEEP_TICKS = timedelta(days=1)


@dataclass(frozen=True)
class JobRun:
    """What a job is given for one run."""

    services: Services
    now: datetime  # the tick's time, which the job's dates are reckoned from
    # Set when the process is asked to stop. A job that may run for long (retention) returns
    # at its next pause, so that a worker stops within its promised seconds.
    stopping: asyncio.Event = field(default_factory=asyncio.Event)


# What a job did, counted by name: {"expired": 2}, {"events": 500, "sessions": 3}.
Done = Mapping[str, int]
Job = Callable[[JobRun], Awaitable[Done]]


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


def described(done: Done, seconds: float) -> str:
    return ", ".join(f"{what} {count}" for what, count in done.items()) + f" in {seconds:.1f} s"


async def run_tick(
    services: Services,
    now: datetime,
    jobs: Mapping[str, Job],
    stopping: asyncio.Event | None = None,
) -> list[str]:
    """Runs every job whose tick for this minute nobody has claimed; returns those it ran."""
    SCHEDULER_TICKS.inc()
    run = JobRun(services, now, stopping or asyncio.Event())
    ran = []
    for name, job in jobs.items():
        if not await claim_tick(services.engine, name, minute_of(now), now):
            JOB_RUNS.labels(name, "skipped").inc()
            continue
        try:
            started = time.monotonic()
            done = await job(run)
            # One line for a run that did something; a quiet minute says nothing.
            if any(done.values()):
                log.info("job %s: %s", name, described(done, time.monotonic() - started))
            JOB_RUNS.labels(name, "ok").inc()
        except Exception:
            log.exception("job %s failed; it runs again next minute", name)
            JOB_RUNS.labels(name, "failed").inc()
        ran.append(name)
    return ran


async def run_every_minute(
    services: Services, stop: asyncio.Event, jobs: Mapping[str, Job]
) -> None:
    clock = services.clock
    while not stop.is_set():
        try:
            await run_tick(services, clock.now(), jobs, stop)
        except Exception:
            # Jobs' own failures are caught in run_tick: what fails here is claiming a tick.
            DATABASE_ERRORS.labels("scheduler").inc()
            log.exception("scheduler tick failed")
        now = clock.now()
        next_minute = minute_of(now) + timedelta(minutes=1)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), (next_minute - now).total_seconds())
