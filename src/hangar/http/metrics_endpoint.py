"""GET /metrics: hangar's metrics (hangar.foundation.metrics) in Prometheus's text format.

Served only when HANGAR_METRICS_TOKEN is set (otherwise the route answers the usual 404), and
then only to `Authorization: Bearer <that token>`, compared in constant time; anything else
is a 401 with WWW-Authenticate. Not in the OpenAPI description, and not counted in the
request metrics (the scrape, every 15 s or so, would be much of a quiet server's traffic).

Under several processes (PROMETHEUS_MULTIPROC_DIR set) the answer is the sum of every
process's files, so any server process may answer. The queue's depth, what is in flight, what
waits for its own endpoint, the age of the oldest delivery a worker could take and the
subscriptions now disabled are read from the database at each scrape: facts of the
database, the same whichever process answers.
"""

from __future__ import annotations

import functools
import hmac
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from fastapi import APIRouter, Request
from prometheus_client import REGISTRY, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.responses import Response

from hangar import __version__
from hangar.foundation.metrics import DATABASE_ERRORS, MULTIPROCESS_DIR
from hangar.http.error_handlers import error_response
from hangar.http.routing import bearer, services_of
from hangar.kit.container import Services
from hangar.kit.errors import NotFound
from hangar.webhooks.inspection.gauges import Gauges, gauges

log = logging.getLogger("hangar")
router = APIRouter()

PATH = "/metrics"


@router.get(PATH, include_in_schema=False)
async def metrics(request: Request) -> Response:
    services = services_of(request)
    token = services.settings.metrics_token
    if not token:
        raise NotFound()
    presented = bearer(request)
    if presented is None or not hmac.compare_digest(presented.encode(), token.encode()):
        response = error_response(
            401, "UNAUTHORIZED", "Metrics need Authorization: Bearer with the metrics token"
        )
        response.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry()
    registry.register(_Build())
    folder = os.environ.get(MULTIPROCESS_DIR)
    if folder is not None:
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        registry.register(_EveryProcess(folder))
    else:
        registry.register(_ThisProcess())
    queue = await _queue(services)
    if queue is not None:
        registry.register(queue)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


class _ThisProcess:
    """The default registry (this process's metrics, and the library's process and Python
    ones), collected into the scrape's registry beside the queue's gauges."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


class _Build:
    """hangar_build_info{version} 1: which release answers (during a rolling upgrade, which
    instances run which), as Prometheus's build_info convention has it."""

    def collect(self) -> Iterable[Metric]:
        info = GaugeMetricFamily(
            "hangar_build_info", "The release this process runs (always 1)", labels=["version"]
        )
        info.add_metric([__version__], 1)
        yield info


class _EveryProcess:
    """The library's process_* metrics (CPU, memory, open files, start time) of every live
    process of this `hangar serve`, labelled by pid: the multiprocess collector sums the
    processes' own metrics but has none of these. The processes are those with a file in the
    shared folder (prometheus-client names each `<kind>_<pid>.db`) that are still alive."""

    def __init__(self, folder: str) -> None:
        self._folder = folder

    def collect(self) -> Iterable[Metric]:
        merged: dict[str, Metric] = {}
        for pid in _live_pids(self._folder):
            for family in ProcessCollector(
                pid=functools.partial(int, pid), registry=None
            ).collect():
                into = merged.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type)
                )
                for sample in family.samples:
                    labels = {**sample.labels, "pid": str(pid)}
                    into.add_sample(sample.name, labels, sample.value)
        yield from merged.values()


def _live_pids(folder: str) -> list[int]:
    pids = set()
    for name in os.listdir(folder):
        digits = name.removesuffix(".db").rpartition("_")[2]
        if name.endswith(".db") and digits.isdigit():
            pids.add(int(digits))
    return sorted(pid for pid in pids if os.path.exists(f"/proc/{pid}"))


# The queue's gauges: name, help, and the field of webhooks.queries.Gauges each reports.
_GAUGES = (
    (
        "hangar_webhook_deliveries_pending",
        "Deliveries waiting for an attempt (due now or retrying later)",
        "pending",
    ),
    (
        "hangar_webhook_deliveries_in_flight",
        "Deliveries being attempted now, by any worker (their leases are live)",
        "in_flight",
    ),
    (
        "hangar_webhook_deliveries_held_by_cap",
        "Due deliveries waiting for their own endpoint: its subscription has as many "
        "attempts in flight as it may",
        "held_by_cap",
    ),
    (
        "hangar_webhook_oldest_due_delivery_age_seconds",
        "How long the longest-waiting delivery a worker could take now has been due "
        "(0 when none is): growing, the workers are too few",
        "oldest_due_age_s",
    ),
    (
        "hangar_webhook_subscriptions_disabled",
        "Subscriptions disabled now (automatically or by an administrator), not deleted",
        "disabled",
    ),
)


@dataclass(frozen=True)
class _Queue:
    read: Gauges

    def collect(self) -> Iterator[Metric]:
        for name, help_text, field in _GAUGES:
            yield GaugeMetricFamily(name, help_text, value=getattr(self.read, field))


async def _queue(services: Services) -> _Queue | None:
    """The queue's gauges, read now; None (and a database error counted) when the database
    does not answer: the rest of the scrape is still worth serving."""
    now = services.clock.now()
    try:
        async with services.engine.connect() as conn:
            read = await gauges(conn, now)
    except Exception:
        DATABASE_ERRORS.labels("metrics").inc()
        log.warning("metrics: the queue's gauges could not be read", exc_info=True)
        return None
    return _Queue(read)
