"""The scale-out topology of docs/operators/deploy.md, run for real on loopback: nginx (deploy/'s
site configuration, with a test certificate) round-robin in front of two `hangar serve
--no-worker` processes, and two workers, on one PostgreSQL database and one Redis.

- an API key's 61st request within a calendar minute is refused, whichever process answers
  it (the spec's 60 a minute, counted in Redis);
- a burst of product actions reaches the subscriber once per delivery, with both workers
  delivering;
- a server process and a worker killed (SIGKILL) in the middle of a burst lose nothing but
  the requests in flight at the server, and no event: the surviving worker delivers every
  delivery the dead one held, once its leases run out (shortened here to LEASE_S).

The servers are the `hangar` command itself, with deploy/hangar.env.example's settings. The
workers are the production Worker as `hangar worker` runs it (tests/fixtures/worker_process.py),
except that their sender reaches this test's loopback receiver. Everything is polled against
deadlines; the processes are stopped (SIGKILL if need be) whatever happens.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest
import trustme
from prometheus_client.parser import text_string_to_metric_families
from scripts.scratch import free_port
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.accounts.service.sign_in import ADDRESS_LIMITS
from hangar.auth import sessions
from hangar.fleet.models import Aircraft
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import Settings
from hangar.squawks.models import Squawk
from hangar.webhooks.models import Delivery
from hangar.wiring.container import build_services
from tests.fixtures.clients import session_for
from tests.fixtures.counting_receiver import CountingReceiver
from tests.fixtures.deploy import NGINX, deploy_env, nginx_argv, nginx_config, site_tls
from tests.fixtures.environment import PG_URL, REDIS_URL, SECRET
from tests.fixtures.factories import Org, make_org
from tests.fixtures.receivers import https_endpoint
from tests.fixtures.subprocesses import Started, eventually, started, until_healthy
from tests.fixtures.webhooks import subscribe
from tests.fixtures.worker_process import worker_process

pytestmark = [
    pytest.mark.skipif(not PG_URL, reason="the scale-out topology runs on PostgreSQL"),
    pytest.mark.skipif(not REDIS_URL, reason="the scale-out topology needs Redis"),
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed (.ci/run installs it)"),
]

ENTRY_POINT = Path(sys.executable).with_name("hangar")
STARTUP_S = 120.0  # four processes and nginx starting at once on a loaded 2-core machine
LEASE_S = 8.0  # the workers' lease (production: 60 s): long enough for any attempt here
# Each worker's attempt slots (production: 100). The subscriber's cap (10 in flight, across
# workers) is then shared by both: neither can take it all, so both deliver.
WORKER_SLOTS = 2
PER_MINUTE = 60  # the spec's requests per key per calendar minute
BURST = 50  # squawks reported in the burst
KILL_BURST = 40  # squawks reported while a server and a worker are killed
CONCURRENCY = 4  # requests in flight at once through nginx
DELIVERED_S = 60.0

METRICS_TOKEN = "scale-out-metrics-token-0123456789"


@dataclass
class Topology:
    base: str
    client_ssl: ssl.SSLContext
    access_log: Path
    servers: list[Started]
    server_ports: list[int]
    workers: list[asyncio.subprocess.Process]
    receiver: CountingReceiver
    org: Org
    subscription: uuid.UUID
    aircraft_id: str
    session: tuple[str, str]  # cookie token, CSRF token
    engine: AsyncEngine

    def client(self) -> httpx.AsyncClient:
        token, csrf = self.session
        return httpx.AsyncClient(
            base_url=self.base,
            verify=self.client_ssl,
            timeout=30,
            cookies={sessions.COOKIE: token},
            headers={"X-CSRF-Token": csrf},
            limits=httpx.Limits(max_connections=CONCURRENCY),
        )

    def anonymous(self, source: str) -> httpx.AsyncClient:
        """A client with no session, whose connections come from the address `source`."""
        return httpx.AsyncClient(
            base_url=self.base,
            verify=self.client_ssl,
            timeout=30,
            transport=httpx.AsyncHTTPTransport(verify=self.client_ssl, local_address=source),
        )

    def access_lines(self) -> list[str]:
        return self.access_log.read_text().splitlines()


# --- the topology ---------------------------------------------------------------------------


@asynccontextmanager
async def built(
    database_url: str, engine: AsyncEngine, ca: trustme.CA, where: Path, repo_root: Path
) -> AsyncIterator[Topology]:
    nginx_port, server_ports = free_port(), [free_port(), free_port()]
    base = f"https://127.0.0.1:{nginx_port}"
    env = deploy_env(
        {
            "HANGAR_DATABASE_URL": database_url,
            "HANGAR_SECRET_KEY": SECRET,
            "HANGAR_SECRET_KEY_PREVIOUS": "",  # no rotation under way
            "HANGAR_REDIS_URL": REDIS_URL or "",
            "HANGAR_PUBLIC_URL": base,
            "HANGAR_SERVICE_DOMAIN": "127.0.0.1",
            "HANGAR_REDIS_PREFIX": f"hangar-topology-{uuid.uuid4().hex[:12]}",
            # The operator's view of the topology: metrics and JSON logs, as deployed.
            "HANGAR_METRICS_TOKEN": METRICS_TOKEN,
            "HANGAR_LOG_FORMAT": "json",
            "HANGAR_LOG_LEVEL": "info",
            "HANGAR_DELIVERY_RETENTION_DAYS": "30",
            "HANGAR_AUDIT_RETENTION_DAYS": "365",
            "HANGAR_MAX_SUBSCRIPTIONS_PER_ORG": "20",
            "HANGAR_DB_POOL_SIZE": "10",
            # nginx, on loopback, names each client's address (the sign-in test's two).
            "HANGAR_TRUSTED_PROXIES": "127.0.0.1",
            # No mail here: links are handed over.
            "HANGAR_SMTP_URL": "",
            "HANGAR_MAIL_FROM": "",
        }
    )
    settings = Settings(database_url=database_url, secret_key=SECRET, public_url=base)
    # The processes' clock: the session and the subscription are written as of now.
    services = build_services(settings, clock=SystemClock(), engine=engine)
    org = await make_org(engine, "Scale-out Aero")
    plane = await org.add(Aircraft)
    session = await session_for(services, org.admin_id)

    cert, key, client_ssl = site_tls(where, ca)
    conf = nginx_config(where, nginx_port, server_ports, cert, key)

    async with AsyncExitStack() as stack:
        receiver = await stack.enter_async_context(https_endpoint(ca, CountingReceiver(port=0)))
        subscription = await subscribe(services, org, receiver.url(), events=["squawk.created"])
        # The one migration run, before any process starts (each finds the schema at head).
        migrate = [str(ENTRY_POINT), "db", "upgrade"]
        async with started(migrate, env, where / "migrate.log", where) as migrated:
            await eventually(lambda: not migrated.alive(), STARTUP_S, "the migration run")
            assert migrated.proc.returncode == 0, migrated.output()

        servers = [
            await stack.enter_async_context(
                started(
                    [str(ENTRY_POINT), "serve", "--no-worker", "--port", str(port)],
                    env,
                    where / f"serve-{port}.log",
                    where,
                )
            )
            for port in server_ports
        ]
        for n in (1, 2):
            (where / f"worker-{n}").mkdir()
        workers = [
            await stack.enter_async_context(
                worker_process(
                    database_url,
                    ca,
                    where / f"worker-{n}",
                    repo_root,
                    lease_s=LEASE_S,
                    slots=WORKER_SLOTS,
                )
            )
            for n in (1, 2)
        ]
        receiver.workers = [w.pid for w in workers]
        for port, server in zip(server_ports, servers, strict=True):
            await until_healthy(f"http://127.0.0.1:{port}", server, STARTUP_S)
        nginx = await stack.enter_async_context(
            started(
                nginx_argv(where, conf),
                env,
                where / "nginx.out",
                where,
            )
        )

        async def through_nginx() -> bool:
            assert nginx.alive(), (where / "error.log").read_text()
            try:
                async with httpx.AsyncClient(verify=client_ssl, timeout=5) as probe:
                    return (await probe.get(f"{base}/api/health")).status_code == 200
            except httpx.TransportError:
                return False

        await eventually(through_nginx, STARTUP_S, "nginx serving")
        yield Topology(
            base=base,
            client_ssl=client_ssl,
            access_log=where / "access.log",
            servers=servers,
            server_ports=server_ports,
            workers=workers,
            receiver=receiver,
            org=org,
            subscription=subscription,
            aircraft_id=str(plane["id"]),
            session=session,
            engine=engine,
        )


@pytest.fixture(scope="module")
async def topology(
    database_url: str,
    engine: AsyncEngine,
    ca: trustme.CA,
    tmp_path_factory: pytest.TempPathFactory,
    repo_root: Path,
) -> AsyncIterator[Topology]:
    """The module's topology, shared by the tests that leave it whole."""
    where = tmp_path_factory.mktemp("topology")
    async with built(database_url, engine, ca, where, repo_root) as shared:
        yield shared


@pytest.fixture
async def doomed_topology(
    database_url: str, engine: AsyncEngine, ca: trustme.CA, tmp_path: Path, repo_root: Path
) -> AsyncIterator[Topology]:
    """A topology of the test's own, for a test that kills its processes: in a random order,
    the shared one would reach the tests after it with a server and a worker dead."""
    async with built(database_url, engine, ca, tmp_path, repo_root) as own:
        yield own


# --- what the tests do and read -----------------------------------------------------------------


@dataclass
class Call:
    started: float
    ended: float
    status: int


async def report_squawks(
    topology: Topology, count: int, after_each: Callable[[list[Call]], Awaitable[None]] | None
) -> list[Call]:
    """`count` squawks reported through nginx, CONCURRENCY at a time; `after_each` is awaited
    after each answer, with the calls so far."""
    calls: list[Call] = []
    todo = iter(range(count))
    body = {"aircraft_id": topology.aircraft_id, "description": "Oil leak", "severity": "minor"}

    async with topology.client() as client:

        async def one_after_another() -> None:
            for _ in todo:
                began = time.monotonic()
                try:
                    response = await client.post(
                        f"/api/orgs/{topology.org.id}/squawks",
                        content=orjson.dumps(body),
                        headers={"Content-Type": "application/json"},
                    )
                    status = response.status_code
                except httpx.TransportError:
                    status = 0
                calls.append(Call(began, time.monotonic(), status))
                if after_each is not None:
                    await after_each(calls)

        await asyncio.gather(*(one_after_another() for _ in range(CONCURRENCY)))
    return calls


async def deliveries(topology: Topology) -> dict[str, str]:
    """{delivery id: status} of the subscription."""
    async with topology.engine.connect() as conn:
        rows = await conn.execute(
            select(Delivery.id, Delivery.status).where(
                Delivery.subscription_id == topology.subscription
            )
        )
        return {str(row.id): row.status for row in rows}


async def squawk_count(topology: Topology) -> int:
    async with topology.engine.connect() as conn:
        found = await conn.scalar(
            select(func.count()).select_from(Squawk).where(Squawk.org_id == topology.org.id)
        )
    return int(found or 0)


async def all_delivered(topology: Topology) -> bool:
    found = await deliveries(topology)
    return all(status == "succeeded" for status in found.values()) and all(
        topology.receiver.answered[d] for d in found
    )


async def past_one_keys_limit(topology: Topology) -> tuple[int, list[httpx.Response]]:
    """A new key's PER_MINUTE + 4 requests through nginx, all in one calendar minute (the
    last four are past the limit), and how many access lines there were before them. A run
    that straddles a minute (its counts split) is made again, with a new key, early in the
    new minute."""
    for _ in range(2):
        key = await topology.org.key_with("read:aircraft")
        seen = len(topology.access_lines())
        minute = int(time.time() // 60)
        answers = []
        async with httpx.AsyncClient(
            base_url=topology.base, verify=topology.client_ssl, timeout=30
        ) as client:
            for _ in range(PER_MINUTE + 4):
                answers.append(
                    await client.get(
                        "/api/v1/external/aircraft", headers={"Authorization": f"Bearer {key}"}
                    )
                )
        if int(time.time() // 60) == minute:
            return seen, answers
    pytest.fail("two runs in a row straddled a minute")


async def access_lines_since(topology: Topology, seen: int, count: int) -> list[list[str]]:
    """nginx's access lines after the first `seen`, split, once at least `count` are there:
    nginx writes a request's line once its answer has gone, a moment after the client has
    it."""
    await eventually(lambda: len(topology.access_lines()) >= seen + count, 5, "every access line")
    return [line.split() for line in topology.access_lines()[seen:]]


# --- the tests ------------------------------------------------------------------------------


async def test_an_api_keys_61st_request_in_a_minute_is_refused_whichever_process_answers(
    topology: Topology,
) -> None:
    seen, answers = await past_one_keys_limit(topology)
    assert [a.status_code for a in answers] == [200] * PER_MINUTE + [429] * 4
    assert {a.json()["code"] for a in answers[PER_MINUTE:]} == {"RATE_LIMITED"}
    # hangar's own 429s, through nginx as they are: nginx answers only its own limits' 429s
    # (with Retry-After), and the contract's per-key 429 has none.
    assert not any("retry-after" in a.headers for a in answers)
    # Each answer, whichever process gave it, came through nginx with its own request id.
    assert len({a.headers["x-request-id"] for a in answers}) == len(answers)
    logged = await access_lines_since(topology, seen, len(answers))
    assert len(logged) == PER_MINUTE + 4
    upstreams = {f"127.0.0.1:{port}" for port in topology.server_ports}
    # Both processes answered within the limit, and both refused past it.
    assert {upstream for status, upstream, *_ in logged if status == "200"} == upstreams
    assert {upstream for status, upstream, *_ in logged if status == "429"} == upstreams


async def test_sign_in_failures_behind_nginx_are_counted_per_client_address(
    topology: Topology,
) -> None:
    allowed = ADDRESS_LIMITS[0].count
    # A fresh flooding address per try: a try that straddles a calendar minute splits its
    # counts, and the next begins with none spent.
    for flooder in ("127.0.0.2", "127.0.0.3"):
        minute = int(time.time() // 60)
        seen = [len(server.output()) for server in topology.servers]
        async with (
            topology.anonymous(flooder) as attacker,
            topology.anonymous("127.0.0.1") as bystander,
        ):
            flood = [
                await attacker.post("/api/session", json=wrong_credentials())
                for _ in range(allowed + 2)
            ]
            # Another address, through the same nginx, is still asked for a password.
            other = await bystander.post("/api/session", json=wrong_credentials())
        if int(time.time() // 60) == minute:
            break
    else:
        pytest.fail("two runs in a row straddled a minute")

    assert [r.status_code for r in flood] == [401] * allowed + [429] * 2
    assert int(flood[-1].headers["Retry-After"]) > 0
    assert other.status_code == 401
    # Both processes logged the client's address, not nginx's.
    logged = [
        orjson.loads(line)
        for server, start in zip(topology.servers, seen, strict=True)
        for line in server.output()[start:].splitlines()
        if '"/api/session"' in line
    ]
    clients = Counter(entry["client"].rpartition(":")[0] for entry in logged)
    assert clients == {flooder: allowed + 2, "127.0.0.1": 1}


def wrong_credentials() -> dict[str, str]:
    return {"email": f"nobody-{uuid.uuid4().hex[:8]}@example.org", "password": "guess"}


async def test_each_instance_counts_its_own_refusals_and_nginx_keeps_metrics_in(
    topology: Topology,
) -> None:
    # Each instance counts its own (the servers of one `--workers N` instance sum theirs; two
    # instances do not), and is scraped where it listens: through nginx, /metrics is not
    # found, token or none (issue 40).
    seen, answers = await past_one_keys_limit(topology)  # four refused, spread over both
    async with httpx.AsyncClient(
        base_url=topology.base, verify=topology.client_ssl, timeout=30
    ) as client:
        outside = [
            await client.get("/metrics"),
            await client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}),
        ]
    assert [answer.status_code for answer in outside] == [404, 404]
    logged = await access_lines_since(topology, seen, len(answers) + len(outside))
    # nginx's own answers: no upstream ("-") was asked.
    assert [line[:2] for line in logged if line[3] == "/metrics"] == [["404", "-"]] * 2
    assert any(line[0] == "429" for line in logged)  # the test means something
    bearer = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    for port in topology.server_ports:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as direct:
            scraped = await direct.get("/metrics", headers=bearer)
        assert scraped.status_code == 200, scraped.text
        families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
        limited = sum(
            sample.value
            for sample in families["hangar_http_refusals"].samples
            if sample.name.endswith("_total") and sample.labels["code"] == "RATE_LIMITED"
        )
        # At least this test's refusals by this instance (and any of the tests before it
        # in the module, whichever order they ran in).
        mine = sum(
            1
            for status, upstream, *_ in logged
            if status == "429" and upstream.endswith(f":{port}")
        )
        assert limited >= mine


async def test_a_burst_of_product_actions_is_delivered_once_per_delivery(
    topology: Topology,
) -> None:
    receiver = topology.receiver
    before = set(await deliveries(topology))
    by_worker_before = Counter(receiver.by_worker)
    squawks = await squawk_count(topology)

    calls = await report_squawks(topology, BURST, None)

    assert [c.status for c in calls] == [201] * BURST
    assert await squawk_count(topology) == squawks + BURST
    await eventually(lambda: all_delivered(topology), DELIVERED_S, "every delivery")
    made = set(await deliveries(topology)) - before
    assert len(made) == BURST  # one squawk.created each
    assert {receiver.arrived[d] for d in made} == {1}
    assert {receiver.answered[d] for d in made} == {1}
    # Both workers delivered (they share the queue; neither took it all).
    by_worker = receiver.by_worker - by_worker_before
    assert set(by_worker) == set(receiver.workers), by_worker
    print(f"\n{BURST} deliveries, by worker: {sorted(by_worker.values())}")


async def test_a_server_and_a_worker_killed_mid_burst_lose_no_event(
    doomed_topology: Topology,
) -> None:
    topology = doomed_topology
    receiver = topology.receiver
    doomed_server, doomed_worker = topology.servers[0], topology.workers[0]
    before = set(await deliveries(topology))
    squawks = await squawk_count(topology)
    killed: list[float] = []  # when the server was gone

    async def kill_server_a_third_of_the_way(calls: list[Call]) -> None:
        if len(calls) == KILL_BURST // 3:
            doomed_server.proc.kill()
            await doomed_server.proc.wait()
            killed.append(time.monotonic())

    # Deliveries are held unanswered at the receiver until the worker is dead: none of the
    # doomed worker's can have been answered and left unrecorded (that one would rightly be
    # delivered twice: at least once).
    receiver.gate.clear()
    try:
        calls = await report_squawks(topology, KILL_BURST, kill_server_a_third_of_the_way)
        await eventually(
            lambda: receiver.held_by(doomed_worker.pid),
            DELIVERED_S,
            "the doomed worker holding deliveries in flight",
        )
        cut = set(receiver.held_by(doomed_worker.pid))
        doomed_worker.kill()
        await doomed_worker.wait()
        await eventually(
            lambda: not receiver.held_by(doomed_worker.pid),
            DELIVERED_S,
            "the dead worker's requests cut off at the receiver",
        )
    finally:
        receiver.gate.set()

    # The server: only requests in flight when it died may have failed (at most one per
    # client connection), as nginx's 502, or cut off (status 0) when nginx had already passed
    # on the start of the dead process's answer and can only close the connection. Once nginx
    # has seen its connections to the dead process close (at once, on loopback: a second is
    # ample), every request succeeds.
    [gone] = killed
    failed = [c for c in calls if c.status != 201]
    assert {c.status for c in failed} <= {0, 502}, failed
    assert all(c.started <= gone for c in failed), failed
    assert len(failed) <= CONCURRENCY
    later = [c.status for c in calls if c.started > gone + 1.0]
    assert later == [201] * len(later)
    made_squawks = await squawk_count(topology) - squawks
    assert KILL_BURST - len(failed) <= made_squawks <= KILL_BURST  # a 502 may have committed

    # The events: each squawk's delivery answered once, the dead worker's by the survivor
    # once its leases ran out.
    took = await eventually(
        lambda: all_delivered(topology), LEASE_S + DELIVERED_S, "every delivery, after the leases"
    )
    made = set(await deliveries(topology)) - before
    assert len(made) == made_squawks
    assert {receiver.answered[d] for d in made} == {1}
    # Those the dead worker had in flight arrived twice: cut off, then from the survivor.
    assert cut
    assert {receiver.arrived[d] for d in cut} == {2}
    print(  # the figures, for whoever runs it with -s
        f"\n{len(failed)} of {KILL_BURST} requests failed with the server; "
        f"{len(cut)} deliveries cut with the worker, all delivered {took:.1f} s after"
    )
