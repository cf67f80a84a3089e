"""`hangar jobs`: the scheduled jobs, run once by hand."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from hangar.cli.common import command_group, emit, fail, migrated_settings
from hangar.db.engine import make_engine
from hangar.jobs.scheduler import Done, JobRun
from hangar.wiring.container import build_services
from hangar.wiring.worker import JOBS

jobs_app = command_group("Scheduled jobs, run once by hand.")


@jobs_app.command("run")
def jobs_run(
    job: Annotated[str, typer.Argument(metavar="JOB", help=f"One of {', '.join(JOBS)}")],
) -> None:
    """Run a scheduled job once, now, as a tick of the scheduler runs it; print what it did."""
    if job not in JOBS:
        fail(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    current = migrated_settings()

    async def main() -> Done:
        # One connection is all a job uses at a time.
        services = build_services(current, engine=make_engine(current.database_url, pool_size=1))
        try:
            return await JOBS[job](JobRun(services, services.clock.now()))
        finally:
            await services.close()

    emit(asyncio.run(main()))
