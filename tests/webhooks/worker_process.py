"""A real worker process for the crash test: the production Worker, whose sender reaches the
test's loopback receiver through an injected resolver and address rule (argv: port)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trustme

from hangar.config import load_settings
from hangar.services import build_services
from hangar.webhooks.sender import Sender
from hangar.webhooks.worker import Worker
from tests.conftest import SECRET
from tests.support import FakeResolver
from tests.webhooks.conftest import HOST, loopback_only


async def main() -> None:
    resolver = FakeResolver({HOST: ["127.0.0.1"]})
    services = build_services(load_settings())
    # SSL_CERT_FILE (set by the test) makes the default context trust the test CA.
    worker = Worker(services, Sender(resolver, is_allowed=loopback_only))
    print("worker ready", flush=True)
    await worker.run_forever()


@asynccontextmanager
async def worker_process(
    database_url: str, ca: trustme.CA, tmp_path: Path, repo_root: Path
) -> AsyncIterator[asyncio.subprocess.Process]:
    """This module as a separate, ready worker process; killed on the way out if still alive."""
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    env = {
        **os.environ,
        "HANGAR_DATABASE_URL": database_url,
        "HANGAR_SECRET_KEY": SECRET,
        "SSL_CERT_FILE": str(ca_file),
        "PYTHONPATH": str(repo_root),
    }
    env.pop("HANGAR_REDIS_URL", None)
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.webhooks.worker_process",
        cwd=repo_root,
        env=env,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert worker.stdout is not None
        assert (await asyncio.wait_for(worker.stdout.readline(), 30)).strip() == b"worker ready"
        yield worker
    finally:
        if worker.returncode is None:
            worker.kill()
            await worker.wait()


async def kill_when(worker: asyncio.subprocess.Process, ready: Callable[[], bool]) -> None:
    """SIGKILL, as soon as `ready()` (the receiver holds the requests in flight)."""
    for _ in range(400):
        if ready():
            break
        await asyncio.sleep(0.05)
    assert ready(), "the worker's attempts never reached the receiver"
    worker.send_signal(signal.SIGKILL)
    await worker.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
