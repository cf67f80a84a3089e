"""`hangar worker`: the process that runs the webhook dispatcher and the scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from hangar.cli.common import fail, migrated_settings
from hangar.foundation.config import Settings

if TYPE_CHECKING:
    from socket import socket

    from hangar.webhooks.delivery.sender import Sender

# Makes the worker's Sender inside the worker's process. Only tests pass one (a sender that
# reaches their loopback receivers); it must be a module-level function, so that it can be
# handed to a spawned process.
SenderFactory = Callable[[], "Sender"]


def worker(
    metrics_port: Annotated[
        int | None,
        typer.Option(
            metavar="PORT",
            help="Serve this worker's GET /metrics on this port (needs HANGAR_METRICS_TOKEN); "
            "unset, the worker serves none",
        ),
    ] = None,
    metrics_host: Annotated[
        str,
        typer.Option(metavar="ADDRESS", help="Address the metrics listen on"),
    ] = "127.0.0.1",
) -> None:
    """Run only the webhook dispatcher and the scheduler (any number, against PostgreSQL).

    With --metrics-port, the worker also serves GET /metrics: its delivery and scheduler
    counters and the queue's gauges, under the names `hangar serve` uses, to `Authorization:
    Bearer` with HANGAR_METRICS_TOKEN. Scrape each worker on its own port. There too, GET
    /api/health/live (no token) answers 200 while its dispatcher and scheduler run: a
    liveness probe.
    """
    current = migrated_settings()
    listener = None
    if metrics_port is not None:
        from hangar.wiring.worker_metrics import listen

        if not current.metrics_token:
            fail(
                "--metrics-port needs HANGAR_METRICS_TOKEN: the worker's metrics are served "
                "to its bearer only; set it as for hangar serve, or leave --metrics-port out"
            )
        try:
            listener = listen(metrics_host, metrics_port)
        except OSError as exc:
            fail(
                f"cannot serve the worker's metrics on {metrics_host}:{metrics_port}: "
                f"{os.strerror(exc.errno) if exc.errno else exc}; choose another "
                "--metrics-port or --metrics-host"
            )
    run_worker(current, metrics=listener, announce=True)


def run_worker(
    current: Settings,
    sender: SenderFactory | None = None,
    *,
    metrics: socket | None = None,
    announce: bool = False,
) -> None:
    """The worker until SIGTERM or SIGINT, then it finishes what it has under way: `hangar
    worker`, and the one process `hangar serve --workers N` starts beside its servers (whose
    start line and metrics are the instance's). `metrics`: a listening socket to serve GET
    /metrics on; `announce`: log the start line."""
    from hangar.logs import formats
    from hangar.logs.start_line import log_start
    from hangar.wiring.container import build_services
    from hangar.wiring.worker import Worker
    from hangar.wiring.worker_metrics import address, serving_metrics

    formats.configure(current.log_format, "worker", current.log_level)
    if announce:
        log_start(
            current,
            "worker",
            processes=None,
            delivers_webhooks=True,
            metrics=address(metrics) if metrics is not None else "off",
        )

    async def main() -> None:
        # No client waits on the worker: a checkout spares the round trip (hangar.db.engine).
        services = build_services(current, answers_clients=False)
        try:
            async with contextlib.AsyncExitStack() as stack:
                worker = Worker(services, sender() if sender else None)
                if metrics is not None:
                    await stack.enter_async_context(
                        serving_metrics(services, metrics, current.log_level, worker.failure)
                    )
                await worker.run_forever()
        finally:
            await services.close()

    asyncio.run(main())
