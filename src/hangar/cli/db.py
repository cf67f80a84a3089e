"""`hangar db`: the database schema."""

from __future__ import annotations

from hangar.cli.common import command_group, emit, migrated_settings

db_app = command_group("Database schema.")


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
