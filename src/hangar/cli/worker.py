"""`hangar worker`: the process that runs the webhook dispatcher and the scheduler."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from hangar.cli.common import migrated_settings
from hangar.foundation.config import Settings

if TYPE_CHECKING:
    from hangar.webhooks.sender import Sender

# Makes the worker's Sender inside the worker's process. Only tests pass one (a sender that
# reaches their loopback receivers); it must be a module-level function, so that it can be
# handed to a spawned process.
SenderFactory = Callable[[], "Sender"]


def worker() -> None:
    """Run only the webhook dispatcher and the scheduler (any number, against PostgreSQL)."""
    run_worker(migrated_settings())


def run_worker(current: Settings, sender: SenderFactory | None = None) -> None:
    """The worker until SIGTERM or SIGINT, then it finishes what it has under way: `hangar
    worker`, and the one process `hangar serve --workers N` starts beside its servers."""
    from hangar.logs import formats
    from hangar.wiring.container import build_services
    from hangar.wiring.worker import Worker

    formats.configure(current.log_format, "worker")

    async def main() -> None:
        services = build_services(current)
        try:
            await Worker(services, sender() if sender else None).run_forever()
        finally:
            await services.close()

    asyncio.run(main())
