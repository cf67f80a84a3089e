"""`hangar worker --metrics-port N`: the worker's own GET /metrics, beside its deliveries.

A worker on its own machine (or beside others) counts its attempts, finished deliveries and
scheduler runs in its own memory, where no server process can read them: it serves them
itself, with the queue's gauges read from the database like every scrape's. The endpoint is
the server's (hangar.http.metrics_endpoint: the same names, the same HANGAR_METRICS_TOKEN
bearer rule, the same 401), in an app that has nothing else. It is served by uvicorn in the
worker's event loop, on a socket bound before the worker starts (so a port in use is a
start-up failure, not a worker without metrics), and stops once the worker has finished what
it had under way.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable, Iterator

import uvicorn
from fastapi import FastAPI

from hangar.foundation.config import LogLevel
from hangar.http import health, metrics_endpoint
from hangar.http.error_handlers import install_error_handlers
from hangar.http.head import HeadAsGet
from hangar.kit.container import Services

DEFAULT_HOST = "127.0.0.1"


def metrics_app(services: Services, failure: Callable[[], str | None] | None = None) -> FastAPI:
    """GET (and HEAD, as on the server) /metrics over `services`, GET /api/health/live
    (failing with `failure()`'s reason: the worker's), and the API's JSON 404 for anything
    else."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(HeadAsGet)
    app.state.services = services
    install_error_handlers(app)
    app.include_router(metrics_endpoint.router)
    app.include_router(health.live_router)
    app.state.failure = failure
    return app


def listen(host: str, port: int) -> socket.socket:
    """The listening socket (OSError when the address is in use or not this machine's)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family)


def address(sock: socket.socket) -> str:
    """`host:port` of a listening socket (`[host]:port` for IPv6)."""
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Server(uvicorn.Server):
    # The worker's own SIGTERM and SIGINT handlers stop the process (and then this server):
    # uvicorn's must not take their place.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serving_metrics(
    services: Services,
    sock: socket.socket,
    level: LogLevel,
    failure: Callable[[], str | None] | None = None,
) -> AsyncIterator[None]:
    """/metrics and /api/health/live served on `sock` while the body runs."""
    config = uvicorn.Config(
        metrics_app(services, failure),
        lifespan="off",
        log_config=None,  # the worker's, as hangar.logs.formats configured it
        log_level=level,
        ws="none",
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield
    finally:
        server.should_exit = True
        await task
        sock.close()
