"""`hangar restore`: a backup checked (its manifest, its key, the target), its database copied
out of the archive beside the target and restored into it, and the events log's positions moved
past any cursor handed out before the restore."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from sqlalchemy import text

from hangar.db.backup import (
    BackupError,
    Progress,
    kind_of,
    postgresql,
    refusals,
    sqlite,
    without_password,
)
from hangar.db.backup.archive import extract, manifest_of, opened, private_folder
from hangar.db.backup.manifest import Manifest
from hangar.db.engine import make_engine
from hangar.db.key_check import Keys
from hangar.foundation.sqlite_files import PRIVATE_FOLDER

# Besides the copies themselves: the filesystem's own needs, and SQLite's journal.
ROOM_MARGIN = 16 * 1024 * 1024


def restore(
    path: Path,
    database_url: str,
    keys: Keys,
    *,
    force: bool,
    allow_other_key: bool,
    progress: Progress,
) -> Manifest:
    """Restores the backup at `path` into `database_url`. Refuses a backup of a newer release,
    of the other database kind, sealed with a key that `keys` lack (unless `allow_other_key`)
    and, unless `force`, a target that holds tables. Does not migrate: `hangar serve` (or
    `hangar db upgrade`) brings an older backup's schema up to date."""
    with opened(path) as archive:
        manifest = manifest_of(path, archive)
        refusals.check_restorable(manifest, database_url)
        refusals.check_keys(
            path, manifest, database_url, keys, allow_other_key=allow_other_key, progress=progress
        )
        # Before reading the backup, which may be large: a target holding tables is refused.
        existing = _existing_tables(database_url, force=force)
        work = _work_folder(database_url, manifest)
        made = f"the backup of {manifest.created_at} (hangar {manifest.hangar_version})"

        def told(how: str) -> None:
            progress(f"{made}: {how}")

        try:
            copied = work / manifest.file
            extract(archive, manifest, copied)
            if manifest.database == "sqlite":
                sqlite.restore(copied, manifest, sqlite.target_file(database_url), told)
            else:
                postgresql.restore(copied, database_url, existing, told)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if "event_log_ends" in tables(database_url):
        _move_event_log_ends(database_url)
    return manifest


def tables(database_url: str) -> list[str]:
    """The tables of the target database (none when its SQLite file does not exist yet)."""
    if kind_of(database_url) == "postgresql":
        return postgresql.query(
            database_url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    return sqlite.tables(sqlite.target_file(database_url))


def _existing_tables(database_url: str, *, force: bool) -> list[str]:
    """The target's tables: none, or (with `force`) those of a database no hangar uses."""
    existing = tables(database_url)
    if existing and not force:
        raise BackupError(
            f"{without_password(database_url)} already holds a database: restore into a "
            "new one (a new path, or an empty database made with createdb), or stop "
            "hangar and pass --force to replace it"
        )
    if existing:
        refusals.refuse_if_in_use(database_url)
    return existing


def _work_folder(database_url: str, manifest: Manifest) -> Path:
    """Where the database is copied out of the archive, once its room is checked: beside a
    SQLite target (the copy, then the database written from it: twice its size), in the
    temporary folder for PostgreSQL."""
    if kind_of(database_url) == "sqlite":
        target = sqlite.target_file(database_url)
        target.parent.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
        _check_room(target.parent, 2 * manifest.size)
        return private_folder(target.parent, ".hangar-restore-")
    _check_room(Path(tempfile.gettempdir()), manifest.size)
    return private_folder(Path(tempfile.gettempdir()), "hangar-restore-")


def _check_room(folder: Path, needed: int) -> None:
    """Refuses before writing anything when `folder`'s filesystem lacks room for `needed`
    bytes: a restore that fills the disk halfway fails worse, beside the live database."""
    free = shutil.disk_usage(folder).free
    if free < needed + ROOM_MARGIN:
        raise BackupError(
            f"restoring needs about {_mb(needed + ROOM_MARGIN)} free in {folder} and it has "
            f"{_mb(free)}: free some space there, or restore somewhere with more"
        )


def _mb(size: int) -> str:
    return f"{size / 1_000_000:,.0f} MB"


# A restore takes each organization's events log back to the backup: the positions handed out
# since would be handed out again, and a poller holding a cursor from after the backup would
# silently skip the new events given them (issue 40: 200 with no items, for ever). Every
# organization's end moves this far ahead (more events than this between a backup and its
# restore are out of reach), so every position handed out from now on lies past any cursor
# issued before the restore: such a cursor keeps working and misses nothing the restored
# database holds.
RESTORE_POSITION_GAP = 1 << 32
_MOVE_ENDS = (
    "UPDATE event_log_ends SET last_position = last_position + :gap",
    "INSERT INTO event_log_ends (org_id, last_position) "
    "SELECT id, :gap FROM organizations WHERE id NOT IN (SELECT org_id FROM event_log_ends)",
)


def _move_event_log_ends(database_url: str) -> None:
    async def move() -> None:
        engine = make_engine(database_url, pool_size=1, statement_timeout_s=None)
        try:
            async with engine.begin() as conn:
                for statement in _MOVE_ENDS:
                    await conn.execute(text(statement), {"gap": RESTORE_POSITION_GAP})
        finally:
            await engine.dispose()

    try:
        asyncio.run(move())
    except Exception as exc:  # the driver's many errors: each is the one line to show
        raise BackupError(
            f"restored, but moving the events log's positions past the backup's failed "
            f"({exc.__class__.__name__}): run the restore again with --force"
        ) from None
