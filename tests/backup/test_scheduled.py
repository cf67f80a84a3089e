"""Backups on a schedule (issue 40): `hangar backup FOLDER --keep N`, as deploy/'s timer runs
it, writes a backup named for its UTC time and keeps the newest N of those (nothing else in
the folder is touched); and a restore refuses, before writing anything, when the disk lacks
room for it."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hangar.db.backup import BackupError, restoring
from hangar.db.backup.archive import read_manifest
from hangar.db.engine import make_engine
from hangar.db.key_check import Keys
from hangar.db.migrate import upgrade_async
from tests.fixtures.environment import SECRET
from tests.fixtures.key_rotation import hangar_with

OLDER = [
    "hangar-20260101T000000Z.tar",
    "hangar-20260102T000000Z.tar",
    "hangar-20260103T000000Z.tar",
]
NOT_OURS = ["hangar-manual.tar", "notes.txt", "hangar-20260101T000000Z.tar.part"]


async def test_a_scheduled_backup_keeps_the_newest_n_and_nothing_else_goes(
    blank_database_url: str, tmp_path: Path
) -> None:
    await upgrade_async(blank_database_url)
    engine = make_engine(blank_database_url)
    try:
        folder = tmp_path / "backups"
        folder.mkdir()
        for name in OLDER + NOT_OURS:
            (folder / name).write_text("an older file")
        cli = hangar_with(engine, blank_database_url, tmp_path, SECRET)
        made = (await cli.run("backup", str(folder), "--keep", "2")).json()
        written = Path(made["backup"])
        assert written.parent == folder
        assert re.fullmatch(r"hangar-\d{8}T\d{6}Z\.tar", written.name)
        assert made["pruned"] == OLDER[:2]
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            [OLDER[2], written.name, *NOT_OURS]
        )
        # What it wrote is a backup like any other.
        assert read_manifest(written).revisions == tuple(made["revisions"])

        refusals = [
            (await cli.run("backup", str(folder), "--keep", "0")).refused(),
            (await cli.run("backup", str(written), "--keep", "2")).refused(),
        ]
        assert refusals == [
            "hangar: --keep must be 1 or more backups, not 0",
            f"hangar: with --keep, PATH is the folder the backups go to: {written} is not a folder",
        ]
    finally:
        await engine.dispose()


async def test_a_restore_without_room_for_it_writes_nothing(
    blank_database_url: str, restored_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await upgrade_async(blank_database_url)
    engine = make_engine(blank_database_url)
    try:
        backup = tmp_path / "b.tar"
        cli = hangar_with(engine, blank_database_url, tmp_path, SECRET)
        assert (await cli.run("backup", str(backup))).code == 0
    finally:
        await engine.dispose()
    size = read_manifest(backup).size

    def nearly_full(folder: Any) -> Any:
        return SimpleNamespace(total=10**12, used=10**12 - size, free=size)

    monkeypatch.setattr(shutil, "disk_usage", nearly_full)
    # In a thread of its own, as the command runs it: it runs event loops of its own.
    with pytest.raises(BackupError) as refused:
        await asyncio.to_thread(
            restoring.restore,
            backup,
            restored_url,
            Keys(SECRET),
            force=False,
            allow_other_key=False,
            progress=lambda _: None,
        )
    assert "restoring needs about " in str(refused.value)
    assert str(refused.value).endswith("free some space there, or restore somewhere with more")
    assert await asyncio.to_thread(restoring.tables, restored_url) == []
