"""Delivery benchmarks (G6-G9): hangar's dispatcher against loopback HTTPS receivers.

The dispatcher runs in this process as `hangar worker` runs it (one Worker: LISTEN/NOTIFY on
PostgreSQL, the in-process wake on SQLite). As in the delivery tests, the receiver is reached
through an injected resolver (a made-up name → 127.0.0.1), an address rule admitting only
loopback, and a TLS context trusting a trustme CA: injected here, never a setting.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import trustme
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bench import cpu
from bench.setup import analyze_queue
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import Settings
from hangar.foundation.ids import new_id
from hangar.kit.container import Services
from hangar.kit.resolver import IPAddress
from hangar.kit.rows import insert_new
from hangar.orgs.commands import create_org
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import TIMEOUT_SECONDS, Sender
from hangar.webhooks.delivery.signing import envelope, headers
from hangar.webhooks.egress.url_parsing import parse_webhook_url
from hangar.webhooks.events.outbox import pending_delivery, record, serialize, wake_dispatchers
from hangar.webhooks.models import Attempt, Delivery, Event, Subscription
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from hangar.wiring.container import build_services
from hangar.wiring.worker import Worker

HOST = "receiver.example.com"  # resolved by the injected resolver only
LOOPBACK = ipaddress.ip_address("127.0.0.1")


class LoopbackResolver:
    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        return [LOOPBACK]


def loopback_only(ip: IPAddress) -> bool:
    return ip == LOOPBACK


@dataclass
class Receiver:
    port: int
    client_ssl: ssl.SSLContext
    ca_file: Path  # the CA that signed its certificate, for a worker in another process
    pid: int  # its process, whose CPU time G6 reads

    def url(self, path: str) -> str:
        return f"https://{HOST}:{self.port}{path}"

    async def log(self) -> list[list[Any]]:
        connector = aiohttp.TCPConnector(ssl=self.client_ssl, resolver=_Pinned())
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.get(self.url("/log")) as response,
        ):
            data: list[list[Any]] = await response.json()
            return data


class _Pinned(aiohttp.abc.AbstractResolver):
    async def resolve(self, host: str, port: int = 0, family: Any = 0) -> list[Any]:
        import socket

        return [
            {
                "hostname": host,
                "host": "127.0.0.1",
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        return None


@asynccontextmanager
async def receiver(
    delay_ms: float, port: int, ca: trustme.CA | None = None
) -> AsyncIterator[Receiver]:
    """A receiver process on `port`, its certificate issued by `ca` (by default a CA of its
    own): receivers that one sender reaches share one CA, which its `client_ssl` trusts."""
    ca = ca or trustme.CA()
    cert = ca.issue_cert(HOST)
    folder = Path(tempfile.mkdtemp(prefix="hangar-bench-tls-"))
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    client_ssl = ssl.create_default_context()
    ca.configure_trust(client_ssl)
    proc = subprocess.Popen(  # noqa: S603, ASYNC220 (started once, before any load)
        [
            sys.executable,
            "-m",
            "bench.receiver",
            "--port",
            str(port),
            "--cert",
            str(folder / "cert.pem"),
            "--key",
            str(folder / "key.pem"),
            "--delay-ms",
            str(delay_ms),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    found = Receiver(port, client_ssl, folder / "ca.pem", proc.pid)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                await found.log()
                break
            except aiohttp.ClientError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the receiver did not start") from None
                await asyncio.sleep(0.1)
        yield found
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def bench_services(settings: Settings) -> Services:
    # As `hangar worker` builds its own (hangar.cli.worker.run_worker).
    services = build_services(settings, answers_clients=False)
    services.resolver = LoopbackResolver()
    return services


# The attempt timeout of the bench's senders. `--smoke` shortens it (bench.__main__): the rows
# with endpoints that time out (G13, G13b) then wait a second, not 10, for each attempt there
# and for a stopping worker's last ones. A smoke run only shows that every row runs; the
# figures of a measured run come with the contract's 10 s.
attempt_timeout_s = TIMEOUT_SECONDS


def scaled(ms: int) -> int:
    """A receiver's delay of `ms` against the contract's 10 s timeout, scaled to the senders'
    timeout: slow stays slow, and past the timeout stays past it."""
    return round(ms * attempt_timeout_s / TIMEOUT_SECONDS)


def bench_sender(rx: Receiver) -> Sender:
    return Sender(
        LoopbackResolver(),
        ssl_context=rx.client_ssl,
        is_allowed=loopback_only,
        timeout=attempt_timeout_s,
    )


async def new_org(engine: AsyncEngine, name: str) -> uuid.UUID:
    async with engine.begin() as conn:
        # Whatever earlier runs left pending is not this run's to send.
        await conn.execute(
            update(Delivery).where(Delivery.status == "pending").values(status="skipped")
        )
        return await create_org(conn, f"{name} {uuid.uuid4().hex[:6]}", datetime.now(UTC))


async def subscribe(
    services: Services, org_id: uuid.UUID, urls: list[str]
) -> list[tuple[uuid.UUID, str]]:
    """Subscriptions to every event, inserted as rows (their URL is loopback, which the
    product would refuse); returns (id, secret) pairs."""
    made = []
    now = datetime.now(UTC)
    async with services.engine.begin() as conn:
        for url in urls:
            secret = new_secret()
            sub_id = await insert_new(
                conn,
                Subscription,
                org_id=org_id,
                name="bench",
                url=url,
                destination=parse_webhook_url(url).destination,
                events=["*"],
                secret_encrypted=services.secret_box.seal(secret),
                secret_prefix=secret[:8],
                enabled=True,
                consecutive_failures=0,
                created_at=now,
                updated_at=now,
            )
            made.append((sub_id, secret))
    return made


async def pending(engine: AsyncEngine, org_ids: uuid.UUID | list[uuid.UUID]) -> int:
    """The pending deliveries of one organization, or of all of several: one statement."""
    orgs = org_ids if isinstance(org_ids, list) else [org_ids]
    async with engine.connect() as conn:
        count = await conn.scalar(
            select(func.count())
            .select_from(Delivery)
            .where(Delivery.org_id.in_(orgs), Delivery.status == "pending")
        )
        return int(count or 0)


async def drained(
    engine: AsyncEngine, org_ids: uuid.UUID | list[uuid.UUID], limit_s: float, poll: float
) -> bool:
    """Waits (bounded) until the organization, or every one of several, has no pending
    delivery. Several are counted in one statement a poll: G16 waited for each of its 1,000
    in turn, counting back to back as each drained, 1,000 counts of about 15 ms (14-18 s in
    all), many of them while the drain they measured ran, in the worker's event loop and on
    the two cores it shares with its database."""
    for _ in range(int(limit_s / poll)):
        if not await pending(engine, org_ids):
            return True
        await asyncio.sleep(poll)
    return False


def _data(seq: int) -> dict[str, Any]:
    return {
        "seq": seq,
        "id": str(uuid.uuid4()),
        "aircraft_id": str(uuid.uuid4()),
        "description": "Left brake soft; pedal travels to the floor after two pumps",
        "severity": "major",
        "is_grounding": True,
    }


@dataclass
class Delivering:
    rx: Receiver
    services: Services
    org_id: uuid.UUID
    subs: list[tuple[uuid.UUID, str]]


@asynccontextmanager
async def delivering(
    settings: Settings, port: int, delay_ms: float, org_name: str, paths: list[str]
) -> AsyncIterator[Delivering]:
    """What G6-G8 each measure against: a receiver, a fresh organization subscribed at each of
    the receiver's `paths`, and a running worker delivering to it."""
    async with receiver(delay_ms, port) as rx, delivering_to(settings, rx, org_name, paths) as run:
        yield run


@asynccontextmanager
async def delivering_to(
    settings: Settings, rx: Receiver, org_name: str, paths: list[str]
) -> AsyncIterator[Delivering]:
    """A fresh organization of `settings`' database subscribed at each of `rx`'s `paths`, and a
    running worker of that database delivering to it."""
    services = bench_services(settings)
    sender = bench_sender(rx)
    worker = Worker(services, sender=sender)
    org_id = await new_org(services.engine, org_name)
    subs = await subscribe(services, org_id, [rx.url(path) for path in paths])
    await worker.start()
    try:
        yield Delivering(rx, services, org_id, subs)
    finally:
        await worker.stop()
        await sender.close()
        await services.close()


# --- G6 -------------------------------------------------------------------------------------


@dataclass
class Throughput:
    hangar: float  # deliveries/s
    bare: float  # a bare client's POSTs/s, keeping its connections alive as hangar does
    bare_per_post: float  # the same, one connection per POST (as hangar did before 1.6)
    deliveries: int
    # CPU ms per delivery by part ("this": the bench's process, where the dispatcher's worker
    # and the bare client run in turn; "receiver"; "database": PostgreSQL's processes), for
    # the dispatcher's rounds and for the kept-alive bare client's.
    hangar_cpu: dict[str, float]
    bare_cpu: dict[str, float]


async def throughput(
    settings: Settings, events: int, subscriptions: int, concurrency: int, port: int
) -> Throughput:
    """Each side delivers `events` x `subscriptions` in all, in four rounds of half as many
    events, in ABBA order (as the HTTP rows alternate), so that load from outside the run
    that comes or goes falls on both sides alike; after a warm-up round of each (20 events,
    not counted: connection pools, prepared statements, compiled statement caches)."""
    half = max(events // 2, 1)
    paths = [f"/g6/{i}" for i in range(subscriptions)]
    seconds = {"A": 0.0, "B": 0.0, "C": 0.0}
    used: dict[str, dict[str, float]] = {"A": {}, "B": {}, "C": {}}
    async with delivering(settings, port, 10.0, "Bench Hooks G6", paths) as run:
        on_pg = settings.database_url.startswith("postgresql")
        parts = lambda: cpu.sample(  # noqa: E731
            {
                "this": [os.getpid()],  # on SQLite, the database's work too
                "receiver": [run.rx.pid],
                "database": cpu.postgres_pids() if on_pg else [],
            }
        )
        await _dispatcher_round(run.services, run.org_id, min(20, half), subscriptions)
        await _bare_round(run.rx, run.subs, min(20, half), concurrency, kept_alive=True)
        before: cpu.Sample = {}

        def mark() -> None:
            nonlocal before
            before = parts()

        for side in "ABCCBA":
            if side == "A":  # from its events' commit: writing them is the product's work
                took = await _dispatcher_round(
                    run.services, run.org_id, half, subscriptions, recorded=mark
                )
            else:
                mark()
                took = await _bare_round(
                    run.rx, run.subs, half, concurrency, kept_alive=side == "B"
                )
            seconds[side] += took
            for part, s in cpu.spent(before, parts()).items():
                used[side][part] = used[side].get(part, 0.0) + s
    done = 2 * half * subscriptions
    per_ms = {side: {p: s * 1000 / done for p, s in by.items()} for side, by in used.items()}
    return Throughput(
        done / seconds["A"],
        done / seconds["B"],
        done / seconds["C"],
        done,
        hangar_cpu=per_ms["A"],
        bare_cpu=per_ms["B"],
    )


async def _dispatcher_round(
    services: Services,
    org_id: uuid.UUID,
    events: int,
    subscriptions: int,
    recorded: Callable[[], None] = lambda: None,
) -> float:
    """The dispatcher (already running, idle) drains events x subscriptions deliveries
    recorded in one transaction; seconds from its commit (when `recorded` is called) to the
    last recorded outcome."""
    now = datetime.now(UTC)
    async with services.engine.begin() as conn:
        for seq in range(events):
            await record(conn, org_id, ["squawk.created"], _data(seq), now)
    recorded()
    began = datetime.now(UTC)
    # Polled slowly: a count every few ms would load the database and this event loop
    # while the dispatcher works (the bare side has no such load). The end is the last
    # delivery's completed_at (set when its outcome is recorded), not the moment the poll
    # notices it.
    await drained(services.engine, org_id, 600, 0.5)
    async with services.engine.connect() as conn:
        succeeded, finished = (
            await conn.execute(
                select(func.count(), func.max(Delivery.completed_at)).where(
                    Delivery.org_id == org_id,
                    Delivery.created_at == now,
                    Delivery.status == "succeeded",
                )
            )
        ).one()
    if succeeded != events * subscriptions or finished is None:
        raise RuntimeError(f"only {succeeded} of {events * subscriptions} delivered")
    if finished.tzinfo is None:  # SQLite, through max()
        finished = finished.replace(tzinfo=UTC)
    return float((finished - began).total_seconds())


async def _bare_round(
    rx: Receiver,
    subs: list[tuple[uuid.UUID, str]],
    events: int,
    concurrency: int,
    *,
    kept_alive: bool,
) -> float:
    """A bare aiohttp client POSTs the same signed bodies at the same concurrency: over
    connections kept alive in one pool (as the dispatcher's sender does), or one connection
    per POST (as it did before: the contrast)."""
    bodies = []
    stamp = datetime.now(UTC)
    for seq in range(events):
        payload, event_id = serialize(_data(seq)), str(uuid.uuid4())
        for i, (sub_id, secret) in enumerate(subs):
            body = envelope("squawk.created", stamp, payload)
            sent = headers(
                "squawk.created", str(sub_id), secret, body, event_id=event_id, sent_at=stamp
            )
            bodies.append((rx.url(f"/g6/{i}"), sent, body))
    slots = asyncio.Semaphore(concurrency)
    timeout = aiohttp.ClientTimeout(total=10)
    pool = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(resolver=_Pinned(), ssl=rx.client_ssl, limit=concurrency),
        timeout=timeout,
    )

    async def post(url: str, hdrs: dict[str, str], body: bytes) -> None:
        async with slots:
            if kept_alive:
                async with pool.post(url, data=body, headers=hdrs, allow_redirects=False) as r:
                    await r.content.read(2048)
                return
            connector = aiohttp.TCPConnector(
                resolver=_Pinned(), ssl=rx.client_ssl, force_close=True, limit=1
            )
            async with (
                aiohttp.ClientSession(connector=connector, timeout=timeout) as session,
                session.post(url, data=body, headers=hdrs, allow_redirects=False) as resp,
            ):
                await resp.content.read(2048)

    try:
        started = time.monotonic()
        await asyncio.gather(*(post(*b) for b in bodies))
        return time.monotonic() - started
    finally:
        await pool.close()


# --- G7 -------------------------------------------------------------------------------------


async def latency(settings: Settings, samples: int, port: int) -> list[float]:
    """Commit of a product action's transaction → its delivery's first byte at the
    receiver, with the dispatcher idle before each; milliseconds."""
    async with delivering(settings, port, 0.0, "Bench Hooks G7", ["/g7"]) as run:
        await asyncio.sleep(0.5)
        return await _commit_to_arrival(run, range(samples))


async def _commit_to_arrival(run: Delivering, seqs: range) -> list[float]:
    """For each of `seqs`, one event of `run`'s organization committed once its previous
    delivery has arrived and 0.2 s have passed: milliseconds from each commit to the first
    byte of its delivery at the receiver."""
    committed: dict[int, float] = {}
    for seq in seqs:
        async with run.services.engine.begin() as conn:
            await record(conn, run.org_id, ["squawk.created"], _data(seq), datetime.now(UTC))
        committed[seq] = time.time()
        # The arrival is timed by the receiver; looking for the end here only keeps the
        # samples apart. It waits first, and polls slowly: a poll every few ms would compete
        # for this event loop and the database with the delivery it is waiting for (it
        # added milliseconds to the claim and the TLS handshake).
        await asyncio.sleep(0.1)
        await drained(run.services.engine, run.org_id, 5, 0.05)
        await asyncio.sleep(0.2)  # idle again
    arrivals = {entry[3]: entry[0] for entry in await run.rx.log() if entry[3] in committed}
    return [(arrivals[s] - t) * 1000 for s, t in committed.items() if s in arrivals]


# --- G14 ------------------------------------------------------------------------------------


async def latency_beside(
    quiet: Settings, loaded: Settings, samples: int, port: int
) -> tuple[list[float], list[float]]:
    """G7 against two databases at once, a sample of one, then of the other (so that what
    the machine does meanwhile falls on both alike): (`quiet`'s, `loaded`'s) milliseconds.
    Each has its own worker, as `hangar worker` runs it; one receiver hears both."""
    async with (
        receiver(0.0, port) as rx,
        delivering_to(quiet, rx, "Bench Hooks G14 quiet", ["/g14/quiet"]) as a,
        delivering_to(loaded, rx, "Bench Hooks G14 loaded", ["/g14/loaded"]) as b,
    ):
        await asyncio.sleep(0.5)
        found: tuple[list[float], list[float]] = ([], [])
        for seq in range(samples):
            for side, run in enumerate((a, b)):
                found[side].extend(
                    await _commit_to_arrival(run, range(seq * 2 + side, seq * 2 + side + 1))
                )
        return found


# --- G14b -----------------------------------------------------------------------------------


@dataclass
class Pruning:
    quiet: list[float]  # G7's milliseconds before the pruning
    pruning: list[float]  # G7's milliseconds while it runs
    deleted: int  # deliveries pruned while G7 was measured
    seconds: float  # how long the pruning ran


async def latency_while_pruning(
    settings: Settings, env: dict[str, str], samples: int, port: int
) -> Pruning:
    """G7 on `settings`' database, then again while `hangar jobs run retention` (the job the
    scheduler runs each minute, with its budget and pauses) runs back to back in a process
    of its own: what a worker delivering sees while a large backlog of old rows is pruned."""
    async with delivering(settings, port, 0.0, "Bench Hooks G14b", ["/g14b"]) as run:
        await asyncio.sleep(0.5)
        quiet = await _commit_to_arrival(run, range(samples))
        before = await _finished_count(run.services.engine)
        stop = asyncio.Event()
        began = time.monotonic()
        pruner = asyncio.create_task(_prune_until(stop, env))
        try:
            await asyncio.sleep(2.0)  # under way
            pruning = await _commit_to_arrival(run, range(samples, 2 * samples))
        finally:
            stop.set()
            await pruner
        seconds = time.monotonic() - began
        deleted = before - await _finished_count(run.services.engine)
    return Pruning(quiet, pruning, deleted, seconds)


async def _finished_count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        count = await conn.scalar(
            select(func.count()).select_from(Delivery).where(Delivery.status != "pending")
        )
    return int(count or 0)


async def _prune_until(stop: asyncio.Event, env: dict[str, str]) -> None:
    """`hangar jobs run retention`, again as soon as it ends, until `stop`."""
    hangar = str(Path(sys.executable).with_name("hangar"))
    while not stop.is_set():
        proc = await asyncio.create_subprocess_exec(
            hangar, "jobs", "run", "retention", env=env, stdout=asyncio.subprocess.DEVNULL
        )
        waiting = asyncio.ensure_future(stop.wait())
        ended = asyncio.ensure_future(proc.wait())
        await asyncio.wait((waiting, ended), return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if not ended.done():
            proc.terminate()  # a stopping worker ends the run at its next pause
            await ended


# --- G13 ------------------------------------------------------------------------------------

# The other organization's endpoint in G13: answering after 8 s, then not answering within the
# 10 s attempt timeout (the receiver answers after 12 s).
G13_PHASES = (("8 s endpoint", 8000), ("timing-out endpoint", 12000))


@dataclass
class Phase:
    name: str
    ms: list[float]  # the healthy organization's commit-to-arrival times
    slow_attempts: int  # attempts the slow endpoint had received by the phase's end


async def fairness(settings: Settings, samples: int, backlog_size: int, port: int) -> list[Phase]:
    """G7's measure for a healthy organization, quiet, then while another organization's
    endpoint is slow (G13_PHASES) with `backlog_size` deliveries queued for it; one worker,
    as `hangar worker` runs it."""
    async with delivering(settings, port, 0.0, "Bench Hooks G13", ["/g13/healthy"]) as run:
        engine = run.services.engine
        await asyncio.sleep(0.5)
        phases = [Phase("quiet", await _commit_to_arrival(run, range(samples)), 0)]
        for index, (name, delay_ms) in enumerate(G13_PHASES, start=1):
            # A new organization each time: the previous one's backlog is set aside.
            slow = await new_org(engine, f"Bench Hooks G13 slow {index}")
            path = f"/delay/{scaled(delay_ms)}/g13/slow"
            await subscribe(run.services, slow, [run.rx.url(path)])
            await backlog(settings, slow, backlog_size)
            async with engine.begin() as conn:
                await wake_dispatchers(conn)  # the backlog was written in bulk
            for _ in range(100):  # until the slow endpoint has its first attempts
                if any(entry[1] == path for entry in await run.rx.log()):
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            seqs = range(index * 10_000, index * 10_000 + samples)
            ms = await _commit_to_arrival(run, seqs)
            started = sum(1 for entry in await run.rx.log() if entry[1] == path)
            phases.append(Phase(name, ms, started))
        # What is still queued for the slow endpoints is not the next row's business.
        await new_org(engine, "Bench Hooks G13 end")
        return phases


# --- G13b -----------------------------------------------------------------------------------

TIMING_OUT_MS = 12000  # past the 10 s timeout: every attempt there times out


async def isolation(
    settings: Settings, samples: int, backlog_size: int, ports: tuple[int, int]
) -> list[Phase]:
    """G7's measure for a healthy organization delivering to an endpoint of its own (its own
    destination), quiet, then (a) while another organization's 20 subscriptions all time out,
    each with `backlog_size` deliveries queued, then (b) also while 200 organizations, each
    subscribed once to one partner's endpoint (one destination), which times out, have two
    each queued; one worker, as `hangar worker` runs it."""
    ca = trustme.CA()  # the worker trusts both: the partner's attempts must time out, not fail
    async with (
        receiver(0.0, ports[0], ca) as healthy,
        receiver(0.0, ports[1], ca) as partner,
        delivering_to(settings, healthy, "Bench Hooks G13b", ["/g13b/healthy"]) as run,
    ):
        engine = run.services.engine
        timing_out = f"/delay/{scaled(TIMING_OUT_MS)}"
        await asyncio.sleep(0.5)
        phases = [Phase("quiet", await _commit_to_arrival(run, range(samples)), 0)]
        one = await new_org(engine, "Bench Hooks G13b (a)")
        await subscribe(run.services, one, [partner.url(f"{timing_out}/a/{i}") for i in range(20)])
        await backlog(settings, one, backlog_size)
        await _until_attempted(run, partner, f"{timing_out}/a/")
        seqs = range(10_000, 10_000 + samples)
        phases.append(Phase("(a)", await _commit_to_arrival(run, seqs), 0))
        await _only_timeouts(engine, one)
        many = []
        for n in range(200):
            many.append(await _org(engine, f"Bench Hooks G13b (b) {n}"))
            await subscribe(run.services, many[-1], [partner.url(f"{timing_out}/b")])
        await backlogs(settings, many, 2)
        await _until_attempted(run, partner, f"{timing_out}/b")
        seqs = range(20_000, 20_000 + samples)
        phases.append(Phase("(a) and (b)", await _commit_to_arrival(run, seqs), 0))
        await new_org(engine, "Bench Hooks G13b end")  # what is still queued is set aside
        return phases


async def _only_timeouts(engine: AsyncEngine, org_id: uuid.UUID) -> None:
    """What the row measures is a healthy organization beside endpoints that time out: an
    attempt there that ended otherwise (a certificate not trusted, a refused connection)
    would measure something else, so it stops the row."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(Attempt.outcome, func.count())
            .join(Delivery, Delivery.id == Attempt.delivery_id)
            .where(Delivery.org_id == org_id)
            .group_by(Attempt.outcome)
        )
        outcomes = {row[0]: row[1] for row in rows}
    if set(outcomes) - {"timeout"}:  # none yet is fine: a short (smoke) phase ends sooner
        raise RuntimeError(f"the timing-out endpoints' attempts ended otherwise: {outcomes}")


async def _org(engine: AsyncEngine, name: str) -> uuid.UUID:
    """A new organization, leaving what is pending as it is (new_org sets it aside)."""
    async with engine.begin() as conn:
        return await create_org(conn, f"{name} {uuid.uuid4().hex[:6]}", datetime.now(UTC))


async def _until_attempted(run: Delivering, rx: Receiver, prefix: str) -> None:
    async with run.services.engine.begin() as conn:
        await wake_dispatchers(conn)  # the backlog was written in bulk
    for _ in range(100):  # until the endpoint has its first attempts
        if any(entry[1].startswith(prefix) for entry in await rx.log()):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)


# --- G16 ------------------------------------------------------------------------------------


@dataclass
class Tenants:
    deliveries_per_s: float  # many organizations, one subscription each
    deliveries: int


async def many_tenants(settings: Settings, orgs: int, per_org: int, port: int) -> Tenants:
    """`orgs` organizations with one subscription each, `per_org` deliveries queued for each
    (written in bulk, as G9's backlog): the running worker drains them all; seconds from the
    wake to the last recorded outcome."""
    async with receiver(10.0, port) as rx:
        services = bench_services(settings)
        sender = bench_sender(rx)
        worker = Worker(services, sender=sender)
        engine = services.engine
        try:
            await new_org(engine, "Bench Hooks G16")  # what earlier rows left is set aside
            made = []
            for n in range(orgs):
                org_id = await _org(engine, f"Bench Hooks G16 {n}")
                await subscribe(services, org_id, [rx.url(f"/g16/{n}")])
                made.append(org_id)
            await backlogs(settings, made, per_org)
            await worker.start()
            began = datetime.now(UTC)
            async with engine.begin() as conn:
                await wake_dispatchers(conn)
            await drained(engine, made, 600, 0.5)
            async with engine.connect() as conn:
                succeeded, finished = (
                    await conn.execute(
                        select(func.count(), func.max(Delivery.completed_at)).where(
                            Delivery.org_id.in_(made), Delivery.status == "succeeded"
                        )
                    )
                ).one()
        finally:
            await worker.stop()
            await sender.close()
            await services.close()
    total = orgs * per_org
    if succeeded != total or finished is None:
        raise RuntimeError(f"only {succeeded} of {total} delivered")
    if finished.tzinfo is None:  # SQLite, through max()
        finished = finished.replace(tzinfo=UTC)
    return Tenants(total / (finished - began).total_seconds(), total)


async def claim_times(settings: Settings, subscriptions: int, claims: int) -> list[float]:
    """Milliseconds of `claims` claims of a batch each (their leases released after each),
    with `subscriptions` subscriptions (ten per organization) holding one due delivery each,
    written in bulk. Each claim walks on round the ring from where the last stopped
    (claims.Ring), as a running worker's do."""
    services = bench_services(settings)
    engine = services.engine
    now = datetime.now(UTC)
    try:
        await new_org(engine, "Bench Hooks G16 claims")  # what earlier rows left is set aside
        orgs = [
            await _org(engine, f"Bench Hooks G16 claims {n}") for n in range(subscriptions // 10)
        ]
        subs = [(org_id, new_id()) for org_id in orgs for _ in range(10)]
        events = [new_id() for _ in subs]
        async with engine.begin() as conn:
            await conn.execute(
                insert(Subscription),
                [
                    {
                        "id": sub_id, "org_id": org_id, "name": "bench",
                        "url": f"https://g16-{sub_id.hex[:12]}.example.com/in",
                        "destination": f"g16-{sub_id.hex[:12]}.example.com:443",
                        "events": ["*"], "secret_encrypted": "-", "secret_prefix": "-",
                        "enabled": True, "consecutive_failures": 0,
                        "created_at": now, "updated_at": now,
                    }
                    for org_id, sub_id in subs
                ],
            )  # fmt: skip
            await conn.execute(
                insert(Event),
                [
                    {
                        "id": e,
                        "org_id": o,
                        "name": "squawk.created",
                        "data": "{}",
                        "created_at": now,
                    }
                    for (o, _), e in zip(subs, events, strict=True)
                ],
            )
            await conn.execute(
                insert(Delivery),
                [
                    pending_delivery(o, s, e, "squawk.created", now)
                    for (o, s), e in zip(subs, events, strict=True)
                ],
            )
        if engine.dialect.name == "postgresql":
            async with engine.connect() as conn:
                await conn.execute(text("ANALYZE"))
        sender = Sender(LoopbackResolver(), is_allowed=loopback_only)
        dispatcher = Dispatcher(engine, SystemClock(), sender, services.secret_box)
        times = []
        # One claim first, not timed: it opens the pool's connection and prepares the
        # statements, once per worker process, not per claim.
        for n in range(claims + 1):
            started = time.perf_counter()
            claimed = await dispatcher.claim()
            if n:
                times.append((time.perf_counter() - started) * 1000)
            async with engine.begin() as conn:
                await conn.execute(
                    update(Delivery)
                    .where(Delivery.id.in_([c.id for c in claimed]))
                    .values(lease_until=None)
                )
        await new_org(engine, "Bench Hooks G16 claims end")  # set aside
        return times
    finally:
        await services.close()


# --- G8 -------------------------------------------------------------------------------------


async def retry_waits(
    settings: Settings, deliveries: int, port: int, limit_s: float
) -> tuple[list[float], list[float]]:
    """Three attempts of each delivery to a receiver that fails the first two: the measured
    gaps between the arrivals of attempts 1 and 2, and of 2 and 3 (seconds)."""
    async with delivering(settings, port, 0.0, "Bench Hooks G8", ["/g8/fail2"]) as run:
        async with run.services.engine.begin() as conn:
            for seq in range(deliveries):
                await record(conn, run.org_id, ["squawk.created"], _data(seq), datetime.now(UTC))
        await drained(run.services.engine, run.org_id, limit_s, 0.1)
        log = await run.rx.log()
    by_delivery: dict[str, list[float]] = {}
    for arrived, _, delivery, _ in log:
        by_delivery.setdefault(delivery, []).append(arrived)
    first: list[float] = []
    second: list[float] = []
    for times in by_delivery.values():
        times.sort()
        if len(times) >= 2:
            first.append(times[1] - times[0])
        if len(times) >= 3:
            second.append(times[2] - times[1])
    return first, second


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def summary(values: list[float]) -> str:
    if not values:
        return "no samples"
    return (
        f"p50 {statistics.median(values):.1f} ms, p99 {percentile(values, 0.99):.1f} ms "
        f"(n={len(values)})"
    )


# --- G9 (worker memory) ---------------------------------------------------------------------


@dataclass
class Drain:
    deliveries: int
    delivered: int
    seconds: float
    rss_start_mb: float  # the worker's resident set once it was ready
    peak_rss_mb: float  # VmHWM when the backlog was drained (or the time ran out)


async def backlog(settings: Settings, org_id: uuid.UUID, events: int) -> None:
    """`events` events and one pending delivery per event and subscription of the
    organization: the rows `outbox.record` writes for a product action, written in bulk."""
    await backlogs(settings, [org_id], events)


async def backlogs(settings: Settings, org_ids: list[uuid.UUID], events: int) -> None:
    """`backlog` for each of `org_ids`, over one connection pool, the queue analyzed once."""
    services = build_services(settings)
    try:
        for org_id in org_ids:
            async with services.engine.connect() as conn:
                subs = (
                    await conn.scalars(select(Subscription.id).where(Subscription.org_id == org_id))
                ).all()
            now = datetime.now(UTC)
            chunk = 2000
            for start in range(0, events, chunk):
                seqs = range(start, min(start + chunk, events))
                ids = [new_id() for _ in seqs]
                rows = [
                    {
                        "id": event_id,
                        "org_id": org_id,
                        "name": "squawk.created",
                        "data": serialize(_data(seq)),
                        "created_at": now,
                    }
                    for seq, event_id in zip(seqs, ids, strict=True)
                ]
                deliveries = [
                    pending_delivery(org_id, sub_id, event_id, "squawk.created", now)
                    for event_id in ids
                    for sub_id in subs
                ]
                async with services.engine.begin() as conn:
                    await conn.execute(insert(Event), rows)
                    await conn.execute(insert(Delivery), deliveries)
        await analyze_queue(settings.database_url)
    finally:
        await services.close()


def _rss_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def worker_memory(
    settings: Settings,
    env: dict[str, str],
    events: int,
    subscriptions: int,
    port: int,
    limit_s: float,
) -> Drain:
    """A worker process, run as `hangar worker` runs it, drains a backlog of events x
    subscriptions pending deliveries; its peak resident set (VmHWM) is read at the end."""
    async with receiver(0.0, port) as rx:
        services = bench_services(settings)
        try:
            org_id = await new_org(services.engine, "Bench Hooks G9")
            await subscribe(services, org_id, [rx.url(f"/g9/{i}") for i in range(subscriptions)])
        finally:
            await services.close()
        await backlog(settings, org_id, events)
        total = events * subscriptions
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.webhooks",
            "worker",
            "--ca",
            str(rx.ca_file),
            env=env,
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            ready = await asyncio.wait_for(proc.stdout.readline(), 60)
            if ready.strip() != b"worker ready":
                raise RuntimeError("the worker process did not start")
            rss_start = _rss_mb(proc.pid, "VmRSS")
            started = time.monotonic()
            services = bench_services(settings)
            try:
                await drained(services.engine, org_id, limit_s, 1.0)
                seconds = time.monotonic() - started
                left = await pending(services.engine, org_id)
            finally:
                await services.close()
            peak = _rss_mb(proc.pid, "VmHWM")
        finally:
            if proc.returncode is None:
                proc.terminate()
                await asyncio.wait_for(proc.wait(), 30)
    return Drain(total, total - left, seconds, rss_start, peak)


async def _worker_main(ca_file: str) -> None:
    """`hangar worker` (hangar.cli.worker.worker), with the sender reaching the loopback receiver
    through the injected resolver and address rule."""
    from hangar.foundation.config import load_settings

    services = build_services(load_settings())
    client_ssl = ssl.create_default_context(cafile=ca_file)
    sender = Sender(LoopbackResolver(), ssl_context=client_ssl, is_allowed=loopback_only)
    try:
        worker = Worker(services, sender=sender)
        print("worker ready", flush=True)
        await worker.run_forever()
    finally:
        await sender.close()
        await services.close()


Runner = Callable[[], Any]


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.webhooks")
    parser.add_argument("command", choices=["worker"])
    parser.add_argument("--ca", required=True)
    args = parser.parse_args()
    asyncio.run(_worker_main(args.ca))
