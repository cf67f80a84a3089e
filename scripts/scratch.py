"""What the load check (scripts/load_rate_limits.py) and the test suite both set up on this
machine: a PostgreSQL database of their own, and `hangar serve` processes on loopback.

Runs outside pytest as well as inside it: nothing here imports tests/.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import asyncpg
import httpx

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TRIES = 600  # 0.1 s apart: a loaded 2-core machine may take a while


# Ports the tests, the benchmarks and these scripts listen on. Not the kernel's bind(0): its
# answer is free only now, and it comes from the ephemeral range (32768-60999 on Linux), where
# the outgoing connections of every process on the machine (parallel test workers' among
# them) are numbered too, so another may take it before the server binds. A block of its own
# below that range for each parallel test worker (PYTEST_XDIST_WORKER, inherited by the
# processes it starts, which share it), taken in turn from a random start, keeps parallel
# workers from being handed the same port.
PORTS_FROM = 20_000
PORTS_PER_WORKER = 500
WORKER_BLOCKS = (32_768 - PORTS_FROM) // PORTS_PER_WORKER
_turn = itertools.count(random.randrange(PORTS_PER_WORKER))


def free_port() -> int:
    """A loopback port nothing listens on, from this process's block (see above)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    block = PORTS_FROM + index % WORKER_BLOCKS * PORTS_PER_WORKER
    for _ in range(PORTS_PER_WORKER):
        port = block + next(_turn) % PORTS_PER_WORKER
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use, or still closing: the next one
        return port
    raise RuntimeError(f"no free loopback port in {block}-{block + PORTS_PER_WORKER - 1}")


async def admin(url: str, sql: str) -> None:
    """Runs `sql` on the PostgreSQL server of `url`, outside any transaction."""
    conn = await asyncpg.connect(url.replace("postgresql://", "postgres://", 1))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def scratch_database(server_url: str, prefix: str) -> AsyncIterator[str]:
    """A new, empty database named `prefix` and a random suffix on the server of
    `server_url`; its URL. Dropped on the way out, connections or not."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    base, _, _ = server_url.rpartition("/")
    await admin(server_url, f'CREATE DATABASE "{name}"')
    try:
        yield f"{base}/{name}"
    finally:
        await admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.asynccontextmanager
async def two_servers(env: Mapping[str, str], log: Path) -> AsyncIterator[list[str]]:
    """Two `hangar serve --no-worker` processes on free loopback ports with `env`, their
    standard error appended to `log`; their base URLs once both answer /api/health. Stopped
    on the way out (killed if one has not ended 10 s after being asked to)."""
    hangar = str(Path(sys.executable).parent / "hangar")
    ports = [free_port(), free_port()]
    procs = [
        await asyncio.create_subprocess_exec(
            hangar,
            "serve",
            "--no-worker",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            cwd=ROOT,
            env=dict(env),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log.open("ab"),
        )
        for port in ports
    ]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        async with httpx.AsyncClient(timeout=5) as probe:
            for base in bases:
                for _ in range(STARTUP_TRIES):
                    with contextlib.suppress(httpx.HTTPError):
                        if (await probe.get(f"{base}/api/health")).status_code == 200:
                            break
                    await asyncio.sleep(0.1)
                else:
                    raise RuntimeError(f"hangar serve on {base} did not come up; see {log}")
        yield bases
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.terminate()
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
