"""Backups: one file holding a consistent copy of the database and a manifest saying what it is.

A backup is an uncompressed tar file: `manifest.json` first (so a restore reads what it is
before anything else), then the database. SQLite's copy is made with the online backup API in
one step, so it is the snapshot of one read transaction while hangar keeps writing; copying a
live database file (and its write-ahead log) is not. PostgreSQL's is `pg_dump -Fc`, which
dumps one snapshot too. The secret key is never in a backup: a stolen backup then opens no
webhook secret, and the manifest holds only a fingerprint derived from the key, so a restore
can tell whether the key it runs with opens what the backup sealed.

Framework-free and synchronous: `hangar backup` and `hangar restore` (hangar.cli.backup) call
it; every failure is a BackupError whose message is the one line to show.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from hangar import __version__
from hangar.db.engine import make_engine
from hangar.db.key_check import Keys, fingerprint
from hangar.db.migrate import code_revisions
from hangar.foundation.crypto import derive_key
from hangar.foundation.sqlite_files import PRIVATE, PRIVATE_FOLDER, private_sqlite, sqlite_path

FORMAT = "hangar-backup"
FORMAT_VERSION = 2  # 2: the manifest is signed (Manifest.signature); 1 was not
MANIFEST = "manifest.json"
MEMBERS = {"sqlite": "database.sqlite3", "postgresql": "database.pgdump"}
MAX_MANIFEST = 64 * 1024  # a manifest is a few hundred bytes; a bigger one is not ours
CHUNK = 1024 * 1024
Kind = Literal["sqlite", "postgresql"]
Progress = Callable[[str], None]


class BackupError(Exception):
    """What went wrong, as the one line an operator reads; the message names what to do."""


@dataclass(frozen=True)
class Manifest:
    hangar_version: str
    database: Kind
    revisions: tuple[str, ...]  # the Alembic revisions the copy is at
    created_at: str  # ISO 8601, UTC
    key_fingerprint: str  # key_check.fingerprint() of the key that sealed the copy's secrets
    # HANGAR_SECRET_KEY_PREVIOUS's, when set: secrets not yet resealed need one of these.
    previous_key_fingerprints: tuple[str, ...]
    file: str  # the tar member holding the database
    size: int
    sha256: str
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    # HMAC-SHA256 of every other field, under a key derived from the HANGAR_SECRET_KEY that
    # made the backup: a restore trusts only a manifest (so a database: its size and sha256)
    # that one of its own keys signed. Empty in format 1.
    signature: str = ""

    def to_json(self) -> bytes:
        return json.dumps(self._fields(), indent=2, sort_keys=True).encode() + b"\n"

    def _fields(self) -> dict[str, Any]:
        return asdict(self) | {
            "revisions": list(self.revisions),
            "previous_key_fingerprints": list(self.previous_key_fingerprints),
        }

    def _mac(self, secret_key: str) -> str:
        fields = self._fields()
        del fields["signature"]
        body = json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(derive_key(secret_key, "backup-manifest"), body, "sha256").hexdigest()

    def signed(self, secret_key: str) -> Manifest:
        return replace(self, signature=self._mac(secret_key))

    def signed_by(self, keys: Keys) -> bool:
        """Whether one of `keys` signed this manifest (each compared in constant time)."""
        matches = [hmac.compare_digest(self._mac(key), self.signature) for key in keys.held]
        return bool(self.signature) and any(matches)


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


# --- backup --------------------------------------------------------------------------------


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
    if path.is_dir():
        raise BackupError(
            f"{path} is a folder: name the backup file to write, such as {path}/hangar.tar"
        )
    if path.exists() and not overwrite:
        raise BackupError(f"{path} exists: name a new file, or pass --overwrite to replace it")
    if not path.parent.is_dir():
        raise BackupError(f"folder {path.parent} does not exist: create it first")
    work = _private_folder(path.parent, ".hangar-backup-")
    try:
        copy = work / MEMBERS[kind]
        if kind == "sqlite":
            revisions = _sqlite_copy(_sqlite_file(database_url), copy, progress)
        else:
            revisions = _pg_dump(database_url, copy, progress)
        size, digest = _digest(copy)
        manifest = Manifest(
            hangar_version=__version__,
            database=kind,
            revisions=revisions,
            created_at=now.isoformat().replace("+00:00", "Z"),
            key_fingerprint=fingerprint(keys.current or ""),
            previous_key_fingerprints=tuple(fingerprint(key) for key in keys.previous),
            file=copy.name,
            size=size,
            sha256=digest,
        ).signed(keys.current or "")
        progress(f"writing {path} ({_size(size)} of database)")
        packed = work / "backup.tar"
        _pack(packed, manifest, copy)
        copy.unlink()
        _place(packed, path, overwrite=overwrite)
        return manifest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sqlite_file(database_url: str) -> Path:
    found = sqlite_path(database_url)
    if found is None:
        raise BackupError("HANGAR_DATABASE_URL names no SQLite file: sqlite:///PATH")
    if not found.is_file():
        raise BackupError(
            f"no database at {found}: set HANGAR_DATABASE_URL to the database to back up"
        )
    return found


def _sqlite_copy(source: Path, target: Path, progress: Progress) -> tuple[str, ...]:
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
            revisions = _sqlite_revisions(dst)
        finally:
            dst.close()
            src.close()
    except sqlite3.Error as exc:
        raise BackupError(f"cannot copy the database {source}: {exc}") from None
    if not revisions:
        raise BackupError(
            f"{source} holds no hangar database (never migrated): check HANGAR_DATABASE_URL"
        )
    return revisions


def _sqlite_revisions(conn: sqlite3.Connection) -> tuple[str, ...]:
    tables = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'alembic_version'"
    ).fetchall()
    if not tables:
        return ()
    return tuple(sorted(row[0] for row in conn.execute("SELECT version_num FROM alembic_version")))


def _pg_dump(database_url: str, target: Path, progress: Progress) -> tuple[str, ...]:
    tool = _pg_tool("pg_dump")
    shown = without_password(database_url)
    before = _pg_revisions(database_url)
    if not before:
        raise BackupError(
            f"{shown} holds no hangar database (never migrated): check HANGAR_DATABASE_URL"
        )
    progress(f"dumping {shown} with {tool} -Fc")
    _run_pg(
        [
            tool,
            "--format=custom",
            "--no-password",
            f"--file={target}",
            "--dbname",
            _libpq_url(database_url),
        ],
        database_url,
    )
    # pg_dump's snapshot and the revisions read around it agree unless a migration ran
    # meanwhile; then the manifest could name the wrong schema, so the backup is refused.
    if _pg_revisions(database_url) != before:
        raise BackupError("the database was migrated during the backup: run the backup again")
    return before


# --- restore -------------------------------------------------------------------------------


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
    with _opened(path) as archive:
        manifest = _manifest(path, archive)
        _check_restorable(manifest, database_url)
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
        # Before reading the backup, which may be large: a target holding tables is refused.
        existing = _tables(database_url)
        if existing and not force:
            raise BackupError(
                f"{without_password(database_url)} already holds a database: restore into a "
                "new one (a new path, or an empty database made with createdb), or stop "
                "hangar and pass --force to replace it"
            )
        if existing:
            _refuse_if_in_use(database_url)
        if kind_of(database_url) == "sqlite":
            target = _sqlite_target(database_url)
            target.parent.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
            # The copy out of the tar, then the database written from it: twice its size.
            _check_room(target.parent, 2 * manifest.size)
            work = _private_folder(target.parent, ".hangar-restore-")
        else:
            _check_room(Path(tempfile.gettempdir()), manifest.size)
            work = _private_folder(Path(tempfile.gettempdir()), "hangar-restore-")
        try:
            copy = work / manifest.file
            _extract(archive, manifest, copy)
            made = f"the backup of {manifest.created_at} (hangar {manifest.hangar_version})"
            if manifest.database == "sqlite":
                _sqlite_restore(copy, manifest, target, lambda how: progress(f"{made}: {how}"))
            else:
                _pg_restore(copy, database_url, existing, lambda how: progress(f"{made}: {how}"))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if "event_log_ends" in _tables(database_url):
        _move_event_log_ends(database_url)
    return manifest


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


# The other connections of hangar's to this database (pid, application name), of any release:
# hangar.db.engine and hangar.db.reads name each one.
HANGAR_CONNECTIONS = (
    "SELECT pid, application_name FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND (application_name LIKE 'hangar/%' OR application_name LIKE 'hangar-read/%')"
)
# Besides the copies themselves: the filesystem's own needs, and SQLite's journal.
ROOM_MARGIN = 16 * 1024 * 1024


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


def _refuse_if_in_use(database_url: str) -> None:
    """--force replaces a database's tables: never under a hangar still using it (issue 40).
    PostgreSQL says who is connected (pg_stat_activity: hangar names each connection
    `hangar/VERSION` or `hangar-read/VERSION`); a SQLite file is in use while a process of
    this machine holds it open (/proc/PID/fd, the only way SQLite is shared)."""
    if kind_of(database_url) == "postgresql":
        found = _pg_query(database_url, HANGAR_CONNECTIONS)
        how = "connections named hangar/VERSION in pg_stat_activity"
    else:
        found = [str(pid) for pid in _holding(_sqlite_target(database_url))]
        how = "processes holding the file open"
    if found:
        raise BackupError(
            f"{without_password(database_url)} is in use by hangar ({len(found)} {how}: "
            f"{', '.join(sorted(found, key=int)[:5])}): stop every hangar process that uses "
            "it, then restore"
        )


def _holding(target: Path) -> list[int]:
    """The other processes of this machine that hold `target` (or its -wal) open."""
    files = {str(target.resolve()), str(target.resolve()) + "-wal"}
    holders = []
    for fd_folder in Path("/proc").glob("[0-9]*/fd"):
        pid = int(fd_folder.parent.name)
        if pid == os.getpid():
            continue
        try:
            if any(os.readlink(fd) in files for fd in fd_folder.iterdir()):
                holders.append(pid)
        except OSError:
            continue  # gone meanwhile, or another user's: not a hangar of this operator
    return holders


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


def _check_restorable(manifest: Manifest, database_url: str) -> None:
    newer = f"restore it with hangar {manifest.hangar_version} or later"
    if _version(manifest.hangar_version) > _version(__version__):
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


def _sqlite_target(database_url: str) -> Path:
    found = sqlite_path(database_url)
    if found is None:
        raise BackupError("HANGAR_DATABASE_URL names no SQLite file: sqlite:///PATH")
    return found


def _tables(database_url: str) -> list[str]:
    """The tables of the target database (none when its SQLite file does not exist yet)."""
    if kind_of(database_url) == "postgresql":
        return _pg_query(
            database_url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    target = _sqlite_target(database_url)
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


def _sqlite_restore(copy: Path, manifest: Manifest, target: Path, progress: Progress) -> None:
    try:
        src = sqlite3.connect(copy)
        try:
            checked = src.execute("PRAGMA quick_check").fetchall()
            if checked != [("ok",)] or _sqlite_revisions(src) != manifest.revisions:
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


def _pg_restore(copy: Path, database_url: str, existing: list[str], progress: Progress) -> None:
    tool = _pg_tool("pg_restore")
    shown = without_password(database_url)
    listed = _run_pg([tool, "--list", str(copy)], database_url)
    # `pg_restore --list` names each table as `ID; OID OID TABLE SCHEMA NAME OWNER`.
    restored = {
        fields[5]
        for line in listed.splitlines()
        if len(fields := line.split()) > 5 and fields[3] == "TABLE" and fields[4] != "DATA"
    }
    # --clean drops only what the backup holds; a table it does not hold (one a later
    # release added) would stay behind and break the next migration.
    extra = sorted(set(existing) - restored)
    if extra:
        raise BackupError(
            f"{shown} holds tables this backup does not ({', '.join(extra[:3])}): restore into "
            "a new, empty database (createdb) instead"
        )
    progress(f"restoring into {shown} with {tool}")
    clean = ["--clean", "--if-exists"] if existing else []
    _run_pg(
        [
            tool, *clean, "--no-owner", "--no-privileges", "--single-transaction", "--no-password",
            "--exit-on-error", "--dbname", _libpq_url(database_url), str(copy),
        ],
        database_url,
    )  # fmt: skip


# --- the file ------------------------------------------------------------------------------


def _private_folder(parent: Path, prefix: str) -> Path:
    # mkdtemp makes it 0700: the copy inside holds every row of the database.
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    except OSError as exc:
        raise BackupError(f"cannot write in {parent}: {exc.strerror}") from None


def _digest(path: Path) -> tuple[int, str]:
    sha, size = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


def _pack(packed: Path, manifest: Manifest, copy: Path) -> None:
    fd = os.open(packed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    with os.fdopen(fd, "wb") as out:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            body = manifest.to_json()
            mtime = datetime.fromisoformat(manifest.created_at).timestamp()
            tar.addfile(_member(MANIFEST, len(body), mtime), io.BytesIO(body))
            with copy.open("rb") as db:
                tar.addfile(_member(copy.name, manifest.size, mtime), db)
        out.flush()
        os.fsync(out.fileno())


def _member(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, PRIVATE, mtime
    return info


def _place(packed: Path, path: Path, *, overwrite: bool) -> None:
    """Moves the finished backup to `path` in one step: a reader never sees half a file."""
    try:
        if overwrite:
            os.replace(packed, path)
        else:
            os.link(packed, path)  # fails if `path` appeared meanwhile, where rename would not
    except FileExistsError:
        raise BackupError(
            f"{path} exists: name a new file, or pass --overwrite to replace it"
        ) from None
    except OSError as exc:
        raise BackupError(f"cannot write {path}: {exc.strerror}") from None
    with contextlib.suppress(OSError):
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[tarfile.TarFile]:
    if not path.exists():
        raise BackupError(f"no backup at {path}: name a file written by `hangar backup`")
    if not path.is_file():
        raise BackupError(f"{path} is not a file: name a file written by `hangar backup`")
    try:
        archive = tarfile.open(path, mode="r:")  # noqa: SIM115 - closed by the `with` below
    except (tarfile.TarError, OSError):
        raise BackupError(
            f"{path} is not a hangar backup (not a file written by `hangar backup`)"
        ) from None
    with archive:
        yield archive


def read_manifest(path: Path) -> Manifest:
    """The manifest of the backup at `path`, checked as a restore checks it."""
    with _opened(path) as archive:
        return _manifest(path, archive)


def _manifest(path: Path, archive: tarfile.TarFile) -> Manifest:
    damaged = f"{path} is damaged or not a hangar backup (its manifest.json is unreadable)"
    try:
        info = _next_file(archive, MANIFEST)
        small = info is not None and info.size <= MAX_MANIFEST and not info.issparse()
        fh = archive.extractfile(info) if info and small else None
        if fh is None:
            raise BackupError(damaged)
        raw: Any = json.loads(fh.read())
    except (tarfile.TarError, OSError, ValueError):
        raise BackupError(damaged) from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BackupError(damaged)
    if not isinstance(raw.get("format_version"), int):
        raise BackupError(damaged)
    if raw["format_version"] > FORMAT_VERSION:
        raise BackupError(
            f"{path} is in a newer backup format ({raw['format_version']}) than this hangar "
            f"{__version__} reads: restore it with the release that made it, or a later one"
        )
    try:
        manifest = Manifest(
            hangar_version=_text(raw["hangar_version"]),
            database=raw["database"] if raw["database"] in MEMBERS else _bad(),
            revisions=tuple(_text(rev) for rev in raw["revisions"]),
            created_at=_text(raw["created_at"]),
            key_fingerprint=_text(raw["key_fingerprint"]),
            previous_key_fingerprints=tuple(
                _text(found) for found in raw.get("previous_key_fingerprints", [])
            ),
            file=raw["file"] if raw["file"] == MEMBERS[raw["database"]] else _bad(),
            size=raw["size"] if isinstance(raw["size"], int) and raw["size"] >= 0 else _bad(),
            sha256=_text(raw["sha256"]),
            format_version=raw["format_version"],
            signature=_text(raw["signature"]) if "signature" in raw else "",  # format 1: none
        )
        _version(manifest.hangar_version)
    except (KeyError, TypeError, ValueError, BackupError):
        raise BackupError(damaged) from None
    if not manifest.revisions:
        raise BackupError(damaged)
    return manifest


def _next_file(archive: tarfile.TarFile, name: str) -> tarfile.TarInfo | None:
    """The archive's next member if it is the file `name` (read in order: a lookup by name
    would read the whole archive first)."""
    info = archive.next()
    return info if info is not None and info.name == name and info.isfile() else None


def _text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError
    return value


def _bad() -> Any:
    raise ValueError


def _version(text: str) -> tuple[int, ...]:
    """1.2.0 → (1, 2, 0): releases are numbered so (a development suffix compares equal)."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    if found is None:
        raise BackupError(f"unreadable hangar version {text!r}")
    return tuple(int(part) for part in found.groups())


def _extract(archive: tarfile.TarFile, manifest: Manifest, target: Path) -> None:
    """The database, the member after the manifest, to `target` (never where the archive
    says), its size and checksum those of the manifest. The member is checked before a byte
    is written: a plain file of exactly the manifest's size (a sparse entry of a few bytes
    could stand for terabytes), and no more than that size is ever written."""
    damaged = (
        "the backup is damaged (its database is cut short or does not match the manifest's "
        "checksum): restore another one"
    )
    try:
        info = _next_file(archive, manifest.file)
    except (tarfile.TarError, OSError):
        raise BackupError(damaged) from None
    if info is not None and (info.issparse() or info.size != manifest.size):
        raise BackupError(
            f"the backup is damaged or was tampered with: its database entry is "
            f"{'sparse' if info.issparse() else _size(info.size)}, where the manifest says "
            f"{_size(manifest.size)} of plain file; nothing was written"
        )
    try:
        fh = archive.extractfile(info) if info else None
    except (tarfile.TarError, OSError):
        raise BackupError(damaged) from None
    if fh is None:
        raise BackupError(damaged)
    sha, size = hashlib.sha256(), 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    with os.fdopen(fd, "wb") as out:
        try:
            while chunk := fh.read(CHUNK):
                size += len(chunk)
                if size > manifest.size:
                    break  # never beyond what the manifest promised
                sha.update(chunk)
                out.write(chunk)
        except (tarfile.TarError, OSError):
            raise BackupError(damaged) from None
    if size != manifest.size or sha.hexdigest() != manifest.sha256:
        raise BackupError(damaged)


def _size(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


# --- PostgreSQL's tools and tables ---------------------------------------------------------


def _pg_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} is not on the PATH: install the PostgreSQL client tools of the server's "
            f"major version (Debian and Ubuntu: apt install postgresql-client)"
        )
    return found


def _libpq_url(database_url: str) -> str:
    """The URL for --dbname, without its password: a command line is visible to every user
    of the machine (ps), so the password goes to the child's PGPASSWORD instead."""
    return without_password(database_url).replace("postgresql+asyncpg://", "postgresql://", 1)


def _password(database_url: str) -> str | None:
    parts = urlsplit(database_url)
    if parts.password is not None:
        return unquote(parts.password)
    return dict(parse_qsl(parts.query)).get("password")


def _run_pg(command: list[str], database_url: str) -> str:
    """Runs a PostgreSQL tool (with --no-password, so that a job without a TTY fails at once
    instead of waiting at a prompt); its stdout, or its last line of stderr as the error."""
    env = dict(os.environ)
    password = _password(database_url)
    if password is not None:
        env["PGPASSWORD"] = password
    try:
        done = subprocess.run(  # noqa: S603 - PostgreSQL's own tools, found on the PATH
            command, env=env, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise BackupError(f"cannot run {command[0]}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exited {done.returncode}"
        if password:
            reason = reason.replace(password, "[redacted]")
        raise BackupError(f"{Path(command[0]).name} failed: {reason.strip()}")
    return done.stdout


def _pg_revisions(database_url: str) -> tuple[str, ...]:
    rows = _pg_query(
        database_url,
        "SELECT version_num FROM alembic_version",
        guard="SELECT to_regclass('alembic_version') IS NOT NULL",
    )
    return tuple(sorted(rows))


def _pg_query(database_url: str, sql: str, guard: str | None = None) -> list[str]:
    """The first column of `sql`'s rows; with `guard`, nothing unless `guard` is true first
    (a query naming a table that does not exist fails even where its WHERE is false)."""

    async def query() -> list[str]:
        engine = make_engine(database_url, pool_size=1)
        try:
            async with engine.connect() as conn:
                if guard is not None and not await conn.scalar(text(guard)):
                    return []
                return [str(row[0]) for row in await conn.execute(text(sql))]
        finally:
            await engine.dispose()

    try:
        return asyncio.run(query())
    except Exception as exc:  # the driver's many errors: each is the one line to show
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        reason = str(cause).splitlines()[0] if str(cause) else cause.__class__.__name__
        password = _password(database_url)
        if password:
            reason = reason.replace(password, "[redacted]")
        raise BackupError(f"cannot reach {without_password(database_url)}: {reason}") from None
