"""Backups: one file holding a consistent copy of the database and a manifest saying what it is.

A backup is an uncompressed tar file: `manifest.json` first (so a restore reads what it is
before anything else), then the database. SQLite's copy is made with the online backup API in
one step, so it is the snapshot of one read transaction while hangar keeps writing; copying a
live database file (and its write-ahead log) is not. PostgreSQL's is `pg_dump -Fc`, which
dumps one snapshot too. The secret key is never in a backup: a stolen backup then opens no
webhook secret, and the manifest holds only a fingerprint derived from the key, so a restore
can tell whether the key it runs with opens what the backup sealed.

Framework-free and synchronous: `hangar backup` and `hangar restore` (hangar.cli.backup) call
it; every failure is a BackupError whose message is the one line to show. The package:

- writing: `create`, a backup written; restoring: `restore`, one restored, and refusals:
  what a restore refuses before it writes a byte;
- manifest: what a backup says it is, signed; archive: the tar file that holds it;
- sqlite and postgresql: each database's own copy and restore.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

Kind = Literal["sqlite", "postgresql"]
Progress = Callable[[str], None]


class BackupError(Exception):
    """What went wrong, as the one line an operator reads; the message names what to do."""


def kind_of(database_url: str) -> Kind:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


def without_password(database_url: str) -> str:
    """The URL with its password (in the address or the query) left out, fit to show."""
    if kind_of(database_url) == "sqlite":
        return database_url  # a path: nothing secret, and urlunsplit would drop a slash
    parts = urlsplit(database_url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
