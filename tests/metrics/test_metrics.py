"""GET /metrics: after each path is exercised once, a scrape read with prometheus-client's own
parser has moved by exactly what was done; and the scrape is served only with the token."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import httpx
import pytest
import trustme
from redis.asyncio import Redis
from scripts.scratch import free_port
from sqlalchemy import update

from hangar.app import create_app
from hangar.db.engine import make_engine
from hangar.jobs.scheduler import Done, JobRun, run_tick
from hangar.kit.container import Services
from hangar.kit.ratelimit import RedisRateLimiter
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.states import MAX_IN_FLIGHT
from hangar.webhooks.events import catalogue
from hangar.webhooks.models import Delivery, Subscription
from tests.fixtures.external import API
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.metrics import TOKEN, Samples, labels, moved, scrape
from tests.fixtures.receivers import HOST, Receiver, https_endpoint, loopback_only
from tests.fixtures.webhooks import dispatcher, fire, subscribe

AIRCRAFT = f"{API}/aircraft"


def client_of(services: Services) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(services), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="https://hangar.example")


@pytest.fixture
def scraped(services: Services) -> Services:
    """The test's services with HANGAR_METRICS_TOKEN set."""
    return replace(services, settings=replace(services.settings, metrics_token=TOKEN))


@pytest.fixture
async def client(scraped: Services) -> AsyncIterator[httpx.AsyncClient]:
    async with client_of(scraped) as c:
        yield c


def requests(status: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The key of the aircraft list's count of GETs answered `status`."""
    return "hangar_http_requests_total", labels(
        operation=AIRCRAFT, method="GET", status=str(status)
    )


def without_timings(diff: Samples) -> Samples:
    """The moves whose size depends on how long things took are checked apart."""
    return {
        key: value
        for key, value in diff.items()
        if not key[0].endswith("_bucket")
        and key[0]
        not in ("hangar_http_request_duration_seconds_sum", "hangar_webhook_attempts_in_progress")
    }


async def test_requests_are_counted_by_route_template_method_and_status(
    client: httpx.AsyncClient, scraped: Services, org: Org, other: Org
) -> None:
    narrow = await org.key_with("read:squawks")
    spent = await org.key_with("read:aircraft")
    before = await scrape(client)

    assert (await client.get(AIRCRAFT, headers=org.auth)).status_code == 200
    assert (await client.get(AIRCRAFT, headers=other.auth)).status_code == 200
    bad = await client.get(f"{API}/squawks", params={"status": "closed"}, headers=org.auth)
    assert bad.status_code == 422
    assert (await client.get(AIRCRAFT)).status_code == 401
    denied = await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {narrow}"})
    assert denied.status_code == 403
    for _ in range(60):
        await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {spent}"})
    limited = await client.get(AIRCRAFT, headers={"Authorization": f"Bearer {spent}"})
    assert limited.status_code == 429
    assert (await client.get(f"{API}/no-such-operation/{uuid.uuid4()}")).status_code == 404
    after = await scrape(client)

    diff = without_timings(moved(before, after))
    op = labels(operation=AIRCRAFT, method="GET")
    assert diff == {
        requests(200): 62,
        (
            "hangar_http_requests_total",
            labels(operation=f"{API}/squawks", method="GET", status="422"),
        ): 1,
        requests(401): 1,
        requests(403): 1,
        requests(429): 1,
        (
            "hangar_http_requests_total",
            labels(operation="unmatched", method="GET", status="404"),
        ): 1,
        ("hangar_http_request_duration_seconds_count", op): 65,
        (
            "hangar_http_request_duration_seconds_count",
            labels(operation=f"{API}/squawks", method="GET"),
        ): 1,
        (
            "hangar_http_request_duration_seconds_count",
            labels(operation="unmatched", method="GET"),
        ): 1,
        ("hangar_http_refusals_total", labels(status="401", code="UNAUTHORIZED")): 1,
        ("hangar_http_refusals_total", labels(status="403", code="INSUFFICIENT_SCOPE")): 1,
        ("hangar_http_refusals_total", labels(status="429", code="RATE_LIMITED")): 1,
    }
    # Every request fell in the +Inf bucket; the scrapes themselves are not counted.
    inf = (
        "hangar_http_request_duration_seconds_bucket",
        labels(operation=AIRCRAFT, method="GET", le="+Inf"),
    )
    assert after[inf] - before.get(inf, 0) == 65
    assert not [k for k in after if ("operation", "/metrics") in k[1]]


async def test_datastore_errors_are_counted(
    client: httpx.AsyncClient, scraped: Services, org: Org, other: Org
) -> None:
    before = await scrape(client)
    # A database that refuses connections: the API answers 503, one database error.
    gone = make_engine(f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    try:
        async with client_of(replace(scraped, engine=gone)) as cut:
            assert (await cut.get(AIRCRAFT, headers=org.auth)).status_code == 503
    finally:
        await gone.dispose()
    # A Redis that refuses connections: the limits count in-process, one Redis error.
    dead = Redis(host="127.0.0.1", port=free_port())
    limiter = RedisRateLimiter(dead, "metrics-test")
    try:
        async with client_of(replace(scraped, limiter=limiter)) as cut:
            assert (await cut.get(AIRCRAFT, headers=org.auth)).status_code == 200
            assert (await cut.get(AIRCRAFT, headers=org.auth)).status_code == 200  # not retried
    finally:
        await dead.aclose()
    after = await scrape(client)

    diff = without_timings(moved(before, after))
    assert diff[("hangar_database_errors_total", labels(component="api"))] == 1
    assert diff[("hangar_redis_errors_total", ())] == 1
    assert diff[requests(503)] == 1
    assert diff[requests(200)] == 2


async def test_deliveries_are_counted_by_event_and_outcome(
    client: httpx.AsyncClient,
    scraped: Services,
    org: Org,
    other: Org,
    receiver: Receiver,
    ca: trustme.CA,
    resolver: FakeResolver,
    clock: FakeClock,
    closing: Callable[[Sender], Sender],
) -> None:
    services = scraped
    resolver.answers[HOST] = ["127.0.0.1"]
    resolver.answers["inside.example.com"] = ["10.0.0.7"]
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    sender = closing(Sender(resolver, ssl_context=trusting, is_allowed=loopback_only, timeout=0.5))
    receiver.slow_paths["/slow"] = 2.0

    async def sub(event: str, url: str, **values: object) -> uuid.UUID:
        return await subscribe(services, org, url, [event], **values)

    before = await scrape(client)
    async with (
        https_endpoint(ca, Receiver(port=0, statuses=[500])) as failing,
        https_endpoint(trustme.CA(), Receiver(port=0)) as untrusted,
    ):
        await subscribe(services, other, receiver.url("/other"))
        await sub(catalogue.SQUAWK_CREATED, receiver.url("/ok"))
        await sub(catalogue.SQUAWK_RESOLVED, receiver.url("/slow"))
        await sub(catalogue.RESERVATION_CREATED, failing.url())
        await sub(catalogue.RESERVATION_CONFIRMED, f"https://{HOST}:{free_port()}/closed")
        await sub(catalogue.RESERVATION_CANCELLED, "https://inside.example.com/hook")
        await sub(catalogue.AIRCRAFT_GROUNDED, untrusted.url())
        await sub(catalogue.AIRCRAFT_REACTIVATED, receiver.url("/x"), secret_encrypted="nope")
        switched_off = await sub(catalogue.MEL_CREATED, receiver.url("/off"))
        # One failure away from being disabled, on its delivery's last attempt.
        doomed = await sub(catalogue.MEL_EXPIRED, failing.url(), consecutive_failures=4)
        for event in catalogue.EVENT_NAMES:  # four of them have no subscriber
            await fire(services, org, event)
        async with services.engine.begin() as conn:
            await conn.execute(
                update(Delivery).where(Delivery.subscription_id == doomed).values(attempts_made=2)
            )
            # Disabled after its event was queued: that delivery is skipped.
            await conn.execute(
                update(Subscription).where(Subscription.id == switched_off).values(enabled=False)
            )
        clock.advance(seconds=3)
        assert await dispatcher(services, sender).run_once() == 9
    at_once = await scrape(client)
    clock.advance(seconds=7)  # the five retries came due 2 s after their attempts
    later = await scrape(client)

    assert [r.path for r in receiver.requests].count("/other") == 0
    diff = without_timings(moved(before, at_once))
    attempts = "hangar_webhook_attempts_total"
    finished = "hangar_webhook_deliveries_finished_total"
    assert diff == {
        (attempts, labels(event="squawk.created", outcome="succeeded")): 1,
        (attempts, labels(event="squawk.resolved", outcome="timeout")): 1,
        (attempts, labels(event="reservation.created", outcome="http_error")): 1,
        (attempts, labels(event="reservation.confirmed", outcome="connection_error")): 1,
        (attempts, labels(event="reservation.cancelled", outcome="url_refused")): 1,
        (attempts, labels(event="aircraft.grounded", outcome="tls_error")): 1,
        (attempts, labels(event="mel.expired", outcome="http_error")): 1,
        (finished, labels(event="squawk.created", status="succeeded")): 1,
        (finished, labels(event="mel.created", status="skipped")): 1,
        (finished, labels(event="mel.expired", status="failed")): 1,
        # The secret no key opens: no attempt, not the endpoint's failure (issue 40).
        ("hangar_webhook_deliveries_held_total", labels(reason="secret_unreadable")): 1,
        # Six first attempts, each 3 s after its event (the clock is the test's).
        ("hangar_webhook_first_attempt_delay_seconds_count", ()): 6,
        ("hangar_webhook_first_attempt_delay_seconds_sum", ()): pytest.approx(18.0),
        ("hangar_webhook_subscriptions_auto_disabled_total", ()): 1,
        # Read from the database at the scrape: five retries and the held delivery wait,
        # none due yet; the disabled one and the auto-disabled one are now disabled.
        ("hangar_webhook_deliveries_pending", ()): 6,
        ("hangar_webhook_subscriptions_disabled", ()): 2,
    }
    assert before[("hangar_webhook_oldest_due_delivery_age_seconds", ())] == 0
    assert at_once[("hangar_webhook_oldest_due_delivery_age_seconds", ())] == 0
    assert later[("hangar_webhook_oldest_due_delivery_age_seconds", ())] == 5.0
    assert later[("hangar_webhook_attempts_in_progress", ())] == 0


async def test_the_queue_gauges_tell_a_slow_endpoint_from_too_few_workers(
    client: httpx.AsyncClient,
    services: Services,
    org: Org,
    other: Org,
    receiver: Receiver,
    sender: Sender,
    clock: FakeClock,
) -> None:
    await subscribe(services, org, receiver.url("/slow"), [catalogue.SQUAWK_CREATED])
    await subscribe(services, other, receiver.url("/quick"), [catalogue.SQUAWK_CREATED])
    for _ in range(MAX_IN_FLIGHT + 2):
        await fire(services, org)
    # The slow endpoint's cap is in flight (a worker holds those attempts); two more wait.
    assert len(await dispatcher(services, sender).claim()) == MAX_IN_FLIGHT
    clock.advance(seconds=5)
    await fire(services, other)  # claimable, and not claimed: no worker took it yet
    clock.advance(seconds=10)

    now = await scrape(client)

    assert now[("hangar_webhook_deliveries_pending", ())] == MAX_IN_FLIGHT + 3
    assert now[("hangar_webhook_deliveries_in_flight", ())] == MAX_IN_FLIGHT
    # Waiting for their own endpoint, not for a worker.
    assert now[("hangar_webhook_deliveries_held_by_cap", ())] == 2
    # The age of what a worker could take: the quick one's 10 s, not the slow backlog's 15.
    assert now[("hangar_webhook_oldest_due_delivery_age_seconds", ())] == 10.0


async def test_scheduler_ticks_and_job_results_are_counted(
    client: httpx.AsyncClient, services: Services, clock: FakeClock
) -> None:
    name = f"metrics-{uuid.uuid4().hex[:8]}"
    broken = f"{name}-broken"

    async def job(_: JobRun) -> Done:
        return {"done": 3}

    async def fails(_: JobRun) -> Done:
        raise RuntimeError("planted")

    before = await scrape(client)
    jobs = {name: job, broken: fails}
    assert await run_tick(services, clock.now(), jobs) == [name, broken]
    assert await run_tick(services, clock.now(), jobs) == []  # this minute is taken
    after = await scrape(client)

    assert without_timings(moved(before, after)) == {
        ("hangar_scheduler_ticks_total", ()): 2,
        ("hangar_scheduler_job_runs_total", labels(job=name, result="ok")): 1,
        ("hangar_scheduler_job_runs_total", labels(job=broken, result="failed")): 1,
        ("hangar_scheduler_job_runs_total", labels(job=name, result="skipped")): 1,
        ("hangar_scheduler_job_runs_total", labels(job=broken, result="skipped")): 1,
    }


async def test_metrics_are_not_served_without_a_token(services: Services) -> None:
    async with client_of(services) as c:
        response = await c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found", "code": "NOT_FOUND"}


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN],
)
async def test_metrics_need_the_token(client: httpx.AsyncClient, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    body = response.json()
    assert body["code"] == "UNAUTHORIZED"
    assert list(body) == ["detail", "code"]


async def test_metrics_with_the_token_are_prometheus_text_and_not_in_openapi(
    client: httpx.AsyncClient, org: Org
) -> None:
    response = await client.get("/metrics", headers={"Authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200
    assert "# TYPE hangar_http_requests_total counter" in response.text
    spec = (await client.get(f"{API}/openapi.json")).json()
    assert not [path for path in spec["paths"] if "metrics" in path]
