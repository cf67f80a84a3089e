"""A restore trusts only what it checks (issue 41, point 4): the manifest must carry the
signature of a key this hangar holds (an HMAC under a key derived from HANGAR_SECRET_KEY or a
previous key), so a backup crafted or altered without the key is refused before SQLite or
pg_restore sees a byte of it; and the database entry must be a plain file of exactly the
manifest's size before anything is written (before, a 10 KB tar with a sparse entry wrote
284 MB, and terabytes were possible), with nothing written beyond that size."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from hangar.db.backup import BackupError, postgresql, restoring
from hangar.db.key_check import Keys, fingerprint
from tests.fixtures.backup_files import into, listing, members, packed, repacked, resigned
from tests.fixtures.cli import Cli
from tests.fixtures.environment import SECRET
from tests.fixtures.key_rotation import NEW_KEY


@pytest.fixture(scope="module")
async def made(cli: Cli) -> Path:
    path = cli.cwd / "signed.tar"
    (await cli.run("backup", str(path))).json()
    return path


def manifest_of(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(members(path)["manifest.json"])
    return found


def with_entry(made: Path, to: Path, entry: tarfile.TarInfo, body: bytes, **change: Any) -> Path:
    """`made` with its database entry replaced by `entry` (and `body`), and its manifest
    changed by `change` and signed again with the right key: what only the key could make."""
    fields = resigned({**manifest_of(made), **change}, SECRET)
    with tarfile.open(to, "w", format=tarfile.PAX_FORMAT) as tar:
        text = json.dumps(fields).encode()
        head = tarfile.TarInfo("manifest.json")
        head.size = len(text)
        tar.addfile(head, io.BytesIO(text))
        tar.addfile(entry, io.BytesIO(body))
    return to


async def test_every_backup_is_signed_and_a_manifest_changed_without_the_key_is_refused(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    assert len(manifest_of(made)["signature"]) == 64
    assert manifest_of(made)["format_version"] == 2
    # Whoever lacks the key changes what the manifest vouches for (here its creation time).
    path = repacked(made, tmp_path / "altered.tar", lambda m: m.update(created_at="2020"), None)
    refused = (await into(cli, tmp_path).run("restore", str(path))).refused()
    assert "no key of this hangar" in refused
    assert "was changed after `hangar backup` wrote it" in refused
    assert "restored.db" not in listing(tmp_path)
    # Signed with another key, the same change is refused too.
    forged = repacked(made, tmp_path / "forged.tar", lambda m: m.update(created_at="2020"), NEW_KEY)
    assert (
        "no key of this hangar" in (await into(cli, tmp_path).run("restore", str(forged))).refused()
    )


async def test_a_previous_key_vouches_for_what_it_signed(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    rotated = into(cli, tmp_path, key=NEW_KEY, HANGAR_SECRET_KEY_PREVIOUS=SECRET)
    assert (await rotated.run("restore", str(made))).json()["webhook_secrets"] == "readable"


async def test_an_unsigned_backup_is_restored_only_when_the_operator_vouches_for_it(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    # What hangar 1.5.0 and earlier wrote: format 1, no signature.
    def format_1(manifest: dict[str, Any]) -> None:
        manifest.update(format_version=1)
        del manifest["signature"]

    path = repacked(made, tmp_path / "old.tar", format_1, None)
    refused = (await into(cli, tmp_path).run("restore", str(path))).refused()
    assert "was made before hangar signed its backups (format 1)" in refused
    assert refused.endswith("pass --allow-other-key if you know this one is yours")
    allowed = await into(cli, tmp_path).run("restore", "--allow-other-key", str(path))
    assert allowed.json()["webhook_secrets"] == "readable"
    assert "nothing vouches for it" in allowed.stderr


async def test_a_sparse_entry_is_refused_before_a_byte_is_written(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    # 10 KB on disk that a reader expands to 300 MB: the manifest says 1 byte.
    entry = tarfile.TarInfo("database.sqlite3")
    entry.size = 1
    entry.pax_headers = {
        "GNU.sparse.major": "0",
        "GNU.sparse.minor": "1",
        "GNU.sparse.map": "0,1",
        "GNU.sparse.size": str(300 * 1024 * 1024),
    }
    path = with_entry(made, tmp_path / "sparse.tar", entry, b"x", size=1)
    assert path.stat().st_size < 20_000
    target = tmp_path / "into"
    refused = (await into(cli, target).run("restore", str(path))).refused()
    assert "its database entry is sparse" in refused
    assert "nothing was written" in refused
    assert listing(target) == []  # no database, no work folder left


async def test_an_entry_bigger_than_the_manifest_says_is_refused_before_writing(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    entry = tarfile.TarInfo("database.sqlite3")
    entry.size = 2 * 1024 * 1024
    path = with_entry(made, tmp_path / "big.tar", entry, b"\0" * entry.size, size=1024)
    target = tmp_path / "into"
    refused = (await into(cli, target).run("restore", str(path))).refused()
    assert "its database entry is 2.0 MiB, where the manifest says 1.0 KiB" in refused
    assert listing(target) == []


def test_a_crafted_postgresql_backup_never_reaches_pg_restore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A dump whose SQL would run as hangar's role; its manifest made without the key.
    dump = b"PGDMP crafted: CREATE FUNCTION owned() ..."
    fields = {
        "format": "hangar-backup",
        "format_version": 2,
        "hangar_version": "1.0.0",
        "database": "postgresql",
        "revisions": ["0001"],
        "created_at": "2026-11-28T00:00:00Z",
        "key_fingerprint": fingerprint(SECRET),
        "previous_key_fingerprints": [],
        "file": "database.pgdump",
        "size": len(dump),
        "sha256": hashlib.sha256(dump).hexdigest(),
        "signature": "0" * 64,
    }
    path = packed(
        tmp_path / "crafted.tar",
        {"manifest.json": json.dumps(fields).encode(), "database.pgdump": dump},
    )
    ran: list[str] = []

    def connected(url: str) -> list[str]:
        ran.append("connected")
        return []

    monkeypatch.setattr(postgresql, "restore", lambda *args: ran.append("pg_restore"))
    monkeypatch.setattr(restoring, "tables", connected)
    with pytest.raises(BackupError, match="no key of this hangar"):
        restoring.restore(
            path,
            "postgresql://hangar@127.0.0.1:1/hangar",
            Keys(SECRET),
            force=False,
            allow_other_key=False,
            progress=lambda line: None,
        )
    assert ran == []
