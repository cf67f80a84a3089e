"""A real worker process for the crash test: the production Worker, whose sender reaches the
test's loopback receiver through an injected resolver and address rule (argv: port)."""

from __future__ import annotations

import asyncio
import sys

from hangar.config import load_settings
from hangar.services import build_services
from hangar.webhooks.sender import Sender
from hangar.webhooks.worker import Worker
from tests.support import FakeResolver
from tests.webhooks.conftest import HOST, loopback_only


async def main() -> None:
    resolver = FakeResolver({HOST: ["127.0.0.1"]})
    services = build_services(load_settings())
    # SSL_CERT_FILE (set by the test) makes the default context trust the test CA.
    worker = Worker(services, Sender(resolver, is_allowed=loopback_only))
    print("worker ready", flush=True)
    await worker.run_forever()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
