"""`hangar seed` and `hangar demo`: the seed feature's data, through the command line."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as RichProgress
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.cli.common import (
    HostOption,
    OrgOption,
    PortOption,
    emit,
    migrated_settings,
    parse_org,
    run_in_transaction,
)
from hangar.cli.serve import run_server
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import Settings
from hangar.kit.errors import ApiError
from hangar.seed.demo import DemoAccess, curl_base, instructions, prepare_demo
from hangar.seed.seeding import Sizes, seed_org

DEFAULT = Sizes()


class Bars:
    """One progress bar per table, on stderr, so stdout keeps only the JSON result."""

    def __init__(self, progress: RichProgress) -> None:
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}

    def start(self, what: str, total: int) -> None:
        if total:
            label = what.replace("_", " ")
            self._tasks[what] = self._progress.add_task(f"{label:<17}", total=total)

    def advance(self, what: str, rows: int) -> None:
        self._progress.advance(self._tasks[what], rows)


@contextmanager
def bars() -> Iterator[Bars]:
    progress = RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    with progress:
        yield Bars(progress)


def _one_line(exc: DBAPIError) -> ApiError:
    """A database refusal as the one-line reason the command prints. An ApiError, which
    run_in_transaction turns into that line after rolling back; its status and code reach
    nobody, and no named error fits a refusal by the database."""
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return ApiError(500, "DATABASE_ERROR", f"the database refused the rows: {reason}")


# How many rows of one kind `hangar seed` adds (option names follow the parameter names).
Count = Annotated[int, typer.Option(min=0, metavar="COUNT", help="How many to add")]


def seed(
    org: OrgOption,
    aircraft: Count = DEFAULT.aircraft,
    members: Count = DEFAULT.members,
    reservations: Count = DEFAULT.reservations,
    squawks: Count = DEFAULT.squawks,
    maintenance_logs: Count = DEFAULT.maintenance_logs,
    work_orders: Count = DEFAULT.work_orders,
) -> None:
    """Add realistic aircraft, members, reservations, squawks and maintenance records to an
    organization, all in one transaction."""
    org_id = parse_org(org)
    sizes = Sizes(aircraft, members, reservations, squawks, maintenance_logs, work_orders)
    current = migrated_settings()
    with bars() as progress:

        async def work(conn: AsyncConnection) -> dict[str, int]:
            try:
                return await seed_org(
                    conn, org_id, sizes, now=SystemClock().now(), progress=progress
                )
            except DBAPIError as exc:
                raise _one_line(exc) from exc

        counts = run_in_transaction(current, work)
    emit({"org": str(org_id), **counts})


def set_up_demo(host: str, port: int) -> tuple[Settings, DemoAccess]:
    """Everything `hangar demo` does before it serves: migrate, create or reuse the demo
    organization, and print how to sign in and call the API."""
    current = migrated_settings()
    if not os.environ.get("HANGAR_PUBLIC_URL"):
        # Links in the screens (feed URLs, docs) should point where this demo listens.
        current = dataclasses.replace(current, public_url=curl_base(host, port))
    with bars() as progress:

        async def work(conn: AsyncConnection) -> DemoAccess:
            return await prepare_demo(conn, SystemClock().now(), progress=progress)

        access = run_in_transaction(current, work)
    typer.echo(instructions(access, current.public_url, host, port))
    return current, access


def demo(
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Create (once) a demo organization with data, an admin login and a key; print them;
    then serve, as `hangar serve` does."""
    current, _ = set_up_demo(host, port)
    run_server(current, host, port)
