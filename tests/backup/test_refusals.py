"""What `hangar backup` and `hangar restore` refuse, each with one line on stderr, a non-zero
exit and nothing on stdout (never a traceback): what is not a backup, a damaged one, a newer
release's, the other database's, another key's, and a target that holds a database. And what
a backup is: one private file, a manifest and a self-contained SQLite copy (no WAL)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hangar import __version__
from hangar.db.migrate import code_revisions
from tests.fixtures.backup_files import into, listing, members, mode, packed, repacked, written
from tests.fixtures.cli import Cli
from tests.fixtures.environment import SECRET
from tests.fixtures.key_rotation import NEW_KEY


@pytest.fixture(scope="module")
async def made(cli: Cli) -> Path:
    """A backup of the module's database (upgraded, with one organization)."""
    path = cli.cwd / "made.tar"
    (await cli.run("backup", str(path))).json()
    return path


async def test_a_backup_is_one_private_file_a_manifest_and_a_self_contained_copy(
    cli: Cli, made: Path
) -> None:
    assert mode(made) == 0o600
    found = members(made)
    assert list(found) == ["manifest.json", "database.sqlite3"]
    manifest = json.loads(found["manifest.json"])
    assert manifest["hangar_version"] == __version__
    assert set(manifest["revisions"]) == code_revisions().heads
    assert manifest["database"] == "sqlite"
    assert SECRET not in found["manifest.json"].decode()
    # Bytes 18 and 19 of a SQLite header are 2 in WAL mode: the copy is in rollback mode, one
    # file, whatever the source's -wal held.
    copy = found["database.sqlite3"]
    assert copy[:16] == b"SQLite format 3\x00"
    assert copy[18:20] == b"\x01\x01"
    # No temporary file is left beside it.
    assert [name for name in listing(made.parent) if name.startswith(".hangar")] == []


async def test_an_existing_path_is_kept_unless_overwrite(cli: Cli, made: Path) -> None:
    before = members(made)
    refused = (await cli.run("backup", str(made))).refused()
    assert refused == f"hangar: {made} exists: name a new file, or pass --overwrite to replace it"
    assert members(made) == before
    copy = packed(made.with_name("again.tar"), {"old": b"old"})
    (await cli.run("backup", "--overwrite", str(copy))).json()
    assert members(copy)["manifest.json"]


async def test_a_missing_database_is_not_backed_up(cli: Cli, tmp_path: Path) -> None:
    absent = tmp_path / "absent.db"
    env = {"HANGAR_DATABASE_URL": f"sqlite:///{absent}"}
    refused = (await cli.run("backup", str(tmp_path / "b.tar"), env=env)).refused()
    assert refused.startswith(f"hangar: no database at {absent}: set HANGAR_DATABASE_URL")
    assert listing(tmp_path) == []  # neither a database nor a key made on the way


async def test_a_restore_into_a_new_file_finds_the_rows(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    restored = (await into(cli, tmp_path).run("restore", str(made))).json()
    assert restored["webhook_secrets"] == "readable"
    assert mode(tmp_path / "restored.db") == 0o600
    with sqlite3.connect(tmp_path / "restored.db") as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM organizations")]
    assert names == [cli.org["name"]]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no backup at"),
        (b"", "is not a hangar backup"),
        (b"PK\x03\x04 a zip file, not ours" * 40, "is not a hangar backup"),
        ({"notes.txt": b"hello"}, "is damaged or not a hangar backup"),
        ({"manifest.json": b"{not json"}, "is damaged or not a hangar backup"),
        ({"manifest.json": b"[1, 2]"}, "is damaged or not a hangar backup"),
        ({"manifest.json": b'{"format": "other"}'}, "is damaged or not a hangar backup"),
    ],
    ids=["missing", "empty", "not a tar", "no manifest", "bad JSON", "a list", "other format"],
)
async def test_what_is_not_a_backup_is_one_line(
    cli: Cli, tmp_path: Path, content: bytes | dict[str, bytes] | None, expected: str
) -> None:
    path = tmp_path / "given.tar"
    if isinstance(content, bytes):
        written(path, content)
    elif content is not None:
        packed(path, content)
    refused = (await into(cli, tmp_path).run("restore", str(path))).refused()
    assert refused.startswith("hangar: ")
    assert expected in refused
    assert "restored.db" not in listing(tmp_path)


def _drop(name: str) -> Callable[[dict[str, Any]], object]:
    return lambda manifest: manifest.pop(name)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_drop("revisions"), "is damaged or not a hangar backup"),
        (lambda m: m.update(size="12"), "is damaged or not a hangar backup"),
        (lambda m: m.update(file="../../etc/passwd"), "is damaged or not a hangar backup"),
        (lambda m: m.update(sha256="0" * 64), "the backup is damaged"),
        (lambda m: m.update(hangar_version="99.0.0"), "made by hangar 99.0.0, newer than"),
        (lambda m: m.update(revisions=["9999_later"]), "revision 9999_later) is newer"),
        (lambda m: m.update(format_version=3), "newer backup format (3)"),
    ],
    ids=["no revisions", "size", "a path", "checksum", "newer release", "newer schema", "format"],
)
async def test_a_damaged_or_newer_backup_is_refused(
    cli: Cli, made: Path, tmp_path: Path, change: Callable[[dict[str, Any]], object], expected: str
) -> None:
    path = repacked(made, tmp_path / "changed.tar", change)
    refused = (await into(cli, tmp_path).run("restore", str(path))).refused()
    assert expected in refused
    if "newer" in expected:
        assert "restore it with" in refused
    assert "restored.db" not in listing(tmp_path)


async def test_a_backup_cut_short_is_refused(cli: Cli, made: Path, tmp_path: Path) -> None:
    whole = packed(tmp_path / "whole.tar", members(made))
    path = written(
        tmp_path / "short.tar", whole.read_bytes()[: len(members(made)["manifest.json"]) + 8192]
    )
    refused = (await into(cli, tmp_path).run("restore", str(path))).refused()
    assert "hangar: the backup is damaged" in refused


async def test_a_sqlite_backup_is_not_restored_into_postgresql(cli: Cli, made: Path) -> None:
    # Refused before anything connects: no server needs to answer at this address.
    env = {"HANGAR_DATABASE_URL": "postgresql://hangar:pw-never-shown@127.0.0.1:1/hangar"}
    refused = (await cli.run("restore", str(made), env=env)).refused()
    assert refused == (
        "hangar: this is a SQLite backup and HANGAR_DATABASE_URL names a PostgreSQL database: "
        "restore it into a SQLite one"
    )


async def test_another_key_is_refused_unless_allowed(cli: Cli, made: Path, tmp_path: Path) -> None:
    other = into(cli, tmp_path, key=NEW_KEY)
    refused = (await other.run("restore", str(made))).refused()
    assert refused.startswith("hangar: HANGAR_SECRET_KEY is another key: ")
    assert refused.endswith(
        "or pass --allow-other-key to restore anyway with every webhook secret unreadable"
    )
    assert NEW_KEY not in refused
    assert SECRET not in refused
    assert "restored.db" not in listing(tmp_path)
    # The key it was made with, listed as a previous key, opens its secrets.
    previous = into(cli, tmp_path, key=NEW_KEY, HANGAR_SECRET_KEY_PREVIOUS=SECRET)
    assert (await previous.run("restore", str(made))).json()["webhook_secrets"] == "readable"
    forced = into(cli, tmp_path / "b", key=NEW_KEY)
    allowed = await forced.run("restore", "--allow-other-key", str(made))
    assert allowed.json()["webhook_secrets"] == "unreadable"
    assert "the database now names HANGAR_SECRET_KEY as its key" in allowed.stderr
    # The backup's key is given up: processes with the new key start (issue 40's key check),
    # and one with the backup's key no longer does.
    assert (await forced.run("db", "upgrade")).code == 0
    backups_key = into(cli, tmp_path / "b")
    assert (
        "is not the key this database's secrets"
        in (await backups_key.run("db", "upgrade")).refused()
    )


async def test_a_new_sqlite_file_without_a_key_names_the_key_file(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    keyless = into(cli, tmp_path)
    env = {k: v for k, v in keyless.env.items() if k != "HANGAR_SECRET_KEY"}
    bare = Cli(keyless.url, env, tmp_path, cli.engine, keyless.upgraded, {})
    refused = (await bare.run("restore", str(made))).refused()
    assert "no secret key is set" in refused
    assert "copy its key file beside the database as restored.db.secret" in refused
    assert listing(tmp_path) == []  # no key was made for it on the way
    written(tmp_path / "restored.db.secret", SECRET.encode() + b"\n")
    assert (await bare.run("restore", str(made))).json()["webhook_secrets"] == "readable"


async def test_a_database_with_tables_is_replaced_only_with_force(
    cli: Cli, made: Path, tmp_path: Path
) -> None:
    target = into(cli, tmp_path)
    (await target.run("restore", str(made))).json()
    # Closed, not only committed: a process holding the file open is a hangar using it.
    with contextlib.closing(sqlite3.connect(tmp_path / "restored.db")) as conn, conn:
        conn.execute("UPDATE organizations SET name = 'changed since'")
    refused = (await target.run("restore", str(made))).refused()
    assert refused.endswith("already holds a database: restore into a new one (a new path, or "
                            "an empty database made with createdb), or stop hangar and pass "
                            "--force to replace it")  # fmt: skip
    (await target.run("restore", "--force", str(made))).json()
    with sqlite3.connect(tmp_path / "restored.db") as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM organizations")]
    assert names == [cli.org["name"]]
