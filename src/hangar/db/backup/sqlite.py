"""SQLite's side of a backup: the copy made with SQLite's online backup API, in one step (the
snapshot of one read transaction, which writers in WAL mode never wait for), and the restore
written the same way into the target file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from hangar.db.backup import BackupError, Progress
from hangar.db.backup.manifest import Manifest
from hangar.foundation.sqlite_files import private_sqlite, sqlite_path


def database_file(database_url: str) -> Path:
    """The database to back up, which must exist."""
    found = target_file(database_url)
    if not found.is_file():
        raise BackupError(
            f"no database at {found}: set HANGAR_DATABASE_URL to the database to back up"
        )
    return found


def target_file(database_url: str) -> Path:
    found = sqlite_path(database_url)
    if found is None:
        raise BackupError("HANGAR_DATABASE_URL names no SQLite file: sqlite:///PATH")
    return found


def copy(source: Path, target: Path, progress: Progress) -> tuple[str, ...]:
    """`source` copied to `target`; the Alembic revisions the copy is at."""
    progress(f"copying {source} with SQLite's online backup API")
    try:
        src = sqlite3.connect(source, timeout=30)
        dst = sqlite3.connect(target)
        try:
            # pages=-1: every page in one step, inside one read transaction of the source: a
            # snapshot that writers in WAL mode never wait for. Copied in smaller steps, each
            # commit of a busy server would restart the copy, perhaps forever.
            src.backup(dst, pages=-1)
            # The copy carries the source's WAL flag; in rollback-journal mode it is one
            # self-contained file, with no -wal beside it to lose.
            dst.execute("PRAGMA journal_mode=DELETE")
            found = revisions(dst)
        finally:
            dst.close()
            src.close()
    except sqlite3.Error as exc:
        raise BackupError(f"cannot copy the database {source}: {exc}") from None
    if not found:
        raise BackupError(
            f"{source} holds no hangar database (never migrated): check HANGAR_DATABASE_URL"
        )
    return found


def revisions(conn: sqlite3.Connection) -> tuple[str, ...]:
    tables = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
    ).fetchall()
    if not tables:
        return ()
    return tuple(sorted(row[0] for row in conn.execute("SELECT version_num FROM alembic_version")))


def tables(target: Path) -> list[str]:
    """The tables of the file `target` (none when it does not exist yet)."""
    if not target.exists():
        return []
    try:
        conn = sqlite3.connect(target, timeout=30)
        try:
            found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            return [str(row[0]) for row in found]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"cannot read {target}: {exc}") from None


def restore(copied: Path, manifest: Manifest, target: Path, progress: Progress) -> None:
    """The database `copied` out of the backup, checked, written into `target` in one step."""
    try:
        src = sqlite3.connect(copied)
        try:
            checked = src.execute("PRAGMA quick_check").fetchall()
            if checked != [("ok",)] or revisions(src) != manifest.revisions:
                raise BackupError("the backup is damaged (its database fails SQLite's check)")
            private_sqlite(target)
            dst = sqlite3.connect(target, timeout=30)
            try:
                progress(f"restoring into {target} with SQLite's online backup API")
                # One step: the target changes in one write transaction, all or nothing.
                src.backup(dst, pages=-1)
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"cannot restore into {target}: {exc}") from None


def holders(target: Path) -> list[int]:
    """The other processes of this machine that hold `target` (or its -wal) open."""
    files = {str(target.resolve()), str(target.resolve()) + "-wal"}
    found = []
    for fd_folder in Path("/proc").glob("[0-9]*/fd"):
        pid = int(fd_folder.parent.name)
        if pid == os.getpid():
            continue
        try:
            if any(os.readlink(fd) in files for fd in fd_folder.iterdir()):
                found.append(pid)
        except OSError:
            continue  # gone meanwhile, or another user's: not a hangar of this operator
    return found
