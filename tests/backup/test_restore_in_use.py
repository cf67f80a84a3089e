"""`hangar restore --force` never replaces a database a hangar still uses (issue 40): on
PostgreSQL it sees hangar's connections in pg_stat_activity (each named `hangar`), on SQLite
the processes holding the file open, names how it knows, and restores once they are gone."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from sqlalchemy import text

from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade_async
from hangar.foundation.sqlite_files import sqlite_path
from tests.fixtures.environment import SECRET
from tests.fixtures.key_rotation import hangar_with


async def test_a_database_in_use_is_not_replaced_until_its_hangar_stops(
    blank_database_url: str, restored_url: str, tmp_path: Path
) -> None:
    await upgrade_async(blank_database_url)
    source, target = make_engine(blank_database_url), make_engine(restored_url)
    holder: asyncio.subprocess.Process | None = None
    try:
        backup = tmp_path / "b.tar"
        assert (await hangar_with(source, blank_database_url, tmp_path, SECRET).run(
            "backup", str(backup)
        )).code == 0  # fmt: skip
        await source.dispose()
        cli = hangar_with(target, restored_url, tmp_path, SECRET)
        assert (await cli.run("restore", str(backup))).code == 0

        # A hangar using the restored database: a process holding the SQLite file open, or
        # a connection as hangar names its own on PostgreSQL.
        path = sqlite_path(restored_url)
        if path is not None:
            holder = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                "c.execute('SELECT 1').fetchall(); print('open', flush=True); sys.stdin.read()",
                str(path),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            assert holder.stdout is not None
            assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"open\n"
            how = f"1 processes holding the file open: {holder.pid}"
        else:
            held = await target.connect()
            await held.execute(text("SELECT 1"))
            how = "connections named hangar/VERSION in pg_stat_activity"
        refused = (await cli.run("restore", "--force", str(backup))).refused()
        assert "is in use by hangar (" in refused
        assert how in refused
        assert refused.endswith("stop every hangar process that uses it, then restore")

        if holder is not None:
            assert holder.stdin is not None
            holder.stdin.close()
            await asyncio.wait_for(holder.wait(), 30)
        else:
            await held.close()
            await target.dispose()
        replaced = await cli.run("restore", "--force", str(backup))
        assert replaced.code == 0, replaced.stderr
    finally:
        if holder is not None and holder.returncode is None:
            holder.kill()
            await holder.wait()
        await target.dispose()
