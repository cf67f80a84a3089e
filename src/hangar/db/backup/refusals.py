"""What a restore refuses before it writes a byte: a backup of a newer release or schema, or of
the other database kind; a backup sealed with a key this hangar lacks, or whose manifest no key
of its signed; and a target database that a hangar still uses."""

from __future__ import annotations

from pathlib import Path

from hangar import __version__
from hangar.db.backup import BackupError, Progress, kind_of, postgresql, sqlite, without_password
from hangar.db.backup.manifest import Manifest, release
from hangar.db.key_check import Keys
from hangar.db.migrate import code_revisions
from hangar.foundation.sqlite_files import sqlite_path

# The other connections of hangar's to this database (pid, application name), of any release:
# hangar.db.engine and hangar.db.read_pool name each one.
HANGAR_CONNECTIONS = (
    "SELECT pid, application_name FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND (application_name LIKE 'hangar/%' OR application_name LIKE 'hangar-read/%')"
)


def check_restorable(manifest: Manifest, database_url: str) -> None:
    newer = f"restore it with hangar {manifest.hangar_version} or later"
    if release(manifest.hangar_version) > release(__version__):
        raise BackupError(
            f"this backup was made by hangar {manifest.hangar_version}, newer than this "
            f"hangar {__version__}: {newer}"
        )
    unknown = sorted(set(manifest.revisions) - code_revisions().known)
    if unknown:
        raise BackupError(
            f"this backup's schema (revision {', '.join(unknown)}) is newer than this hangar "
            f"{__version__} knows: {newer}"
        )
    target = kind_of(database_url)
    if manifest.database != target:
        names = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
        raise BackupError(
            f"this is a {names[manifest.database]} backup and HANGAR_DATABASE_URL names a "
            f"{names[target]} database: restore it into a {names[manifest.database]} one"
        )


def check_keys(
    path: Path,
    manifest: Manifest,
    database_url: str,
    keys: Keys,
    *,
    allow_other_key: bool,
    progress: Progress,
) -> None:
    """Refuses a backup sealed with a key `keys` lack, or whose manifest none of them signed
    (each restored anyway with `allow_other_key`, saying so)."""
    known = keys.fingerprints()
    if manifest.key_fingerprint not in known and not allow_other_key:
        raise BackupError(_other_key(manifest, database_url, keys))
    if not manifest.signed_by(keys):
        if not allow_other_key:
            raise BackupError(_unsigned(path, manifest))
        progress(
            "note: no key of this hangar signed this backup's manifest, so nothing "
            "vouches for it: restored because --allow-other-key asks to"
        )
    missing = len(set(manifest.previous_key_fingerprints) - known)
    if missing:
        progress(
            f"note: {missing} of the keys in HANGAR_SECRET_KEY_PREVIOUS when the backup was "
            "made are not set now: webhook secrets not yet resealed open only with them"
        )


def _unsigned(path: Path, manifest: Manifest) -> str:
    why = (
        "was made before hangar signed its backups (format 1)"
        if manifest.format_version < 2
        else "was changed after `hangar backup` wrote it"
    )
    return (
        f"no key of this hangar (HANGAR_SECRET_KEY, HANGAR_SECRET_KEY_PREVIOUS) signed the "
        f"manifest of {path}: it {why}, or was signed with a key not set here. Restore a backup "
        "you trust, or pass --allow-other-key if you know this one is yours"
    )


def _other_key(manifest: Manifest, database_url: str, keys: Keys) -> str:
    where = "set HANGAR_SECRET_KEY to the key the backup was made with"
    target = sqlite_path(database_url)
    if target is not None:
        where += f" (or copy its key file beside the database as {target.name}.secret)"
    found = "no secret key is set" if keys.current is None else "HANGAR_SECRET_KEY is another key"
    return (
        f"{found}: this backup's webhook secrets open only with the key it was made with "
        f"(fingerprint {manifest.key_fingerprint}); {where}, or pass --allow-other-key to "
        "restore anyway with every webhook secret unreadable"
    )


def refuse_if_in_use(database_url: str) -> None:
    """--force replaces a database's tables: never under a hangar still using it (issue 40).
    PostgreSQL says who is connected (pg_stat_activity: hangar names each connection
    `hangar/VERSION` or `hangar-read/VERSION`); a SQLite file is in use while a process of
    this machine holds it open (/proc/PID/fd, the only way SQLite is shared)."""
    if kind_of(database_url) == "postgresql":
        found = postgresql.query(database_url, HANGAR_CONNECTIONS)
        how = "connections named hangar/VERSION in pg_stat_activity"
    else:
        found = [str(pid) for pid in sqlite.holders(sqlite.target_file(database_url))]
        how = "processes holding the file open"
    if found:
        raise BackupError(
            f"{without_password(database_url)} is in use by hangar ({len(found)} {how}: "
            f"{', '.join(sorted(found, key=int)[:5])}): stop every hangar process that uses "
            "it, then restore"
        )
