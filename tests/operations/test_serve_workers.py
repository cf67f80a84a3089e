"""`hangar serve --workers N`: N server processes on one port and one worker process beside
them (uvicorn's supervisor, hangar.cli.processes), refused where it cannot work.

The processes are observed from outside, through Linux's /proc: which process accepted each
connection, and which holds the one LISTEN connection a worker keeps on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest
from scripts.scratch import free_port

from hangar.cli.cores import available_cores
from hangar.cli.processes import environment, process_count
from hangar.foundation.config import Settings, load_settings
from tests.fixtures.environment import PG_URL, REDIS_URL, SECRET
from tests.fixtures.procfs import children, client_ports, server_side
from tests.fixtures.subprocesses import eventually, started, until_healthy

ENTRY_POINT = Path(sys.executable).with_name("hangar")
STARTUP_S = 90.0


def hangar(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")}
    return subprocess.run(  # noqa: S603 (our own entry point)
        [str(ENTRY_POINT), *args],
        env=clean | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_several_processes_on_sqlite_are_refused_saying_why_and_what_instead(
    tmp_path: Path,
) -> None:
    db = tmp_path / "hangar.db"
    done = hangar(
        "serve", "--workers", "2", env={"HANGAR_DATABASE_URL": f"sqlite:///{db}"}, cwd=tmp_path
    )
    assert done.returncode != 0
    [line] = done.stderr.splitlines()
    assert line.startswith("hangar: --workers 2 needs PostgreSQL: SQLite takes one writer")
    assert "--workers 1" in line
    assert "HANGAR_DATABASE_URL" in line
    assert done.stdout == ""


def test_several_processes_without_redis_are_refused(tmp_path: Path) -> None:
    # Refused before any connection is tried: no database need answer at this address.
    env = {"HANGAR_DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none"}
    env["HANGAR_SECRET_KEY"] = SECRET
    done = hangar("serve", "--workers", "3", env=env, cwd=tmp_path)
    assert done.returncode != 0
    [line] = done.stderr.splitlines()
    assert line.startswith("hangar: --workers 3 needs HANGAR_REDIS_URL")


def test_workers_is_a_count_or_auto(tmp_path: Path) -> None:
    env = {"HANGAR_DATABASE_URL": f"sqlite:///{tmp_path / 'hangar.db'}"}
    done = hangar("serve", "--workers", "0", env=env, cwd=tmp_path)
    assert done.returncode != 0
    assert done.stderr.splitlines() == [
        "hangar: --workers must be a number of processes (1 or more) or auto, not '0'"
    ]
    assert [process_count(v) for v in ("-2", "two", "1.5", "")] == [None] * 4


def test_auto_is_one_process_per_core_this_process_may_use() -> None:
    # The affinity capped by a cgroup's CPU quota: tests/operations/test_cores.py.
    assert process_count("auto") == available_cores()
    assert 1 <= available_cores() <= len(os.sched_getaffinity(0))
    assert process_count("AUTO") == process_count("auto")
    assert process_count("4") == 4


def test_the_server_processes_read_back_the_settings_the_parent_checked() -> None:
    checked = Settings(
        database_url="postgresql://hangar@db.internal/hangar",
        secret_key=SECRET,
        public_url="https://hangar.example.org",
        service_domain="calendar.example.org",
        redis_url="redis://cache.internal:6379/2",
        redis_prefix="blue",
        delivery_retention_days=7,
        trusted_proxies=(ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128")),
        smtp_url="smtps://hangar:secret@mail.example.org:465",
        mail_from="Hangar <hangar@example.org>",
    )
    assert load_settings(environment(checked)) == checked
    nobody_trusted = Settings(
        database_url=checked.database_url, secret_key=SECRET, trusted_proxies=()
    )
    assert load_settings(environment(nobody_trusted)) == nobody_trusted
    without_redis = Settings(database_url=checked.database_url, secret_key=SECRET)
    assert load_settings(environment(without_redis)) == without_redis


async def listeners_held_by(database_url: str, pids: list[int]) -> dict[int, int]:
    """{client port: pid} of the LISTEN connections (a worker's) held by any of `pids`."""
    conn = await asyncpg.connect(database_url.replace("postgresql://", "postgres://", 1))
    try:
        ports = await conn.fetch(
            "SELECT client_port FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'LISTEN %'"
        )
    finally:
        await conn.close()
    held: dict[int, int] = {}
    for pid in pids:
        mine = client_ports(pid)
        held |= {row["client_port"]: pid for row in ports if row["client_port"] in mine}
    return held


async def accepting_processes(port: int, pids: list[int], want: int) -> set[int]:
    """The processes among `pids` that accept connections to `port`: connections are opened
    and kept (each after one request, so it has been accepted) until `want` distinct
    processes have one, or 60 connections were not enough."""
    held: list[asyncio.StreamWriter] = []
    found: set[int] = set()
    try:
        for _ in range(60):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            held.append(writer)
            writer.write(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert (await asyncio.wait_for(reader.readline(), 30)).startswith(b"HTTP/1.1 200")
            owner = server_side(port, writer.get_extra_info("sockname")[1], pids)
            assert owner is not None
            found.add(owner)
            if len(found) == want:
                break
    finally:
        for writer in held:
            writer.close()
    return found


@pytest.mark.skipif(not (PG_URL and REDIS_URL), reason="needs PostgreSQL and Redis")
@pytest.mark.parametrize(("no_worker", "dispatchers"), [(False, 1), (True, 0)])
async def test_two_server_processes_share_the_port_and_one_worker_runs_beside_them(
    database_url: str, tmp_path: Path, repo_root: Path, no_worker: bool, dispatchers: int
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANGAR_")} | {
        "HANGAR_DATABASE_URL": database_url,
        "HANGAR_SECRET_KEY": SECRET,
        "HANGAR_REDIS_URL": REDIS_URL or "",
        "HANGAR_REDIS_PREFIX": f"hangar-workers-{uuid.uuid4().hex[:12]}",
    }
    argv = [str(ENTRY_POINT), "serve", "--workers", "2", "--port", str(port)]
    argv += ["--no-worker"] if no_worker else []
    async with started(argv, env, tmp_path / "serve.log", tmp_path) as server:
        await until_healthy(f"http://127.0.0.1:{port}", server, STARTUP_S)
        await eventually(
            lambda: server.output().count("Application startup complete") == 2,
            STARTUP_S,
            "both server processes started",
        )
        spawned = children(server.pid)
        servers = await accepting_processes(port, spawned, want=2)
        assert len(servers) == 2, f"one process accepted every connection: {servers}"

        if dispatchers:
            # The worker's LISTEN connection is up once it has started: poll for it.
            await eventually(
                lambda: listeners_held_by(database_url, spawned),
                STARTUP_S,
                "the worker process listening",
            )
        listening = await listeners_held_by(database_url, spawned)
        assert len(listening) == dispatchers, server.output()
        # ...held by a process of its own, not by a server process
        assert not set(listening.values()) & servers
        assert server.output().count("Started worker process") == dispatchers
        if not dispatchers:
            return

        # A worker process that dies is replaced, still one.
        [worker] = listening.values()
        os.kill(worker, signal.SIGKILL)

        async def replaced() -> bool:
            now = await listeners_held_by(database_url, children(server.pid))
            return bool(now) and worker not in now.values()

        await eventually(replaced, STARTUP_S, "a new worker process listening")
        assert len(await listeners_held_by(database_url, children(server.pid))) == 1
