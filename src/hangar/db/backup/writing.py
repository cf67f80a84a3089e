"""`hangar backup`: the database copied (SQLite's online backup API, or pg_dump), a signed
manifest beside it, and the two packed into one file that appears whole or not at all."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

from hangar import __version__
from hangar.db.backup import BackupError, Progress, kind_of, postgresql, sqlite
from hangar.db.backup.archive import digest, pack, place, private_folder, size_words
from hangar.db.backup.manifest import MEMBERS, Manifest
from hangar.db.key_check import Keys, fingerprint


def create(
    database_url: str,
    keys: Keys,
    path: Path,
    *,
    now: datetime,
    progress: Progress,
    overwrite: bool = False,
) -> Manifest:
    """Writes a backup of the database to `path` (refused if it exists, unless `overwrite`)."""
    kind = kind_of(database_url)
    _check_path(path, overwrite=overwrite)
    work = private_folder(path.parent, ".hangar-backup-")
    try:
        copy = work / MEMBERS[kind]
        if kind == "sqlite":
            revisions = sqlite.copy(sqlite.database_file(database_url), copy, progress)
        else:
            revisions = postgresql.dump(database_url, copy, progress)
        size, sha256 = digest(copy)
        manifest = Manifest(
            hangar_version=__version__,
            database=kind,
            revisions=revisions,
            created_at=now.isoformat().replace("+00:00", "Z"),
            key_fingerprint=fingerprint(keys.current or ""),
            previous_key_fingerprints=tuple(fingerprint(key) for key in keys.previous),
            file=copy.name,
            size=size,
            sha256=sha256,
        ).signed(keys.current or "")
        progress(f"writing {path} ({size_words(size)} of database)")
        packed = work / "backup.tar"
        pack(packed, manifest, copy)
        copy.unlink()
        place(packed, path, overwrite=overwrite)
        return manifest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check_path(path: Path, *, overwrite: bool) -> None:
    if path.is_dir():
        raise BackupError(
            f"{path} is a folder: name the backup file to write, such as {path}/hangar.tar"
        )
    if path.exists() and not overwrite:
        raise BackupError(f"{path} exists: name a new file, or pass --overwrite to replace it")
    if not path.parent.is_dir():
        raise BackupError(f"folder {path.parent} does not exist: create it first")
