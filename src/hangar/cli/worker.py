"""`hangar worker`: the process that runs the webhook dispatcher and the scheduler."""

from __future__ import annotations

import asyncio

from hangar.cli.common import migrated_settings


def worker() -> None:
    """Run only the webhook dispatcher and the scheduler (any number, against PostgreSQL)."""
    import logging

    from hangar.process import Worker
    from hangar.services import build_services

    current = migrated_settings()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    async def main() -> None:
        services = build_services(current)
        try:
            await Worker(services).run_forever()
        finally:
            await services.close()

    asyncio.run(main())
