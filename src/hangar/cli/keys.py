"""`hangar key`: API keys."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hangar.cli.common import emit, migrated_settings, parse_org, require_org, run_in_transaction
from hangar.clock import SystemClock
from hangar.keys.issuing import issue_key

key_app = typer.Typer(no_args_is_help=True, help="API keys.")


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
