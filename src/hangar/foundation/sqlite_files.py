"""The embedded default's files: a SQLite database made readable by this user only, and the
secret key kept beside it when HANGAR_SECRET_KEY is not set (hangar.foundation.config reads
the settings and asks for them)."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def sqlite_path(database_url: str) -> Path | None:
    """The file behind a sqlite:/// URL, or None for in-memory or other databases."""
    if not database_url.startswith("sqlite:///"):
        return None
    path = database_url.removeprefix("sqlite:///")
    if not path or path == ":memory:":
        return None
    return Path(path)


# Beside the database SQLite keeps its write-ahead log and shared-memory index, and (outside
# WAL mode) a rollback journal: each holds the same personal data, hashes and session rows.
SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")
PRIVATE = 0o600
PRIVATE_FOLDER = 0o700


def private_sqlite(db_file: Path) -> None:
    """The database and its companion files readable by this user only, in a folder of its
    own made 0700 when hangar makes it.

    SQLite gives the WAL, SHM and journal files the database file's own mode, so creating
    the database 0600 (an empty file is an empty database) makes them private too. Files left
    readable by an older version are tightened.
    """
    # A folder made here holds the database and its key: this user's only, whatever the umask
    # (an existing folder is the operator's, and keeps its mode).
    db_file.parent.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(db_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE))
    for suffix in (*SQLITE_COMPANIONS, ".secret"):
        path = db_file.with_name(db_file.name + suffix)
        try:
            if path.stat().st_mode & 0o077:
                path.chmod(PRIVATE)
        except FileNotFoundError:
            continue


def secret_beside(db_file: Path) -> str:
    """The SQLite default: a key generated once and kept next to the database, mode 0600."""
    key_file = db_file.with_name(db_file.name + ".secret")
    if key_file.exists():
        return key_file.read_text().strip()
    key = secrets.token_urlsafe(48)
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return key
