"""A rolling restart of hangar behind nginx, under load, counted: each instance in turn is
stopped with SIGTERM (as systemd stops it: the main process only, KillMode=mixed), started
again, and given traffic again before the next one stops, while clients keep sending
requests through nginx. A request fails if it gets no answer or a 5xx; it stalls if its
answer takes longer than STALL_S. A clean restart has neither.

tests/operations/test_rolling_restart.py runs it on PostgreSQL and Redis with two `hangar
serve --workers 2` instances; `./dev smoke` (scripts/smoke_installed.py) runs it with the
installed wheel. Runs outside pytest as well as inside it: nothing here imports tests/.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

STALL_S = 1.0
START_S = 120.0  # a loaded 2-core machine spawning several processes may take a while
# SIGTERM to exit: the grace (hangar.http.server.SHUTDOWN_GRACE_S) and a margin.
STOP_S = 30.0
TRAFFIC_S = 60.0  # until nginx sends a restarted instance requests again (its fail_timeout)

# One request of a client's round, on the client's own connection through nginx.
Request = Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]


@dataclass
class Call:
    started: float  # time.monotonic()
    seconds: float
    method: str
    path: str
    status: int  # 0: no answer (the connection failed)

    def __str__(self) -> str:
        return f"{self.method} {self.path} -> {self.status or 'no answer'} in {self.seconds:.2f} s"


@dataclass
class Instance:
    """One `hangar serve` on a loopback port (a process group of its own)."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path
    port: int
    proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Started, once it answers /api/health/ready directly."""
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                env=self.env,
                cwd=self.cwd,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_S
        async with httpx.AsyncClient(timeout=5) as probe:
            while True:
                if self.proc.returncode is not None:
                    raise RuntimeError(f"hangar serve on {self.port} exited; see {self.log}")
                with contextlib.suppress(httpx.TransportError):
                    ready = await probe.get(f"http://127.0.0.1:{self.port}/api/health/ready")
                    if ready.status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"hangar serve on {self.port} not ready in {START_S:g} s")
                await asyncio.sleep(0.1)

    async def stop(self) -> float:
        """SIGTERM to the main process; the seconds until it exited, cleanly."""
        assert self.proc is not None
        began = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.proc.wait(), STOP_S)
        except TimeoutError:
            raise RuntimeError(
                f"hangar serve on {self.port} still running {STOP_S:g} s after "
                f"SIGTERM; see {self.log}"
            ) from None
        # uvicorn re-raises the signal it caught once it has shut down; the supervisor of
        # several processes exits 0.
        if code not in (0, -signal.SIGTERM):
            raise RuntimeError(f"hangar serve on {self.port} exited {code}; see {self.log}")
        return time.monotonic() - began

    async def kill(self) -> None:
        """Whatever is left of its process group, gone (on the way out, whatever happened)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        await self.proc.wait()


@dataclass
class Result:
    calls: list[Call]
    stops: list[float] = field(default_factory=list)  # each instance's SIGTERM to exit

    @property
    def failed(self) -> list[Call]:
        return [c for c in self.calls if c.status == 0 or c.status >= 500]

    @property
    def stalled(self) -> list[Call]:
        return [c for c in self.calls if c.seconds > STALL_S]

    def summary(self) -> str:
        methods = sorted({c.method for c in self.calls})
        counts = ", ".join(f"{sum(c.method == m for c in self.calls)} {m}" for m in methods)
        slowest = max((c.seconds for c in self.calls), default=0.0)
        stops = ", ".join(f"{s:.1f} s" for s in self.stops)
        return (
            f"{len(self.calls)} requests ({counts}): {len(self.failed)} failed, "
            f"{len(self.stalled)} stalled (> {STALL_S:g} s), slowest {slowest:.2f} s; "
            f"SIGTERM to exit: {stops}"
        )


def answered_by(access_log: Path, offset: int, port: int) -> bool:
    """Whether nginx's access log, past `offset` bytes, shows an answer from the instance on
    `port` (the `upstreams` format of tests/fixtures/deploy.py: status, upstream, ...)."""
    with access_log.open("rb") as log:
        log.seek(offset)
        lines = log.read().decode(errors="replace").splitlines()
    for line in lines:
        status, _, rest = line.partition(" ")
        upstreams = rest.split(" ", 1)[0] if rest else ""
        if upstreams.endswith(f":{port}") and status.isdigit() and int(status) < 500:
            return True
    return False


async def _clients(
    make_client: Callable[[], httpx.AsyncClient],
    rounds: Sequence[Request],
    clients: int,
    pace_s: float,
    done: asyncio.Event,
) -> list[Call]:
    calls: list[Call] = []

    async def one(client: httpx.AsyncClient) -> None:
        while not done.is_set():
            for request in rounds:
                began = time.monotonic()
                try:
                    answer = await request(client)
                    method, path, status = (
                        answer.request.method,
                        answer.request.url.path,
                        answer.status_code,
                    )
                except httpx.TransportError as exc:
                    method, path, status = "?", type(exc).__name__, 0
                calls.append(Call(began, time.monotonic() - began, method, path, status))
                await asyncio.sleep(pace_s)  # bounded load: a few requests a second each

    async with contextlib.AsyncExitStack() as stack:
        opened = [await stack.enter_async_context(make_client()) for _ in range(clients)]
        await asyncio.gather(*(one(client) for client in opened))
    return calls


async def rolling_restart(
    instances: Sequence[Instance],
    make_client: Callable[[], httpx.AsyncClient],
    rounds: Sequence[Request],
    access_log: Path,
    *,
    clients: int = 4,
    pace_s: float = 0.05,
) -> Result:
    """Restarts `instances` one after another while `clients` clients each send `rounds`
    over and over through nginx; every call, counted. The next instance is stopped only
    once nginx has sent the restarted one requests again (it skips a refusing instance for
    its fail_timeout): with both out at once nothing could answer."""
    done = asyncio.Event()
    load = asyncio.create_task(_clients(make_client, rounds, clients, pace_s, done))
    stops: list[float] = []
    try:
        for instance in instances:
            await asyncio.sleep(1.0)  # load on every instance before this one stops
            stops.append(await instance.stop())
            offset = await asyncio.to_thread(lambda: access_log.stat().st_size)
            await instance.start()
            deadline = time.monotonic() + TRAFFIC_S
            while not answered_by(access_log, offset, instance.port):
                if load.done() or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx sent nothing to {instance.port} once restarted")
                await asyncio.sleep(0.1)
    finally:
        done.set()
        calls = await load
    return Result(calls, stops)
