"""The ASGI application: one per Services, so tests can build as many as they like."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.routing import APIRoute
from starlette.responses import Response
from starlette.types import ASGIApp

from hangar import web
from hangar.db.migrate import code_revisions
from hangar.external import routes as external
from hangar.external.openapi import build_openapi
from hangar.external.paths import PREFIX as EXTERNAL_PREFIX
from hangar.foundation.config import Settings, load_settings
from hangar.http import health, metrics_endpoint
from hangar.http.client_address import ClientAddress
from hangar.http.error_handlers import install_error_handlers
from hangar.http.head import HeadAsGet
from hangar.http.limits import BodyLimit
from hangar.http.request_metrics import RequestMetrics
from hangar.http.stopping import STATE_KEY, CutOff, Stopping
from hangar.keys.authentication import KeyAuthenticator
from hangar.kit.container import Services
from hangar.kit.encoding import dumps
from hangar.logs.request_id import RequestId
from hangar.routes import audit_log as audit_log_routes
from hangar.routes import fleet as fleet_routes
from hangar.routes import invitations as invitation_routes
from hangar.routes import keys as key_routes
from hangar.routes import maintenance as maintenance_routes
from hangar.routes import members as member_routes
from hangar.routes import organization as organization_routes
from hangar.routes import reservations as reservation_routes
from hangar.routes import session as session_routes
from hangar.routes import squawks as squawk_routes
from hangar.routes import two_factor as two_factor_routes
from hangar.routes import webhooks as webhook_routes
from hangar.webhooks.delivery.sender import Sender
from hangar.wiring.container import build_services
from hangar.wiring.worker import Worker


class _App(FastAPI):
    def build_middleware_stack(self) -> ASGIApp:
        # The request id outside everything, Starlette's handler of unexpected errors
        # included: its 500s are echoed the id too, and logged under it. Outside it, the
        # client's address, settled once for every layer and the access log. Inside the
        # request id, the answer to a request cut off by a stopping server (it gets the id).
        services: Services = self.state.services
        return ClientAddress(
            RequestId(CutOff(super().build_middleware_stack())), services.settings.trusted_proxies
        )


def _add_routes(app: FastAPI, router: APIRouter) -> None:
    """`router`'s routes, each put on the app's own router rather than `router` included.

    Since FastAPI 0.137 an included router stays a node of its own, which every request
    walks, and the one holding the request's route twice, before the route is reached;
    flat, a request to the public API is matched against its routes once (figures:
    bench/RESULTS.md). Nothing of an inclusion is lost: these routers give their routes
    everything (prefix, route class, `include_in_schema`) as the routes are made. The
    screens' router, which includes routers of its own, stays included."""
    for route in router.routes:
        if not isinstance(route, APIRoute):
            raise TypeError(f"{route!r} is not a route of its own: include its router")
        app.router.routes.append(route)


def create_app(
    services: Services | None = None,
    settings: Settings | None = None,
    *,
    with_worker: bool = False,
    sender: Sender | None = None,
) -> FastAPI:
    """The app; `with_worker` also runs the dispatcher and scheduler in this process (with
    `sender`, for tests that deliver to loopback; the production sender otherwise). While it
    runs, the worker is `app.state.worker`, for the server to stop it early."""
    services = services or build_services(settings or load_settings())
    app = _App(
        title="hangar",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=_lifespan(services, with_worker, sender),
        # hangar is observed through its own metrics (GET /metrics) and logs. FastAPI's
        # native OpenTelemetry bridge, left on, asks OpenTelemetry's three global providers
        # on every request whether anyone configured them.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    # HEAD wherever GET is answered (hangar.http.head): innermost, so the exception
    # handlers' answers to a HEAD lose their body too.
    app.add_middleware(HeadAsGet)
    # Each route's body cap (hangar.http.limits), answered before the body is read.
    app.add_middleware(BodyLimit)
    # Outermost: every answer is counted, BodyLimit's 413s too (as `unmatched`: no route yet).
    app.add_middleware(RequestMetrics, skip=(metrics_endpoint.PATH,))
    app.state.services = services
    app.state.worker = None
    app.state.stopping = Stopping()
    app.state.keys = KeyAuthenticator(services)
    install_error_handlers(app)
    _mount_routes(app)
    _serve_openapi(app)
    return app


def _lifespan(
    services: Services, with_worker: bool, sender: Sender | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[dict[str, Any]]]:
    """What the app does as it starts and stops: the worker (`with_worker`), the code's
    revisions read once, the heap frozen; and, on the way out, the worker stopped and the
    services closed."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        worker = Worker(services, sender) if with_worker else None
        app.state.worker = worker
        app.state.failure = worker.failure if worker is not None else None
        if worker is not None:
            await worker.start()
        code_revisions()  # read once, now: /api/health/ready compares the database with it
        # What exists once the app is up (modules, routes, schemas, SQLAlchemy's metadata: some
        # 130,000 objects) lives as long as the process. Frozen (after collecting what is
        # already garbage), a full collection no longer walks it, and every request in flight
        # no longer waits for one (figures: bench/RESULTS.md).
        gc.collect()
        gc.freeze()
        try:
            # Shared with the server's protocol, which sets it when the server is stopping
            # (hangar.http.stopping).
            yield {STATE_KEY: app.state.stopping}
        finally:
            if worker is not None:
                await worker.stop()
            await services.close()

    return lifespan


def _mount_routes(app: FastAPI) -> None:
    for router in (
        *external.ROUTERS,  # first: the public API takes most requests
        health.router,
        health.live_router,
        metrics_endpoint.router,  # GET /metrics, when HANGAR_METRICS_TOKEN is set
        session_routes.router,
        two_factor_routes.router,
        invitation_routes.router,
        key_routes.router,
        webhook_routes.router,
        member_routes.router,
        organization_routes.router,
        audit_log_routes.router,
        fleet_routes.router,
        reservation_routes.router,
        squawk_routes.router,
        maintenance_routes.router,
    ):
        _add_routes(app, router)
    app.include_router(web.router)  # Org Settings screens and the integrator pages


def _serve_openapi(app: FastAPI) -> None:
    """GET the public API's OpenAPI document, built from the routes at its first request."""
    openapi_body: list[bytes] = []

    @app.get(f"{EXTERNAL_PREFIX}/openapi.json", include_in_schema=False)
    async def openapi(_: Request) -> Response:
        if not openapi_body:
            openapi_body.append(dumps(build_openapi(app)))
        return Response(openapi_body[0], media_type="application/json")
