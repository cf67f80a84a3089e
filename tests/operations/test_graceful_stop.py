"""`hangar serve` stopped with SIGTERM, as systemd stops it: the request in flight is
answered, the delivery in flight is finished, nothing new is claimed, and the process is
gone within the 10 s attempt timeout plus a margin. In one process (SQLite or PostgreSQL),
and with --workers 2 (PostgreSQL and Redis), where the worker is a process of its own.

The server is a real process (tests/fixtures/serve_process.py: hangar.cli.serve.run_server,
its worker delivering to this test's loopback receiver). The request in flight is a product
action whose headers are sent with `Expect: 100-continue`: the server's "100 Continue" says
the app is reading its body, and the body is sent only once the server has logged that it is
shutting down.

While it stops, clients see no failure: new connections are refused at once (a proxy tries
another instance), a kept-alive connection is answered and closed, readiness says it is
shutting down, and a request still running when the grace period ends is answered the API's
JSON 503.
"""

from __future__ import annotations

import asyncio
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import trustme
from sqlalchemy import select

from hangar.auth import sessions
from hangar.fleet.models import Aircraft
from hangar.http.server import SHUTDOWN_GRACE_S
from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Delivery
from tests.fixtures.clients import session_for
from tests.fixtures.environment import PG_URL, REDIS_URL
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.receivers import Receiver
from tests.fixtures.serve_process import serve_process
from tests.fixtures.subprocesses import eventually, group_is_empty
from tests.fixtures.webhooks import deliveries, dispatcher, fire, subscribe

RECEIVER_S = 3.0  # the receiver's answer to the delivery in flight takes this long
ATTEMPT_TIMEOUT_S = 10.0  # hangar.webhooks.delivery.sender.TIMEOUT_SECONDS, the spec's
MARGIN_S = 5.0  # recording, closing pools, a loaded machine
SEVERAL = pytest.mark.skipif(
    not (PG_URL and REDIS_URL), reason="--workers 2 needs PostgreSQL and Redis"
)


def squawk_head(port: int, org: Org, token: str, csrf: str, length: int) -> bytes:
    lines = [
        f"POST /api/orgs/{org.id}/squawks HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        f"Content-Length: {length}",
        "Expect: 100-continue",
        f"Cookie: {sessions.COOKIE}={token}",
        f"X-CSRF-Token: {csrf}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=SEVERAL)])
async def test_sigterm_finishes_the_request_and_the_delivery_in_flight_then_exits(
    workers: int,
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    clock: FakeClock,
    ca: trustme.CA,
    database_url: str,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    clock.set(datetime.now(UTC))  # the server's clock is the system's
    receiver.delay = RECEIVER_S
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)  # due before the server starts: its worker's first claim
    plane = await org.add(Aircraft)
    token, csrf = await session_for(services, org.admin_id)
    body = orjson.dumps(
        {"aircraft_id": str(plane["id"]), "description": "Mag drop", "severity": "minor"}
    )

    async with serve_process(database_url, workers, ca, tmp_path, repo_root) as served:
        server = served.server
        await eventually(lambda: len(receiver.requests) == 1, 60, "the delivery in flight")
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(squawk_head(served.port, org, token, csrf, len(body)))
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim

        stopped_at = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        await eventually(
            lambda: server.output().count("Shutting down") == workers,
            ATTEMPT_TIMEOUT_S,
            "every server process shutting down",
        )
        if workers > 1:  # the worker process logs it (in one process the order makes it sure)
            await eventually(
                lambda: "hangar.worker stopping" in server.output(),
                ATTEMPT_TIMEOUT_S,
                "the worker process stopping",
            )
        writer.write(body)
        answer = await asyncio.wait_for(reader.read(), 30)  # the server closes after it
        writer.close()
        status = int(answer.split(b" ", 2)[1])
        assert status == 201, answer

        await eventually(
            lambda: not server.alive(), ATTEMPT_TIMEOUT_S + MARGIN_S, "the server exiting"
        )
        took = time.monotonic() - stopped_at
        # uvicorn, once it has shut down gracefully, re-raises the signal it caught (a clean
        # exit for systemd); the supervisor of several processes exits 0.
        assert server.proc.returncode in (0, -signal.SIGTERM), server.output()
        # multiprocessing's resource tracker leaves once it sees the parent gone
        await eventually(lambda: group_is_empty(server.pid), MARGIN_S, "the server's processes")
    print(f"\n{workers} process(es): exited {took:.2f} s after SIGTERM")

    # The delivery in flight was finished: answered once, recorded, its lease given up. The
    # squawk's, recorded while the server was stopping, was left alone: no lease, due now.
    assert len(receiver.requests) == 1
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1), ("pending", 0)]
    async with services.engine.connect() as conn:
        leases = (
            await conn.scalars(
                select(Delivery.lease_until).where(Delivery.subscription_id == sub_id)
            )
        ).all()
    assert leases == [None, None]
    clock.set(datetime.now(UTC))
    claimed = await dispatcher(services, sender).claim()
    assert [d.event_name for d in claimed] == ["squawk.created"]


# --- what clients see while a server stops ---------------------------------------------------


async def answer_on(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 answer read off a connection: status, headers (lower-cased), body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    status_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 30)
    return int(status_line.split(" ", 2)[1]), headers, body


def get(path: str, port: int) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()


async def refuses(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except (ConnectionRefusedError, ConnectionResetError):
        # Reset: the connect reached the backlog as the listener closed, which is a refusal
        # too (the kernel resets what the closed listener never accepted).
        return True
    writer.close()  # accepted: still listening
    return False


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=SEVERAL)])
async def test_sigterm_refuses_new_connections_at_once_and_a_kept_one_is_told_not_ready(
    workers: int,
    services: Services,
    org: Org,
    ca: trustme.CA,
    clock: FakeClock,
    database_url: str,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    # Every process of the server stops listening at once: a proxy's next connection is
    # refused and goes to another instance. A keep-alive connection idle at SIGTERM stays
    # open (a proxy may be writing a request on it), and the request on it is answered,
    # with Connection: close, by a readiness probe that says the instance is going away.
    clock.set(datetime.now(UTC))
    plane = await org.add(Aircraft)
    token, csrf = await session_for(services, org.admin_id)
    body = orjson.dumps(
        {"aircraft_id": str(plane["id"]), "description": "Mag drop", "severity": "minor"}
    )
    async with serve_process(database_url, workers, ca, tmp_path, repo_root) as served:
        port = served.port
        kept_reader, kept = await asyncio.open_connection("127.0.0.1", port)
        kept.write(get("/api/health/ready", port))
        assert (await answer_on(kept_reader))[0] == 200
        # A request in flight holds the server open meanwhile.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(squawk_head(port, org, token, csrf, len(body)))
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim

        served.server.proc.send_signal(signal.SIGTERM)
        took = await eventually(lambda: refuses(port), 2.0, "new connections refused")

        kept.write(get("/api/health/ready", port))
        status, headers, answer = await answer_on(kept_reader)
        assert status == 503
        assert headers["connection"] == "close"
        assert orjson.loads(answer) == {
            "detail": "Not ready: this instance is shutting down; it finishes the requests "
            "it holds and takes no new connection",
            "code": "SERVICE_UNAVAILABLE",
            "status": "shutting down",
        }
        assert await kept_reader.read() == b""  # closed after that answer
        kept.close()

        writer.write(body)
        status, headers, _ = await answer_on(reader)
        assert status == 201
        writer.close()
        await eventually(lambda: not served.server.alive(), ATTEMPT_TIMEOUT_S, "the exit")
    print(f"\n{workers} process(es): refusing connections {took:.2f} s after SIGTERM")


async def test_a_request_cut_off_at_the_end_of_the_grace_gets_the_apis_json_503(
    services: Services,
    org: Org,
    ca: trustme.CA,
    clock: FakeClock,
    database_url: str,
    tmp_path: Path,
    repo_root: Path,
) -> None:
    # A body that never comes holds the request past the grace (its own timeout is 30 s).
    clock.set(datetime.now(UTC))
    token, csrf = await session_for(services, org.admin_id)
    async with serve_process(database_url, 1, ca, tmp_path, repo_root) as served:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        writer.write(squawk_head(served.port, org, token, csrf, 100))
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert interim.startswith(b"HTTP/1.1 100 Continue"), interim

        stopped_at = time.monotonic()
        served.server.proc.send_signal(signal.SIGTERM)
        status, headers, answer = await answer_on(reader)
        took = time.monotonic() - stopped_at
        writer.close()
        await eventually(lambda: not served.server.alive(), MARGIN_S, "the exit")
        output = served.server.output()

    assert SHUTDOWN_GRACE_S <= took < SHUTDOWN_GRACE_S + MARGIN_S
    assert status == 503
    assert headers["content-type"] == "application/json"
    assert headers["retry-after"] == "1"
    assert headers["connection"] == "close"
    assert orjson.loads(answer)["code"] == "SERVICE_UNAVAILABLE"
    assert "cut off: the server is stopping" in output
    assert "Exception in ASGI application" not in output
