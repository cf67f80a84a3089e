"""The SQLite database, its WAL and SHM files and the secret file are readable by their owner
only: together they hold personal data, password hashes and session material."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from hangar.db.engine import make_engine
from hangar.foundation.config import load_settings

ENTRY_POINT = Path(sys.executable).with_name("hangar")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def everyday_umask() -> Iterator[None]:
    # The common default, under which a plainly created file is world-readable (0644).
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_new_database_and_its_secret_are_created_private(
    tmp_path: Path, everyday_umask: None
) -> None:
    db = tmp_path / "data" / "hangar.db"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")},
        "HANGAR_DATABASE_URL": f"sqlite:///{db}",
    }
    done = subprocess.run(  # noqa: S603 (our own entry point)
        [str(ENTRY_POINT), "org", "create", "--name", "Blue Sky Aero"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert db.stat().st_size > 0  # the migrations really wrote into the file we created
    assert mode(db) == 0o600
    assert mode(db.with_name("hangar.db.secret")) == 0o600
    assert mode(db.parent) == 0o700  # the folder hangar made (issue 24: it followed the umask)


async def test_the_wal_and_shm_files_are_private_too(tmp_path: Path, everyday_umask: None) -> None:
    db = tmp_path / "hangar.db"
    load_settings({"HANGAR_DATABASE_URL": f"sqlite:///{db}"})
    engine = make_engine(f"sqlite:///{db}", pool_size=1)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
            await conn.execute(text("INSERT INTO t VALUES (1)"))
            # While a connection is open, the WAL and SHM files exist beside the database.
            for suffix in ("", "-wal", "-shm"):
                assert mode(db.with_name("hangar.db" + suffix)) == 0o600, suffix
    finally:
        await engine.dispose()


def test_files_left_readable_by_an_older_version_are_tightened(tmp_path: Path) -> None:
    db = tmp_path / "hangar.db"
    for suffix in ("", "-wal", "-shm", ".secret"):
        path = db.with_name("hangar.db" + suffix)
        path.write_text("k" * 48 if suffix == ".secret" else "")
        path.chmod(0o644)
    load_settings({"HANGAR_DATABASE_URL": f"sqlite:///{db}"})
    for suffix in ("", "-wal", "-shm", ".secret"):
        assert mode(db.with_name("hangar.db" + suffix)) == 0o600, suffix
