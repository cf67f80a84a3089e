"""How hangar serves HTTP: uvicorn's options (with the protocol that bounds each client,
hangar.http.protocol), its server, and the warning for a server reachable beyond loopback.

`hangar serve` (`hangar.cli.serve.run_server`) and the benchmarks' servers (`bench/server.py`)
both run uvicorn with `uvicorn_options()`, so the benchmarks measure what production runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Callable
from types import FrameType
from typing import Literal, TypedDict

import uvicorn

from hangar.foundation.config import Network
from hangar.http.limits import (
    ServerLimits,
)
from hangar.http.protocol import BoundedHttpToolsProtocol

# How long a stopping server waits for the requests in flight before it cancels them (each
# cut off is answered 503, hangar.http.stopping). The worker's attempts under way get their
# 10 s timeout (hangar.webhooks.delivery.sender) in the same stop, so a process asked to stop is
# gone about ten seconds later at most, whatever it was doing (deploy/'s TimeoutStopSec
# leaves room above that).
SHUTDOWN_GRACE_S = 10


class UvicornOptions(TypedDict):
    """The keywords of uvicorn.run that `uvicorn_options` decides (mypy checks them there)."""

    loop: Literal["uvloop"]
    http: type[BoundedHttpToolsProtocol]
    ws: Literal["none"]
    timeout_keep_alive: int
    limit_concurrency: int
    backlog: int
    proxy_headers: bool
    timeout_graceful_shutdown: int


class Server(uvicorn.Server):
    """uvicorn's server, which also acts the moment it is asked to stop (SIGTERM, SIGINT),
    from the signal handler, where uvicorn itself only notices at its next tick: it stops
    listening at once (a proxy's next connection is refused and goes to another instance),
    tells the open connections (readiness fails from then on) and calls `on_exit` (`hangar
    serve` stops its worker's claiming, so the attempts under way finish while the requests
    do, not after them). uvicorn then waits for the requests in flight, up to
    SHUTDOWN_GRACE_S, before the app's shutdown."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        with contextlib.suppress(RuntimeError):  # no loop yet: nothing listens
            asyncio.get_running_loop().call_soon_threadsafe(self._stop_listening)
        self._on_exit()

    def _stop_listening(self) -> None:
        # What uvicorn's shutdown begins with, done now: no more connections, and each open
        # one told (hangar.http.protocol: the app is stopping, answers close them).
        for listener in getattr(self, "servers", ()):  # set once uvicorn has started
            listener.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()


def uvicorn_options(limits: ServerLimits | None = None) -> UvicornOptions:
    """uvicorn.run's keyword arguments for serving hangar (besides the app, address and
    logging): uvloop, the bounded httptools protocol, no WebSocket upgrades (hangar has no
    WebSocket route, and an upgraded connection would leave this protocol's bounds), the
    keep-alive timeout, the concurrency cap, the accept backlog and the grace given to requests
    in flight when stopping."""
    limits = limits or ServerLimits()
    return {
        "loop": "uvloop",
        "http": BoundedHttpToolsProtocol.with_limits(limits),
        "ws": "none",
        "timeout_keep_alive": limits.keep_alive_timeout_s,
        "limit_concurrency": limits.max_concurrency,
        "backlog": limits.backlog,
        "proxy_headers": False,
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_S,
    }


def exposure_warning(host: str, trusted_proxies: tuple[Network, ...]) -> str | None:
    """What to tell the operator when `hangar serve` listens beyond this machine with no proxy
    in front that hangar knows of: the supported exposure is behind a TLS-terminating proxy
    (the API is HTTPS by contract; the proxy of deploy/ limits connections and requests per
    address), and a proxy on another machine has to be named in HANGAR_TRUSTED_PROXIES for
    hangar to see the clients' addresses. None when it listens on loopback only, or when a
    trusted proxy outside loopback is named (the operator has said where the proxy is)."""
    try:
        local = ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = host == "localhost"
    if local or any(not network.is_loopback for network in trusted_proxies):
        return None
    return (
        f"hangar serve listens on {host}, beyond this machine, and HANGAR_TRUSTED_PROXIES names "
        "no proxy outside it: clients that reach this port directly get neither TLS nor the "
        "proxy's limits per address. Serve behind a TLS-terminating proxy (deploy/"
        "nginx-hangar.conf), listen on 127.0.0.1 when it runs on this machine, or name it in "
        'HANGAR_TRUSTED_PROXIES when it runs on another (README, "Exposure").'
    )


def warn_if_exposed(host: str, trusted_proxies: tuple[Network, ...]) -> None:
    """Logs `exposure_warning`, if any, once logging is configured (after uvicorn's Config)."""
    warning = exposure_warning(host, trusted_proxies)
    if warning is not None:
        logging.getLogger("hangar").warning(warning)
