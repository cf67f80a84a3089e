"""`hangar key`: API keys."""

from __future__ import annotations

import textwrap
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.cli.common import (
    OrgOption,
    command_group,
    emit,
    migrated_settings,
    parse_org,
    run_in_transaction,
)
from hangar.foundation.clock import SystemClock
from hangar.keys.service import IssuedKey, issue_by_operator
from hangar.kit.scopes import SCOPES, scope_note
from hangar.orgs.service import require_org

key_app = command_group("API keys.")

# click keeps a paragraph that starts with \b as written: one scope a line, its meaning below.
CREATE_HELP = "Issue an API key; the full key is printed this once.\n\n\b\nScopes:\n" + "\n".join(
    f"  {scope}\n" + textwrap.fill(meaning, 76, initial_indent=" " * 6, subsequent_indent=" " * 6)
    for scope, meaning in SCOPES.items()
)


@key_app.command("create", help=CREATE_HELP)
def key_create(
    org: OrgOption,
    name: Annotated[str, typer.Option(metavar="NAME", help="What the key is for")],
    scope: Annotated[
        list[str] | None,
        typer.Option(metavar="SCOPE", help="A scope (below); repeat for several, one at least"),
    ] = None,
) -> None:
    org_id = parse_org(org)
    current = migrated_settings()

    async def work(conn: AsyncConnection) -> IssuedKey:
        await require_org(conn, org_id)
        now = SystemClock().now()
        return await issue_by_operator(conn, org_id, name=name, scopes=scope or [], now=now)

    issued = run_in_transaction(current, work)
    emit(
        {"id": str(issued.id), "key": issued.key, "prefix": issued.prefix, "scopes": issued.scopes}
    )
    note = scope_note(issued.scopes)
    if note is not None:
        typer.echo(f"hangar: note: {note}", err=True)
