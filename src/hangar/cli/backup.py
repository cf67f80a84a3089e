"""`hangar backup PATH` and `hangar restore PATH`: one command each (hangar.db.backup)."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Annotated

import typer

from hangar.cli.common import emit, fail, settings
from hangar.db import key_check
from hangar.db.backup import BackupError, restoring, without_password, writing
from hangar.db.backup.manifest import Manifest
from hangar.db.engine import make_engine
from hangar.db.key_check import Keys
from hangar.db.migrate import code_revisions, upgrade
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import (
    DEFAULT_DATABASE_URL,
    ConfigError,
    previous_secret_keys,
    with_files,
)
from hangar.foundation.sqlite_files import sqlite_path
from hangar.http.access_log import redact

BackupPath = Annotated[
    Path, typer.Argument(metavar="PATH", help="The backup file to write; its folder must exist")
]
RestorePath = Annotated[
    Path, typer.Argument(metavar="PATH", help="A backup file written by `hangar backup`")
]


def progress(message: str) -> None:
    typer.echo(f"hangar: {message}", err=True)


# A scheduled backup's file in a folder: its UTC time, which also orders them.
SCHEDULED = "hangar-{:%Y%m%dT%H%M%SZ}.tar"
SCHEDULED_PATTERN = re.compile(r"hangar-\d{8}T\d{6}Z\.tar")


def backup(
    path: BackupPath,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace PATH if it exists")
    ] = False,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep",
            metavar="N",
            help="PATH is a folder: write hangar-<UTC time>.tar in it, then delete the oldest "
            "such files beyond the newest N",
        ),
    ] = None,
) -> None:
    """Write a backup of the database (HANGAR_DATABASE_URL) to PATH, one file.

    The copy is consistent while hangar serves and delivers: SQLite's is made with its online
    backup API (copying a live database file is not a backup), PostgreSQL's with pg_dump -Fc
    (PostgreSQL's client tools must be on the PATH, of the server's major version). PATH is a tar
    file holding the copy and manifest.json (the hangar version, the migration revision, the
    database kind, when, and a fingerprint of the secret key). PATH must not exist (unless
    --overwrite); it appears whole or not at all, readable by this user only.

    The backup does not hold the secret key (HANGAR_SECRET_KEY, or the SQLite default's key file
    beside the database): keep the key apart, somewhere as safe. Without it no webhook secret in
    the backup can be read; with it, anyone holding a copy of the backup could read them.

    With --keep N, PATH is a folder (a timer's, as deploy/hangar-backup.timer runs it): the
    backup goes to PATH/hangar-<UTC time>.tar, and once it is whole the oldest files of that
    name beyond the newest N are deleted (no other file in the folder is touched).

    Take one daily and before every upgrade; see the README's "Backups"."""
    _refuse_a_missing_database()
    folder, path = _scheduled(path, keep) if keep is not None else (None, path)
    current = settings()
    keys = Keys(current.secret_key, current.previous_secret_keys)
    try:
        manifest = writing.create(
            current.database_url,
            keys,
            path,
            now=SystemClock().now(),
            progress=progress,
            overwrite=overwrite,
        )
    except BackupError as exc:
        fail(str(exc))
    pruned = _prune(folder, keep) if folder is not None and keep is not None else []
    emit({"backup": str(path), **summary(manifest), **({"pruned": pruned} if folder else {})})


def _refuse_a_missing_database() -> None:
    """Checked before reading the settings, which would make an empty database (and a key)
    at a mistyped path, and a backup of nothing."""
    url = _environment().get("HANGAR_DATABASE_URL") or DEFAULT_DATABASE_URL
    source = sqlite_path(url)
    if source is not None and not source.is_file():
        fail(f"no database at {source}: set HANGAR_DATABASE_URL to the database to back up")


def _scheduled(folder: Path, keep: int) -> tuple[Path, Path]:
    """With --keep: the folder, and the file of this backup in it."""
    if keep < 1:
        fail(f"--keep must be 1 or more backups, not {keep}")
    if not folder.is_dir():
        fail(f"with --keep, PATH is the folder the backups go to: {folder} is not a folder")
    return folder, folder / SCHEDULED.format(SystemClock().now())


def _prune(folder: Path, keep: int) -> list[str]:
    """Deletes the oldest scheduled backups in `folder` beyond the newest `keep`; their names."""
    made = sorted(p.name for p in folder.iterdir() if SCHEDULED_PATTERN.fullmatch(p.name))
    gone = made[:-keep]
    for name in gone:
        (folder / name).unlink(missing_ok=True)
        progress(f"deleted {name}: older than the newest {keep}")
    return gone


def restore(
    path: RestorePath,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace the tables of a database that has some"),
    ] = False,
    allow_other_key: Annotated[
        bool,
        typer.Option(
            "--allow-other-key",
            help="Restore although the secret key does not open the backup's webhook secrets, "
            "or did not sign its manifest (only a backup you know is yours)",
        ),
    ] = False,
) -> None:
    """Restore the backup at PATH into the database HANGAR_DATABASE_URL names.

    Stop every hangar process that uses that database first. Refuses a backup made by a newer
    release, a SQLite backup into PostgreSQL (or the other way round), a database that already
    holds tables (unless --force), and a backup whose webhook secrets the secret key does not open
    or whose manifest it did not sign (HANGAR_SECRET_KEY, HANGAR_SECRET_KEY_PREVIOUS, or a SQLite
    database's key file NAME.secret beside it; unless --allow-other-key). The database entry
    must be exactly what the signed manifest says before a byte of it is written. PostgreSQL
    needs pg_restore on the PATH.

    The database is left at the backup's schema: `hangar serve` (or `hangar db upgrade`) migrates
    a backup of an older release to this one as it starts."""
    url, keys = _restore_keys(allow_other_key)
    manifest = _restored(path, url, keys, force=force, allow_other_key=allow_other_key)
    readable = manifest.key_fingerprint in keys.fingerprints()
    if not readable:
        _give_up_the_backups_key(url, keys)
    migrate = set(manifest.revisions) != code_revisions().heads and readable
    if migrate:
        progress("the backup's schema is older: `hangar serve` migrates it as it starts")
    emit(
        {
            "restored": str(path),
            "database": without_password(url),
            **summary(manifest),
            "migrate": migrate,
            "webhook_secrets": "readable" if readable else "unreadable",
        }
    )


def _restored(path: Path, url: str, keys: Keys, *, force: bool, allow_other_key: bool) -> Manifest:
    target = sqlite_path(url)
    made = target is not None and target.is_file() and target.stat().st_size == 0
    try:
        return restoring.restore(
            path, url, keys, force=force, allow_other_key=allow_other_key, progress=progress
        )
    except BackupError as exc:
        # Reading the settings made the empty file a SQLite database starts as; a refused
        # restore leaves nothing behind.
        if target is not None and made and target.is_file() and not target.stat().st_size:
            target.unlink()
        fail(str(exc))


def _give_up_the_backups_key(url: str, keys: Keys) -> None:
    """--allow-other-key: the backup's key is given up. Its record would keep every process
    from starting (hangar.wiring.secret_key), so the database now records this one, at this
    release's schema, which holds the record."""
    assert keys.current is not None  # --allow-other-key read the settings
    _record_key(url, keys.current)
    progress(
        "the backup's webhook secrets stay unreadable: the database now names "
        "HANGAR_SECRET_KEY as its key (migrated to this release to hold it)"
    )


def _record_key(url: str, secret_key: str) -> None:
    async def main() -> None:
        engine = make_engine(url, pool_size=1)
        try:
            async with engine.begin() as conn:
                await key_check.record(conn, secret_key, SystemClock().now())
        finally:
            await engine.dispose()

    try:
        upgrade(url)
        asyncio.run(main())
    except Exception as exc:
        error = f"{exc.__class__.__name__}: {redact(str(exc))}".splitlines()[0]
        fail(f"restored, but recording HANGAR_SECRET_KEY as the database's key failed ({error})")


def _restore_keys(allow_other_key: bool) -> tuple[str, Keys]:
    """The target's URL and the keys to check the backup's against."""
    env = _environment()
    url = env.get("HANGAR_DATABASE_URL") or DEFAULT_DATABASE_URL
    target = sqlite_path(url)
    key_file = target.with_name(target.name + ".secret") if target is not None else None
    if key_file is None or env.get("HANGAR_SECRET_KEY") or key_file.exists() or allow_other_key:
        current = settings()
        return current.database_url, Keys(current.secret_key, current.previous_secret_keys)
    # A new SQLite file with no key beside it: reading the settings would make a new key there,
    # which opens nothing the backup sealed. The restore refuses, naming the key file to copy.
    try:
        return url, Keys(None, previous_secret_keys(env, ""))
    except ConfigError as exc:
        fail(str(exc))


def _environment() -> dict[str, str]:
    """The environment with the settings given as files read in (HANGAR_*_FILE)."""
    try:
        return with_files(os.environ)
    except ConfigError as exc:
        fail(str(exc))


def summary(manifest: Manifest) -> dict[str, object]:
    return {
        "database_kind": manifest.database,
        "hangar_version": manifest.hangar_version,
        "revisions": list(manifest.revisions),
        "created_at": manifest.created_at,
        "size": manifest.size,
        "sha256": manifest.sha256,
    }
