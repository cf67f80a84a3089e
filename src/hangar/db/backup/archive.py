"""The backup file: an uncompressed tar of `manifest.json`, then the database, written whole
or not at all and read in order, never trusting what the archive says beyond its manifest."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import tarfile
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from hangar.db.backup import BackupError
from hangar.db.backup.manifest import Manifest, damaged, parse
from hangar.foundation.sqlite_files import PRIVATE

MANIFEST = "manifest.json"
MAX_MANIFEST = 64 * 1024  # a manifest is a few hundred bytes; a bigger one is not ours
CHUNK = 1024 * 1024


def private_folder(parent: Path, prefix: str) -> Path:
    # mkdtemp makes it 0700: the copy inside holds every row of the database.
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    except OSError as exc:
        raise BackupError(f"cannot write in {parent}: {exc.strerror}") from None


def digest(path: Path) -> tuple[int, str]:
    sha, size = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            sha.update(chunk)
            size += len(chunk)
    return size, sha.hexdigest()


def size_words(n: int) -> str:
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


# --- writing -------------------------------------------------------------------------------


def pack(packed: Path, manifest: Manifest, copy: Path) -> None:
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


def place(packed: Path, path: Path, *, overwrite: bool) -> None:
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


# --- reading -------------------------------------------------------------------------------


@contextlib.contextmanager
def opened(path: Path) -> Iterator[tarfile.TarFile]:
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
    with opened(path) as archive:
        return manifest_of(path, archive)


def manifest_of(path: Path, archive: tarfile.TarFile) -> Manifest:
    """The manifest of the backup at `path`, its first member, as `archive` is opened."""
    try:
        info = _next_file(archive, MANIFEST)
        small = info is not None and info.size <= MAX_MANIFEST and not info.issparse()
        fh = archive.extractfile(info) if info and small else None
        if fh is None:
            raise damaged(path)
        body = fh.read()
    except (tarfile.TarError, OSError):
        raise damaged(path) from None
    return parse(path, body)


def _next_file(archive: tarfile.TarFile, name: str) -> tarfile.TarInfo | None:
    """The archive's next member if it is the file `name` (read in order: a lookup by name
    would read the whole archive first)."""
    info = archive.next()
    return info if info is not None and info.name == name and info.isfile() else None


def extract(archive: tarfile.TarFile, manifest: Manifest, target: Path) -> None:
    """The database, the member after the manifest, to `target` (never where the archive
    says), its size and checksum those of the manifest. The member is checked before a byte
    is written: a plain file of exactly the manifest's size (a sparse entry of a few bytes
    could stand for terabytes), and no more than that size is ever written."""
    broken = (
        "the backup is damaged (its database is cut short or does not match the manifest's "
        "checksum): restore another one"
    )
    try:
        info = _next_file(archive, manifest.file)
    except (tarfile.TarError, OSError):
        raise BackupError(broken) from None
    if info is not None and (info.issparse() or info.size != manifest.size):
        raise BackupError(
            f"the backup is damaged or was tampered with: its database entry is "
            f"{'sparse' if info.issparse() else size_words(info.size)}, where the manifest "
            f"says {size_words(manifest.size)} of plain file; nothing was written"
        )
    try:
        fh = archive.extractfile(info) if info else None
    except (tarfile.TarError, OSError):
        raise BackupError(broken) from None
    if fh is None:
        raise BackupError(broken)
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
            raise BackupError(broken) from None
    if size != manifest.size or sha.hexdigest() != manifest.sha256:
        raise BackupError(broken)
