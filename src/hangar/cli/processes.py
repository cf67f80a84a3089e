"""`hangar serve --workers N`: N server processes on one port, and one worker process beside
them.

The process manager is uvicorn's own supervisor (`uvicorn.supervisors.Multiprocess`), not
gunicorn: uvicorn is already pinned in requirements.lock and gunicorn is not, and gunicorn's
uvicorn worker would run this same uvicorn server underneath, with hangar's protocol and
limits passed through a second configuration. The supervisor binds the socket once and hands
it to N spawned processes that share its accept queue; it restarts a process that dies or
stops answering its health pings, and on SIGTERM or SIGINT stops them all, each finishing
the requests in flight (uvicorn's SIGHUP replaces them one by one, SIGTTIN and SIGTTOU add
and remove one).

hangar adds the worker (webhook dispatcher and scheduler, hangar.wiring.worker): once, in a
process of its own that the supervisor starts beside the servers, restarts if it dies, and
signals first when stopping. One per server process would only multiply the LISTEN
connections and the claims; `hangar worker` on other machines scales the deliveries.

The metrics (hangar.foundation.metrics) of all these processes are kept in one directory,
PROMETHEUS_MULTIPROC_DIR, of this instance's own: made fresh at start (a new temporary
directory, named after the port) and removed at exit, so that two instances on one machine
never add up or delete each other's files (hangar refuses the variable from the environment).
The supervisor sets it before starting any process, so each inherits it and prometheus-client
starts in its multiprocess mode there, and marks each process that dies or is replaced as
dead (its live gauges leave the sum).

Each server process builds the app from the environment (`app_from_environment`, uvicorn's
factory: an app cannot be handed to a spawned process), with hangar's protocol, limits and
access log in the uvicorn configuration every process gets. The parent writes the settings it
checked into its environment first, so every process reads exactly those.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from multiprocessing.context import SpawnProcess
from pathlib import Path
from socket import socket
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn
from prometheus_client.multiprocess import mark_process_dead
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from hangar.cli.cores import available_cores
from hangar.cli.worker import SenderFactory, run_worker
from hangar.foundation.config import FILE_SETTINGS, Settings, load_settings
from hangar.foundation.metrics import MULTIPROCESS_DIR

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("uvicorn.error")

APP_FACTORY = "hangar.cli.processes:app_from_environment"


def process_count(text: str) -> int | None:
    """`--workers`: a whole number from 1, or `auto`; None if it is neither."""
    if text.strip().lower() == "auto":
        return available_cores()
    try:
        count = int(text)
    except ValueError:
        return None
    return count if count >= 1 else None


def refusal(current: Settings, count: int) -> str | None:
    """Why `count` server processes cannot serve with these settings, in one line, or None."""
    if current.is_sqlite:
        return (
            f"--workers {count} needs PostgreSQL: SQLite takes one writer at a time, so more "
            "server processes would only queue behind each other; on SQLite serve with "
            "--workers 1 (the default), or set HANGAR_DATABASE_URL to PostgreSQL and "
            "HANGAR_REDIS_URL to serve from several processes"
        )
    if not current.redis_url:
        return (
            f"--workers {count} needs HANGAR_REDIS_URL: without Redis each process would "
            "count every API key's requests on its own (60 a minute each, not in all); set "
            "HANGAR_REDIS_URL, or serve with --workers 1"
        )
    return None


def environment(current: Settings) -> dict[str, str]:
    """The HANGAR_* variables from which load_settings reads `current` back."""
    env = {
        "HANGAR_DATABASE_URL": current.database_url,
        "HANGAR_SECRET_KEY": current.secret_key,
        "HANGAR_PUBLIC_URL": current.public_url,
        "HANGAR_SERVICE_DOMAIN": current.service_domain,
        "HANGAR_REDIS_PREFIX": current.redis_prefix,
        "HANGAR_LOG_FORMAT": current.log_format,
        "HANGAR_LOG_LEVEL": current.log_level,
        "HANGAR_DELIVERY_RETENTION_DAYS": str(current.delivery_retention_days),
        "HANGAR_AUDIT_RETENTION_DAYS": str(current.audit_retention_days),
        "HANGAR_MAX_SUBSCRIPTIONS_PER_ORG": str(current.max_subscriptions_per_org),
        "HANGAR_DB_POOL_SIZE": str(current.db_pool_size),
        "HANGAR_TRUSTED_PROXIES": ",".join(str(network) for network in current.trusted_proxies),
    }
    if current.smtp_url and current.mail_from:
        env["HANGAR_SMTP_URL"] = current.smtp_url
        env["HANGAR_MAIL_FROM"] = current.mail_from
    if current.redis_url:
        env["HANGAR_REDIS_URL"] = current.redis_url
    if current.metrics_token:
        env["HANGAR_METRICS_TOKEN"] = current.metrics_token
    if current.previous_secret_keys:
        env["HANGAR_SECRET_KEY_PREVIOUS"] = ",".join(current.previous_secret_keys)
    return env


def app_from_environment() -> FastAPI:
    """uvicorn's app factory in each server process (no worker: the supervisor runs one)."""
    from hangar.app import create_app

    return create_app(settings=load_settings())


def _start_worker(current: Settings, sender: SenderFactory | None) -> SpawnProcess:
    # Spawned like uvicorn's own processes: a fresh interpreter, nothing inherited from the
    # parent but its environment. Daemonic: should the parent die of an exception, its exit
    # terminates the worker rather than waiting for it.
    process = multiprocessing.get_context("spawn").Process(
        target=run_worker, args=(current, sender), name="hangar-worker", daemon=True
    )
    process.start()
    log.info("Started worker process [%s]", process.pid)
    return process


class ServersAndWorker(Multiprocess):
    """uvicorn's supervisor of the server processes, keeping one worker process beside them."""

    def __init__(
        self,
        config: uvicorn.Config,
        sockets: list[socket],
        start_worker: Callable[[], SpawnProcess] | None,
    ) -> None:
        super().__init__(config, sockets)
        self._start_worker = start_worker
        self.worker: SpawnProcess | None = None
        self._alive: set[int] = set()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop_at_once)

    def _stop_at_once(self, sig: int, frame: FrameType | None) -> None:
        # uvicorn's supervisor queues the signal for its loop, which looks every 0.5 s, and
        # keeps its copy of the listening socket until every process has exited: the kernel
        # went on completing connections that no process would accept, and a proxy's
        # requests on them stalled until the end. Here the copy is closed and the loop woken
        # at once; each server process closes its own at its next tick (0.1 s), serving
        # what it accepted meanwhile, and nothing listens any more.
        self.signal_queue.append(sig)
        for sock in self.sockets:
            sock.close()
        self.should_exit.set()

    def init_processes(self) -> None:
        if self._start_worker is not None:
            self.worker = self._start_worker()
        super().init_processes()

    def keep_subprocess_alive(self) -> None:
        super().keep_subprocess_alive()
        self._keep_worker_alive()
        self._mark_the_dead()

    def _keep_worker_alive(self) -> None:
        worker = self.worker
        if self.should_exit.is_set() or worker is None or self._start_worker is None:
            return
        if not worker.is_alive():
            log.warning("Worker process [%s] died (exit code %s)", worker.pid, worker.exitcode)
            self.worker = self._start_worker()

    def _mark_the_dead(self) -> None:
        # Whatever replaced a process (a death, SIGHUP, SIGTTOU), the pids gone since the
        # last look are dead: their live gauges must leave the metrics' sum.
        pids = {p.pid for p in self.processes if p.pid is not None}
        if self.worker is not None and self.worker.pid is not None:
            pids.add(self.worker.pid)
        for pid in self._alive - pids:
            mark_process_dead(pid)  # type: ignore[no-untyped-call]
        self._alive = pids

    def terminate_all(self) -> None:
        self.handle_signals()  # uvicorn's log line for the signal that stopped the loop
        # The worker first: from its SIGTERM it claims nothing more, and its attempts under
        # way (10 s at most each) finish while the servers finish their requests.
        if self.worker is not None and self.worker.exitcode is None:
            self.worker.terminate()
            log.info("Terminated worker process [%s]", self.worker.pid)
        super().terminate_all()

    def join_all(self) -> None:
        super().join_all()
        if self.worker is not None:
            self.worker.join()


def serve_processes(
    current: Settings,
    host: str,
    port: int,
    workers: int,
    *,
    with_worker: bool,
    sender: SenderFactory | None = None,
) -> None:
    """Serves from `workers` processes until SIGTERM or SIGINT, with one worker process beside
    them if `with_worker`. `sender`: for tests (hangar.cli.worker.SenderFactory)."""
    from hangar.http.server import uvicorn_options, warn_if_exposed
    from hangar.logs import formats
    from hangar.logs.start_line import log_start

    # The processes read the values themselves, not the files they came from (one of each
    # would be refused as both set).
    for name in FILE_SETTINGS:
        os.environ.pop(f"{name}_FILE", None)
    os.environ.update(environment(current))
    config = uvicorn.Config(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=current.log_level,
        log_config=formats.config(current.log_format, "serve", current.log_level),
        # A process just spawned answers the supervisor's health pings only once its
        # interpreter has started and imported uvicorn: on a loaded 2-core machine that took
        # longer than uvicorn's 5 s, and healthy processes were killed as hung at startup.
        timeout_worker_healthcheck=20,
        **uvicorn_options(),
    )
    # Once for the instance, not in each process it starts (hangar.logs.start_line).
    log_start(
        current,
        "serve",
        processes=workers,
        delivers_webhooks=with_worker,
        metrics="on" if current.metrics_token else "off",
    )
    warn_if_exposed(host, current.trusted_proxies)
    start_worker = functools.partial(_start_worker, current, sender) if with_worker else None
    sock = config.bind_socket()
    supervisor = ServersAndWorker(config, [sock], start_worker)
    try:
        with metrics_directory(port):  # set before any process starts: each inherits it
            supervisor.run()
    finally:
        sock.close()
    # uvicorn's supervisor stops when a server process cannot start (the same failure would
    # repeat), but its own exit status says nothing of it.
    if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes):
        raise SystemExit(STARTUP_FAILURE)


@contextlib.contextmanager
def metrics_directory(port: int) -> Iterator[Path]:
    """PROMETHEUS_MULTIPROC_DIR for the processes about to start: a directory of this
    instance's alone (module docstring), readable by this user only (mkdtemp's 0700), in
    TMPDIR; removed, and the variable put back as it was, at exit."""
    before = os.environ.get(MULTIPROCESS_DIR)
    path = Path(tempfile.mkdtemp(prefix=f"hangar-metrics-{port}-"))
    os.environ[MULTIPROCESS_DIR] = str(path)
    try:
        yield path
    finally:
        if before is None:
            del os.environ[MULTIPROCESS_DIR]
        else:
            os.environ[MULTIPROCESS_DIR] = before
        shutil.rmtree(path, ignore_errors=True)
