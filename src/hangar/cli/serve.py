"""`hangar serve`: the API (and, unless --no-worker, the worker beside it), in one process,
or with --workers N in N server processes on one port (hangar.cli.processes)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Annotated

import typer

from hangar.cli.common import HostOption, PortOption, fail, migrated_settings, settings
from hangar.cli.worker import SenderFactory
from hangar.foundation.config import Settings
from hangar.http.limits import ServerLimits


def serve(
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    workers: Annotated[
        str,
        typer.Option(
            metavar="N|auto",
            help="Server processes on the port: a number, or auto (one per core). "
            "More than 1 needs PostgreSQL and Redis",
        ),
    ] = "1",
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="Serve only; run no webhook dispatcher here")
    ] = False,
) -> None:
    """Migrate the database to head, then serve the API.

    SIGTERM (or SIGINT) stops it gracefully: every process stops accepting connections at
    once and /api/health/ready answers 503; requests in flight get up to 10 s to finish, and
    any still running then is answered 503 SERVICE_UNAVAILABLE with Retry-After (README,
    "Restarts and outages")."""
    from hangar.cli.processes import process_count, refusal

    count = process_count(workers)
    if count is None:
        fail(f"--workers must be a number of processes (1 or more) or auto, not {workers!r}")
    if count > 1:
        reason = refusal(settings(), count)
        if reason:
            fail(reason)
    refuse_a_taken_address(host, port)
    run_server(migrated_settings(), host, port, workers=count, with_worker=not no_worker)


def refuse_a_taken_address(host: str, port: int) -> None:
    """One line naming what to do when the address is taken (uvicorn's own says only that it
    is), before the database is migrated. Another process may still take it in between: then
    uvicorn's line is the answer."""
    from hangar.wiring.worker_metrics import listen

    try:
        listen(host, port).close()
    except OSError as exc:
        fail(
            f"cannot serve on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc}; "
            "stop what listens there, or choose another --port or --host"
        )


def run_server(
    current: Settings,
    host: str,
    port: int,
    *,
    workers: int = 1,
    with_worker: bool = True,
    limits: ServerLimits | None = None,
    sender: SenderFactory | None = None,
) -> None:
    """Serves until stopped (SIGTERM, SIGINT); `serve` and `demo` both end here. `limits`:
    the defaults of hangar.http.limits unless a test shortens the timeouts (one process
    only). `sender`: the production one unless a test delivers to loopback."""
    if workers > 1:
        from hangar.cli.processes import serve_processes

        if limits is not None:
            raise ValueError("shortened limits are for one process only")
        serve_processes(current, host, port, workers, with_worker=with_worker, sender=sender)
        return

    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    from hangar.app import create_app
    from hangar.http.server import Server, uvicorn_options, warn_if_exposed
    from hangar.logs import formats
    from hangar.logs.start_line import log_start

    app = create_app(settings=current, with_worker=with_worker, sender=sender() if sender else None)

    def stop_worker() -> None:
        # Called from the signal handler, on the thread of the app's event loop.
        worker = app.state.worker
        if worker is not None:
            with contextlib.suppress(RuntimeError):  # no loop yet: the worker has not started
                asyncio.get_running_loop().call_soon_threadsafe(worker.request_stop)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=current.log_level,
        log_config=formats.config(current.log_format, "serve", current.log_level),
        **uvicorn_options(limits),
    )
    # Logged once the Config has configured logging.
    log_start(
        current,
        "serve",
        processes=1,
        delivers_webhooks=with_worker,
        metrics="on" if current.metrics_token else "off",
    )
    warn_if_exposed(host, current.trusted_proxies)
    server = Server(config, on_exit=stop_worker)
    server.run()
    if not server.started:
        raise SystemExit(STARTUP_FAILURE)
