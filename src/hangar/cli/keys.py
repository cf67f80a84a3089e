"""`hangar key`: API keys."""

from __future__ import annotations

from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.cli.common import OrgOption, emit, migrated_settings, parse_org, run_in_transaction
from hangar.clock import SystemClock
from hangar.keys.issuing import IssuedKey, issue_key
from hangar.orgs.commands import require_org

key_app = typer.Typer(no_args_is_help=True, help="API keys.")


@key_app.command("create")
def key_create(
    org: OrgOption,
    name: Annotated[str, typer.Option(help="What the key is for")],
    scope: Annotated[list[str] | None, typer.Option(help="A scope; repeat for several")] = None,
) -> None:
    """Issue an API key; the full key is printed this once."""
    org_id = parse_org(org)
    current = migrated_settings()

    async def work(conn: AsyncConnection) -> IssuedKey:
        await require_org(conn, org_id)
        return await issue_key(conn, org_id, name=name, scopes=scope or [], now=SystemClock().now())

    issued = run_in_transaction(current, work)
    emit(
        {"id": str(issued.id), "key": issued.key, "prefix": issued.prefix, "scopes": issued.scopes}
    )
