"""`hangar serve`: the API (and, unless --no-worker, the worker beside it)."""

from __future__ import annotations

from typing import Annotated

import typer

from hangar.cli.common import migrated_settings
from hangar.config import Settings
from hangar.http_limits import ServerLimits


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8000,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="Serve only; run no webhook dispatcher here")
    ] = False,
) -> None:
    """Migrate the database to head, then serve the API."""
    run_server(migrated_settings(), host, port, with_worker=not no_worker)


def run_server(
    current: Settings,
    host: str,
    port: int,
    *,
    with_worker: bool = True,
    limits: ServerLimits | None = None,
) -> None:
    """Serves until interrupted; `serve` and `demo` both end here. `limits`: the defaults of
    hangar.http_limits unless a test shortens the timeouts."""
    import uvicorn

    from hangar.access_log import log_config
    from hangar.app import create_app
    from hangar.serving import uvicorn_options

    uvicorn.run(
        create_app(settings=current, with_worker=with_worker),
        host=host,
        port=port,
        log_level="info",
        log_config=log_config(),
        **uvicorn_options(limits),
    )
