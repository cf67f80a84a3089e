"""`hangar jobs`: the scheduled jobs, run once by hand."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from hangar.cli.common import command_group, emit, fail, migrated_settings
from hangar.clock import SystemClock
from hangar.db.engine import make_engine
from hangar.process import JOBS

jobs_app = command_group("Scheduled jobs, run once by hand.")


@jobs_app.command("run")
def jobs_run(
    job: Annotated[str, typer.Argument(metavar="JOB", help=f"One of {', '.join(JOBS)}")],
) -> None:
    """Run a scheduled job once, now."""
    if job not in JOBS:
        fail(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    current = migrated_settings()

    async def main() -> int:
        engine = make_engine(current.database_url, pool_size=1)
        try:
            return await JOBS[job](engine, SystemClock().now())
        finally:
            await engine.dispose()

    emit({"expired": asyncio.run(main())})
