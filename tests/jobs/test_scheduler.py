"""The per-minute scheduler: every worker runs it, and each job runs once per minute in the
cluster (a (job, minute) row in job_ticks is the claim).

Two "workers" are two schedulers, each with its own engine (its own connection pool), as on
two machines. Time comes from the injected clock; nothing here sleeps.

The database is shared by the whole run, and other tests run the real scheduler at the
FakeClock's start minute: jobs written here have names of their own, and the test of the real
MEL-expiry job uses a minute no other test uses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.fleet.models import Aircraft, MelItem
from hangar.foundation.ids import new_id
from hangar.jobs import scheduler
from hangar.jobs.models import JobTick
from hangar.jobs.scheduler import Done, JobRun
from hangar.kit.container import Services
from hangar.webhooks.events import outbox
from hangar.wiring.worker import JOBS
from tests.fixtures.factories import T0, Org
from tests.fixtures.fakes import FakeClock

# Minutes of this module's own, far from the FakeClock's start (2026-05-04 10:00:30).
MINUTE = datetime(2026, 5, 4, 13, 7, 0, tzinfo=UTC)


@pytest.fixture
async def second_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """Another worker's engine: a pool of its own on the same database."""
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
def second(services: Services, second_engine: AsyncEngine) -> Services:
    """The other worker's services: its own engine, the same settings and clock."""
    return dataclasses.replace(services, engine=second_engine)


class Counting:
    """A job that records each run: (the minute it was run for, the engine it got)."""

    def __init__(self) -> None:
        self.runs: list[tuple[datetime, AsyncEngine]] = []
        self.ran = asyncio.Event()

    async def __call__(self, run: JobRun) -> Done:
        self.runs.append((scheduler.minute_of(run.now), run.services.engine))
        self.ran.set()
        await asyncio.sleep(0)  # let the other worker interleave here
        return {"ran": 1}


def job_name() -> str:
    return f"test-job-{uuid.uuid4().hex[:12]}"


async def ticks(engine: AsyncEngine, name: str) -> list[datetime]:
    async with engine.connect() as conn:
        rows = await conn.scalars(
            select(JobTick.tick).where(JobTick.job == name).order_by(JobTick.tick)
        )
        return [t.astimezone(UTC) for t in rows]


async def test_two_workers_run_a_minute_once_and_the_next_minute_again(
    engine: AsyncEngine, services: Services, second: Services
) -> None:
    name, job = job_name(), Counting()
    jobs = {name: job}
    now = MINUTE + timedelta(seconds=12)

    ran = await asyncio.gather(
        scheduler.run_tick(services, now, jobs), scheduler.run_tick(second, now, jobs)
    )

    assert sorted(ran) == [[], [name]]
    assert [minute for minute, _ in job.runs] == [MINUTE]
    # Later in the same minute, either worker: nothing.
    for later, which in ((now + timedelta(seconds=40), services), (MINUTE, second)):
        assert await scheduler.run_tick(which, later, jobs) == []
    assert len(job.runs) == 1

    # The next minute, both try again and one of them runs it.
    next_minute = MINUTE + timedelta(minutes=1)
    ran = await asyncio.gather(
        scheduler.run_tick(second, next_minute, jobs),
        scheduler.run_tick(services, next_minute + timedelta(seconds=59.999), jobs),
    )
    assert sorted(ran) == [[], [name]]
    assert [minute for minute, _ in job.runs] == [MINUTE, next_minute]
    assert await ticks(engine, name) == [MINUTE, next_minute]


async def test_many_workers_racing_for_one_minute_run_it_once(
    engine: AsyncEngine, second_engine: AsyncEngine, services: Services
) -> None:
    name, job = job_name(), Counting()
    now = MINUTE + timedelta(minutes=10, seconds=1)
    claims = await asyncio.gather(
        *(
            scheduler.claim_tick(e, name, scheduler.minute_of(now), now)
            for e in [engine, second_engine] * 4
        )
    )
    assert claims.count(True) == 1
    # The claim is the row; a run for that minute finds it taken.
    assert await scheduler.run_tick(services, now, {name: job}) == []
    assert job.runs == []


async def test_each_job_has_its_own_claim(services: Services, second: Services) -> None:
    one, another = job_name(), job_name()
    a, b = Counting(), Counting()
    now = MINUTE + timedelta(minutes=20)
    assert await scheduler.run_tick(services, now, {one: a}) == [one]
    # Another job is not held back by the first one's claim for the minute.
    assert await scheduler.run_tick(second, now, {one: a, another: b}) == [another]
    assert (len(a.runs), len(b.runs)) == (1, 1)


async def test_a_failing_job_is_not_retried_within_its_minute_but_runs_the_next(
    services: Services, second: Services
) -> None:
    name = job_name()
    calls: list[datetime] = []

    async def broken(run: JobRun) -> Done:
        calls.append(run.now)
        raise RuntimeError("boom")

    now = MINUTE + timedelta(minutes=30)
    assert await scheduler.run_tick(services, now, {name: broken}) == [name]
    assert await scheduler.run_tick(second, now, {name: broken}) == []
    assert await scheduler.run_tick(services, now + timedelta(minutes=1), {name: broken}) == [name]
    assert len(calls) == 2


async def test_ticks_older_than_a_day_are_pruned(engine: AsyncEngine, services: Services) -> None:
    name, job = job_name(), Counting()
    first = MINUTE + timedelta(minutes=40)
    assert await scheduler.run_tick(services, first, {name: job}) == [name]
    assert await scheduler.run_tick(services, first + timedelta(hours=23), {name: job}) == [name]
    assert await ticks(engine, name) == [first, first + timedelta(hours=23)]
    assert await scheduler.run_tick(services, first + timedelta(days=1, minutes=1), {name: job})
    assert await ticks(engine, name) == [
        first + timedelta(hours=23),
        first + timedelta(days=1, minutes=1),
    ]


async def test_two_scheduler_loops_started_together_run_the_minute_once(
    engine: AsyncEngine,
    second_engine: AsyncEngine,
    services: Services,
    second: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """run_every_minute, as each worker runs it: the first tick happens at start."""
    name, job = job_name(), Counting()
    clock = FakeClock(MINUTE + timedelta(minutes=50, seconds=5))
    claims: list[tuple[AsyncEngine, bool]] = []
    real_claim = scheduler.claim_tick

    async def claim(e: AsyncEngine, job_: str, tick: datetime, now: datetime) -> bool:
        won = await real_claim(e, job_, tick, now)
        claims.append((e, won))
        return won

    monkeypatch.setattr(scheduler, "claim_tick", claim)

    async def two_workers() -> None:
        stop = asyncio.Event()
        loops = [
            asyncio.create_task(
                scheduler.run_every_minute(dataclasses.replace(s, clock=clock), stop, {name: job})
            )
            for s in (services, second)
        ]
        try:
            # One of them has run the job. The other started its tick before that (the
            # winner awaited the database first), and a started tick runs to its end even
            # once `stop` is set: so when both loops are done, both have tried the minute.
            await asyncio.wait_for(job.ran.wait(), 10)
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*loops), 10)

    await two_workers()
    assert {e for e, _ in claims} == {engine, second_engine}  # both workers tried
    assert sorted(won for _, won in claims) == [False, True]
    assert [minute for minute, _ in job.runs] == [MINUTE + timedelta(minutes=50)]
    assert await ticks(engine, name) == [MINUTE + timedelta(minutes=50)]

    job.ran.clear()
    claims.clear()
    clock.advance(minutes=1)
    await two_workers()
    assert sorted(won for _, won in claims) == [False, True]
    assert [minute for minute, _ in job.runs] == [
        MINUTE + timedelta(minutes=50),
        MINUTE + timedelta(minutes=51),
    ]


async def test_the_mel_expiry_job_fires_its_events_once_through_the_scheduler(
    engine: AsyncEngine,
    services: Services,
    second: Services,
    org: Org,
    other: Org,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert list(JOBS) == ["mel-expiry", "webhook-alerts", "retention"]
    now = datetime(2026, 5, 4, 14, 21, 9, tzinfo=UTC)  # this test's own minute
    planes = {}
    items = {}
    for owner in (org, other):
        plane = await owner.add(Aircraft, is_active=True)
        planes[owner.id] = plane["id"]
        items[owner.id] = new_id()
        async with engine.begin() as conn:
            await conn.execute(
                insert(MelItem).values(
                    id=items[owner.id],
                    org_id=owner.id,
                    aircraft_id=plane["id"],
                    item_description="Nav light inoperative",
                    mel_category="b",
                    status="deferred",
                    deferral_date=date(2026, 4, 20),
                    due_date=date(2026, 5, 3),  # the day before `now`
                    created_at=T0,
                )
            )
    fired: list[tuple[uuid.UUID, str, str | None]] = []
    real_record = outbox.record

    async def spy(conn: Any, org_id: uuid.UUID, names: Any, data: Any, at: Any) -> Any:
        for event in names:
            fired.append((org_id, event, data.get("id")))
        return await real_record(conn, org_id, names, data, at)

    monkeypatch.setattr(outbox, "record", spy)

    ran = await asyncio.gather(
        scheduler.run_tick(services, now, JOBS), scheduler.run_tick(second, now, JOBS)
    )

    # Each job once, by whichever worker claimed it first (not always the same one).
    assert sorted(job for by_one in ran for job in by_one) == sorted(JOBS)
    ours = [(event, ident) for org_id, event, ident in fired if org_id == org.id]
    assert ours == [
        ("mel.expired", str(items[org.id])),
        ("aircraft.grounded", str(planes[org.id])),
    ]
    theirs = [(event, ident) for org_id, event, ident in fired if org_id == other.id]
    assert theirs == [
        ("mel.expired", str(items[other.id])),
        ("aircraft.grounded", str(planes[other.id])),
    ]
    async with engine.connect() as conn:
        status = await conn.scalar(select(MelItem.status).where(MelItem.id == items[org.id]))
        active = await conn.scalar(select(Aircraft.is_active).where(Aircraft.id == planes[org.id]))
    assert (status, active) == ("expired", False)

    # Same minute again: not run. Next minute: run, but nothing is left to expire.
    assert await scheduler.run_tick(second, now + timedelta(seconds=30), JOBS) == []
    assert await scheduler.run_tick(services, now + timedelta(minutes=1), JOBS) == list(JOBS)
    assert [e for org_id, e, _ in fired if org_id == org.id] == [
        "mel.expired",
        "aircraft.grounded",
    ]
