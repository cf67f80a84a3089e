"""What every command shares: settings from the environment, the migrated database, one
transaction per command, JSON on stdout, and one-line failures on stderr (a JSON object when
HANGAR_LOG_FORMAT is json, as every other line on stderr then is)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, NoReturn, TypeVar

import orjson
import typer
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import ConfigError, LogFormat, Settings, load_settings, log_format
from hangar.http.access_log import redact
from hangar.kit.errors import ApiError
from hangar.logs.formats import failure
from hangar.orgs.capabilities import ROLE_NAMES
from hangar.wiring.secret_key import WrongSecretKey, check_secret_key

T = TypeVar("T")


def command_group(help: str) -> typer.Typer:
    """A `hangar` command group. Help is click's plain layout (no rich boxes): paragraphs are
    re-flowed to the terminal and option values read TEXT or INTEGER, not `<list[str]>`."""
    return typer.Typer(no_args_is_help=True, help=help, rich_markup_mode=None)


# --org, as every command that acts in one organization takes it (see `parse_org`).
OrgOption = Annotated[str, typer.Option(metavar="ORG_ID", help="Organization id")]
# Where `serve` and `demo` listen.
HostOption = Annotated[str, typer.Option(metavar="ADDRESS", help="Address to listen on")]
PortOption = Annotated[int, typer.Option(metavar="PORT", help="Port to listen on")]


def fail(reason: str) -> NoReturn:
    typer.echo(failure(reason, _log_format()), err=True)
    raise typer.Exit(1)


def _log_format() -> LogFormat:
    # A malformed HANGAR_LOG_FORMAT is itself the failure to report: in text.
    try:
        return log_format(os.environ)
    except ConfigError:
        return "text"


def emit(obj: Mapping[str, object]) -> None:
    typer.echo(orjson.dumps(obj, default=str, option=orjson.OPT_UTC_Z).decode())


def settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        fail(str(exc))


# What PgBouncer answers a connection that sets a parameter at start (hangar sets its
# statement timeout so), in session and transaction pooling alike.
_POOLER_REFUSAL = "unsupported startup parameter"


def unreachable(what: str, exc: Exception) -> str:
    """The one line that says why the database could not be used: the driver's first line
    (its message may quote the URL, password and all: redacted), or, behind PgBouncer, that
    hangar needs PostgreSQL itself."""
    text = redact(str(exc))
    if _POOLER_REFUSAL in text:
        return (
            f"{what}: HANGAR_DATABASE_URL leads to a connection pooler (PgBouncer) that refuses "
            "hangar's connection settings. hangar needs PostgreSQL itself: it LISTENs for new "
            "deliveries, holds session locks and sets a statement timeout on each connection, "
            'which no transaction pool keeps; point it at the server (README, "PgBouncer")'
        )
    error = f"{exc.__class__.__name__}: {text}".splitlines()[0]
    return (
        f"{what} ({error}); check that it is up and reachable and that HANGAR_DATABASE_URL names it"
    )


def migrated_settings() -> Settings:
    """Settings for a database at the newest schema (migrating is idempotent and quick),
    whose secrets this process's HANGAR_SECRET_KEY opens (hangar.wiring.secret_key)."""
    current = settings()
    try:
        upgrade(current.database_url)
    except Exception as exc:
        fail(unreachable("cannot migrate the database", exc))
    try:
        asyncio.run(_checked_key(current))
    except WrongSecretKey as exc:
        fail(str(exc))
    except Exception as exc:  # gone since the migration, or a pooler that refuses hangar
        fail(unreachable("cannot check the secret key against the database", exc))
    return current


async def _checked_key(current: Settings) -> None:
    engine = make_engine(current.database_url, pool_size=1)
    try:
        async with engine.begin() as conn:
            await check_secret_key(conn, current, SystemClock().now())
    finally:
        await engine.dispose()


def run_in_transaction(current: Settings, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """Runs `work(conn)` in one transaction; an ApiError becomes a one-line failure."""

    async def main() -> T:
        # No statement deadline: an operator's command (a bulk seed's COPY) may rightly run
        # for minutes, and Ctrl+C stops it.
        engine = make_engine(current.database_url, pool_size=1, statement_timeout_s=None)
        try:
            async with engine.begin() as conn:
                return await work(conn)
        finally:
            await engine.dispose()

    try:
        return asyncio.run(main())
    except ApiError as exc:
        fail(exc.detail)


def parse_org(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        fail(f"--org must be an organization id (as printed by `hangar org create`), not {text!r}")


def check_role(role: str) -> None:
    if role not in ROLE_NAMES:
        fail(f"--role must be one of {', '.join(ROLE_NAMES)}, not {role!r}")
