"""The `hangar` command (interfaces.md §1).

Commands that create something print one JSON object on stdout and exit 0; on error they
print a one-line reason on stderr and exit non-zero. Progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NoReturn, TypeVar

import orjson
import typer

from hangar.auth.commands import issue_key
from hangar.clock import SystemClock
from hangar.config import ConfigError, Settings, load_settings
from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade
from hangar.http_limits import ServerLimits
from hangar.kit.errors import ApiError
from hangar.orgs import invitations
from hangar.orgs.bootstrap import bootstrap_member
from hangar.orgs.commands import create_org, org_exists
from hangar.orgs.members import invite_member
from hangar.orgs.models import ROLE_NAMES

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
org_app = typer.Typer(no_args_is_help=True, help="Organizations.")
user_app = typer.Typer(no_args_is_help=True, help="Accounts, for the operator's bootstrap.")
member_app = typer.Typer(no_args_is_help=True, help="Memberships: inviting people.")
key_app = typer.Typer(no_args_is_help=True, help="API keys.")
jobs_app = typer.Typer(no_args_is_help=True, help="Scheduled jobs, run once by hand.")
app.add_typer(db_app, name="db")
app.add_typer(org_app, name="org")
app.add_typer(user_app, name="user")
app.add_typer(member_app, name="member")
app.add_typer(key_app, name="key")
app.add_typer(jobs_app, name="jobs")

T = TypeVar("T")


def fail(reason: str) -> NoReturn:
    typer.echo(f"hangar: {reason}", err=True)
    raise typer.Exit(1)


def emit(obj: dict[str, Any]) -> None:
    typer.echo(orjson.dumps(obj, default=str, option=orjson.OPT_UTC_Z).decode())


def settings() -> Settings:
    try:
        return load_settings()
    except ConfigError as exc:
        fail(str(exc))


def migrated_settings() -> Settings:
    """Settings for a database at the newest schema (migrating is idempotent and quick)."""
    current = settings()
    try:
        upgrade(current.database_url)
    except Exception as exc:
        fail(f"cannot migrate the database: {exc.__class__.__name__}: {exc}".splitlines()[0])
    return current


def run_in_transaction(current: Settings, work: Callable[[Any], Awaitable[T]]) -> T:
    """Runs `work(conn)` in one transaction; an ApiError becomes a one-line failure."""

    async def main() -> T:
        engine = make_engine(current.database_url, pool_size=1)
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


async def require_org(conn: Any, org_id: uuid.UUID) -> None:
    if not await org_exists(conn, org_id):
        raise ApiError(404, "NOT_FOUND", f"no organization with id {org_id}")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8000,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="Serve only; run no webhook dispatcher here")
    ] = False,
) -> None:
    """Migrate the database to head, then serve the API."""
    run_server(migrated_settings(), host, port, with_worker=not no_worker)


def run_server(
    current: Settings,
    host: str,
    port: int,
    *,
    with_worker: bool = True,
    limits: ServerLimits | None = None,
) -> None:
    """Serves until interrupted; `serve` and `demo` both end here. `limits`: the defaults of
    hangar.http_limits unless a test shortens the timeouts."""
    import uvicorn

    from hangar.access_log import log_config
    from hangar.app import create_app
    from hangar.serving import uvicorn_options

    uvicorn.run(
        create_app(settings=current, with_worker=with_worker),
        host=host,
        port=port,
        log_level="info",
        log_config=log_config(),
        **uvicorn_options(limits),
    )


@app.command()
def worker() -> None:
    """Run only the webhook dispatcher and the scheduler (any number, against PostgreSQL)."""
    import logging

    from hangar.services import build_services
    from hangar.webhooks.worker import Worker

    current = migrated_settings()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    async def main() -> None:
        services = build_services(current)
        try:
            await Worker(services).run_forever()
        finally:
            await services.close()

    asyncio.run(main())


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply all migrations."""
    current = migrated_settings()
    emit({"database": _redacted(current.database_url), "revision": "head"})


def _redacted(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        creds, _, host = rest.rpartition("@")
        rest = f"{creds.split(':')[0]}@{host}"
    return scheme + sep + rest


@org_app.command("create")
def org_create(name: Annotated[str, typer.Option(help="The organization's name")]) -> None:
    """Create an organization with its four built-in roles."""
    current = migrated_settings()

    async def work(conn: Any) -> uuid.UUID:
        return await create_org(conn, name, SystemClock().now())

    emit({"id": str(run_in_transaction(current, work)), "name": name.strip()})


def check_role(role: str) -> None:
    if role not in ROLE_NAMES:
        fail(f"--role must be one of {', '.join(ROLE_NAMES)}, not {role!r}")


@user_app.command("create")
def user_create(
    org: Annotated[str, typer.Option(help="Organization id")],
    email: Annotated[str, typer.Option()],
    role: Annotated[str, typer.Option(help=f"One of {', '.join(ROLE_NAMES)}")],
    password: Annotated[
        str | None,
        typer.Option(help="For a new account only: an existing account's password is its owner's"),
    ] = None,
    first_name: Annotated[str, typer.Option("--first-name")] = "",
    last_name: Annotated[str, typer.Option("--last-name")] = "",
    phone: Annotated[str | None, typer.Option("--phone")] = None,
) -> None:
    """Make someone an active member at once (the operator's bootstrap).

    A new email gets an account with --password. An email that already has an account gets
    the membership only, and never a new password: --password is refused for it.
    """
    org_id = parse_org(org)
    check_role(role)
    if password is not None and len(password) < 8:
        fail("--password must be at least 8 characters")
    current = migrated_settings()

    async def work(conn: Any) -> dict[str, Any]:
        await require_org(conn, org_id)
        made = await bootstrap_member(
            conn,
            org_id,
            email=email,
            role=role,
            password=password,
            now=SystemClock().now(),
            first_name=first_name,
            last_name=last_name,
            phone=phone,
        )
        return {
            "user_id": str(made.user_id),
            "membership_id": str(made.membership_id),
            "role": made.role,
            "account": made.account,
        }

    emit(run_in_transaction(current, work))


@member_app.command("invite")
def member_invite(
    org: Annotated[str, typer.Option(help="Organization id")],
    email: Annotated[str, typer.Option()],
    role: Annotated[str, typer.Option(help=f"One of {', '.join(ROLE_NAMES)}")],
    first_name: Annotated[str, typer.Option("--first-name")] = "",
    last_name: Annotated[str, typer.Option("--last-name")] = "",
    phone: Annotated[str | None, typer.Option("--phone")] = None,
) -> None:
    """Invite someone, as an admin's POST /api/orgs/{org}/members does: a pending membership
    and a one-time link (printed this once) that the person opens to join."""
    org_id = parse_org(org)
    check_role(role)
    current = migrated_settings()

    async def work(conn: Any) -> dict[str, Any]:
        await require_org(conn, org_id)
        invited = await invite_member(
            conn,
            org_id,
            email=email,
            role=role,
            now=SystemClock().now(),
            first_name=first_name,
            last_name=last_name,
            phone=phone,
        )
        return {
            "user_id": str(invited.member.user_id),
            "membership_id": str(invited.member.membership_id),
            "role": invited.member.role,
            "status": invited.member.status,
            "invitation_url": invitations.link(current.public_url, invited.invitation.token),
            "invitation_expires_at": invited.invitation.expires_at,
        }

    emit(run_in_transaction(current, work))


@key_app.command("create")
def key_create(
    org: Annotated[str, typer.Option(help="Organization id")],
    name: Annotated[str, typer.Option(help="What the key is for")],
    scope: Annotated[list[str] | None, typer.Option(help="A scope; repeat for several")] = None,
) -> None:
    """Issue an API key; the full key is printed this once."""
    org_id = parse_org(org)
    current = migrated_settings()

    async def work(conn: Any) -> dict[str, Any]:
        await require_org(conn, org_id)
        issued = await issue_key(
            conn, org_id, name=name, scopes=scope or [], now=SystemClock().now()
        )
        return {
            "id": str(issued.id),
            "key": issued.key,
            "prefix": issued.prefix,
            "scopes": issued.scopes,
        }

    emit(run_in_transaction(current, work))


JOBS = ("mel-expiry",)


@jobs_app.command("run")
def jobs_run(job: Annotated[str, typer.Argument(help=f"One of {', '.join(JOBS)}")]) -> None:
    """Run a scheduled job once, now."""
    from hangar.fleet.mel_expiry import expire_mel_items

    if job not in JOBS:
        fail(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    current = migrated_settings()

    async def main() -> int:
        engine = make_engine(current.database_url, pool_size=1)
        try:
            return await expire_mel_items(engine, SystemClock().now())
        finally:
            await engine.dispose()

    emit({"expired": asyncio.run(main())})


def _register_optional() -> None:
    # Seeding and the demo live with their feature; they register their own commands.
    from hangar.seed import cli as seed_cli

    seed_cli.register(app)


_register_optional()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
