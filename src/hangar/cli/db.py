"""`hangar db`: the database schema."""

from __future__ import annotations

import typer

from hangar.cli.common import emit, migrated_settings

db_app = typer.Typer(no_args_is_help=True, help="Database schema.")


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
