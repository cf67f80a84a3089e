"""The servers the benchmarks load, each one process, run by uvicorn the way `hangar serve`
runs (hangar.http.server.uvicorn_options: uvloop, hangar's bounded httptools protocol, the same
limits), with settings from the HANGAR_* variables; the bare baseline on uvicorn as it comes.

    python -m bench.server full     --port P   # hangar's app; rate limits that never fill
    python -m bench.server real     --port P   # hangar's app with its limits as configured
    python -m bench.server bypass   --port P   # the same app, key lookup and limiter bypassed
    python -m bench.server baseline --port P   # the bare ASGI baseline (bench/baseline.py)
    python -m bench.server baseline-bypass --port P  # the baseline, key lookup and limiter bypassed

`full` is the real code path: every request looks its key up and makes the Redis INCRs (or
the in-process counts without Redis); only the limits are raised, here, in bench/, so a load
test is not stopped after 60 requests. No production setting changes. `real` is the app
exactly as `hangar serve` builds it, limits and all: the hostile rows (G12b-G12d) need the
sign-in throttle to fill.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from hangar.db.reads import ReadConnection
from hangar.foundation.config import Settings, load_settings
from hangar.keys.authentication import KeyAuthenticator, KeyLookup
from hangar.kit.ratelimit import Limit, RateLimiter
from hangar.kit.scoping import KeyContext
from hangar.wiring.container import build_services

ROOMY = 10**12


class RoomyLimiter:
    """The configured limiter with buckets too big to fill: same keys, same INCRs."""

    def __init__(self, inner: RateLimiter) -> None:
        self._inner = inner

    async def hit(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> Limit | None:
        return await self._inner.hit(subject, _roomy(limits), now)

    async def exceeded(
        self, subject: str, limits: tuple[Limit, ...], now: datetime
    ) -> Limit | None:
        return await self._inner.exceeded(subject, _roomy(limits), now)

    async def give_back(self, subject: str, limits: tuple[Limit, ...], now: datetime) -> None:
        await self._inner.give_back(subject, _roomy(limits), now)


def _roomy(limits: tuple[Limit, ...]) -> tuple[Limit, ...]:
    return tuple(Limit(ROOMY, lim.seconds, lim.label) for lim in limits)


class BypassedKeys:
    """Authenticates the first request for real, then hands every later one the same
    caller: no key lookup, no counters."""

    refuse_malformed = staticmethod(KeyAuthenticator.refuse_malformed)

    def __init__(self, real: KeyAuthenticator) -> None:
        self._real = real
        self._rows: dict[tuple[str | None, str], tuple[KeyContext, dict[str, Any]]] = {}

    async def authenticate_with(
        self,
        raw_key: str | None,
        scope: str,
        *,
        missing: str,
        conn: ReadConnection,
        lookup: KeyLookup,
    ) -> tuple[KeyContext, dict[str, Any]]:
        # G4 reads /reservations, whose lookup reads nothing but the key: its row is the
        # first request's for good, as the key is.
        found = self._rows.get((raw_key, scope))
        if found is None:
            found = await self._real.authenticate_with(
                raw_key, scope, missing=missing, conn=conn, lookup=lookup
            )
            self._rows[(raw_key, scope)] = found
        return found


def build_app(mode: str, settings: Settings) -> Any:
    from hangar.app import create_app

    services = build_services(settings)
    if mode == "real":
        return create_app(services)
    services.limiter = RoomyLimiter(services.limiter)
    if mode in ("baseline", "baseline-bypass"):
        return build_baseline(settings, services.limiter, bypass_keys=mode == "baseline-bypass")
    app = create_app(services)
    if mode == "bypass":
        app.state.keys = BypassedKeys(app.state.keys)
    return app


def build_baseline(settings: Settings, limiter: RateLimiter, *, bypass_keys: bool = False) -> Any:
    from bench.baseline import Baseline, Database, PgDatabase, SqliteDatabase
    from hangar.foundation.sqlite_files import sqlite_path
    from hangar.kit.cursor import CursorKeys

    path = sqlite_path(settings.database_url)
    db: Database = (
        SqliteDatabase(str(path)) if path is not None else PgDatabase(settings.database_url)
    )
    keys = CursorKeys.derive(settings.secret_key, settings.previous_secret_keys)
    return Baseline(db, limiter, keys, bypass_keys=bypass_keys)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("full", "real", "bypass", "baseline", "baseline-bypass"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()

    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from hangar.http.server import uvicorn_options
    from hangar.logs import formats

    settings = load_settings()
    app = build_app(args.mode, settings)
    if args.mode.startswith("baseline"):
        # The bare baseline runs on uvicorn as it comes (uvloop, httptools) and logs with
        # uvicorn's own configuration: hangar's bounded protocol and its redacting access
        # log are work of hangar's, so they count on hangar's side of every ratio.
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            loop="uvloop",
            http="httptools",
            log_level="info",
            log_config=LOGGING_CONFIG,
            proxy_headers=False,
        )
        return
    # Exactly as hangar.cli.serve.run_server does.
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        log_config=formats.config(settings.log_format, "serve"),
        **uvicorn_options(),
    )


if __name__ == "__main__":
    main()
