"""hangar behind PgBouncer (issue 40, point 5): not supported, and refused at start in one
line that says so, in session and transaction pooling alike, before anything is migrated.
hangar keeps state on its connections (the worker LISTENs, migrations hold a session lock,
each connection sets its statement timeout at start), and PgBouncer refuses a connection that
sets a parameter at start; the command used to fail with a traceback, after migrating."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from scripts.scratch import free_port
from sqlalchemy import text

from hangar.db.engine import make_engine
from tests.fixtures.environment import PG_URL, SECRET
from tests.fixtures.subprocesses import eventually

PGBOUNCER = shutil.which("pgbouncer") or next(
    (p for p in ("/usr/sbin/pgbouncer",) if os.access(p, os.X_OK)), None
)
pytestmark = [
    pytest.mark.skipif(not PG_URL, reason="PgBouncer pools PostgreSQL"),
    pytest.mark.skipif(PGBOUNCER is None, reason="pgbouncer is not installed (.ci/run does)"),
]
ENTRY_POINT = Path(sys.executable).with_name("hangar")


def pooler_config(pool_mode: str) -> tuple[Path, int]:
    """A folder with PgBouncer's config for `pool_mode` on a free loopback port, in front of
    the tests' PostgreSQL (trusting every user, as the tests' server does), readable by the
    user PgBouncer drops to (it refuses to run as root); and the port."""
    assert PG_URL is not None
    server = urlsplit(PG_URL)
    port = free_port()
    where = Path(tempfile.mkdtemp(prefix="hangar-pgbouncer-"))
    where.chmod(0o755)
    (where / "users.txt").write_text(f'"{server.username}" ""\n')
    (where / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={server.hostname} port={server.port or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\n"
        f"auth_type = trust\nauth_file = {where / 'users.txt'}\n"
        f"pool_mode = {pool_mode}\nunix_socket_dir =\n"
    )
    for made in where.iterdir():
        made.chmod(0o644)
    return where, port


@asynccontextmanager
async def pooler(pool_mode: str) -> AsyncIterator[int]:
    """PgBouncer running in `pool_mode`; its port, once it listens."""
    where, port = pooler_config(pool_mode)
    as_user = ["-u", "postgres"] if os.geteuid() == 0 else []
    assert PGBOUNCER is not None
    process = await asyncio.create_subprocess_exec(
        PGBOUNCER, *as_user, str(where / "pgbouncer.ini"),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip

    async def listening() -> bool:
        assert process.returncode is None, "pgbouncer exited while starting"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        return True

    try:
        await eventually(listening, 10, "pgbouncer listening")
        yield port
    finally:
        process.terminate()
        await process.wait()
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(params=["session", "transaction"])
async def pooled_url(request: pytest.FixtureRequest, blank_database_url: str) -> AsyncIterator[str]:
    """The blank database, reached through PgBouncer in each pool mode."""
    async with pooler(request.param) as port:
        parts = urlsplit(blank_database_url)
        netloc = parts.netloc.rsplit(":", 1)[0] if ":" in parts.netloc else parts.netloc
        yield urlunsplit(parts._replace(netloc=f"{netloc}:{port}"))


@pytest.mark.parametrize("command", [["db", "upgrade"], ["worker"]])
async def test_hangar_refuses_pgbouncer_in_one_line_before_migrating(
    command: list[str], pooled_url: str, blank_database_url: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    env |= {"HANGAR_DATABASE_URL": pooled_url, "HANGAR_SECRET_KEY": SECRET}
    done = await asyncio.to_thread(
        subprocess.run,
        [str(ENTRY_POINT), *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()  # one line, never a traceback
    assert "leads to a connection pooler (PgBouncer)" in line
    assert 'point it at the server (README, "PgBouncer")' in line
    # Nothing was migrated through it.
    direct = make_engine(blank_database_url)
    try:
        async with direct.connect() as conn:
            tables = await conn.scalar(
                text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            )
    finally:
        await direct.dispose()
    assert tables == 0
