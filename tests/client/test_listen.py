"""`hangar-client listen` run in-process against a live hangar (the test's app and clock),
forwarding to a loopback receiver: each event once, in order, as hangar delivers it; a
failing receiver gets hangar's three attempts and no more; a 429 is waited out; a stop
abandons what is under way and `--resume` continues without repeats. Sleeping moves the
test's clock, and each wait of the poll interval runs the test's next step (the run stops
when there is none left), so nothing here waits for real."""

from __future__ import annotations

import asyncio
import io
import itertools
import re
import unicodedata
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import orjson
from scripts.scratch import free_port
from sqlalchemy import select

from hangar.fleet.models import Aircraft
from hangar.keys.models import ApiKey
from hangar.kit.container import Services
from hangar.kit.ratelimit import API_LIMITS
from hangar.webhooks.delivery import signing
from hangar.webhooks.subscriptions.signing_secrets import whsec_form
from hangar_client import verify_signature
from hangar_client._listen_state import StateFile
from hangar_client.events import EventName
from hangar_client.listen import Listener, ListenOptions
from tests.fixtures.actions import raw_events, url
from tests.fixtures.all_events import fire_everything
from tests.fixtures.client_transports import Outage, Script, html_502, json_answer
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.python_client import Counting, Harness, asgi
from tests.fixtures.receivers import Received, Receiver
from tests.fixtures.subprocesses import eventually

INTERVAL = 5.0
SECRET = "ab" * 32
WHSEC = whsec_form(SECRET)  # hangar's own
Step = Callable[[], Awaitable[object]]


@dataclass
class Run:
    """What one run of listen printed and how long it slept."""

    code: int
    out: list[str]
    err: str
    slept: list[float]


@dataclass
class Listen:
    """Runs of listen for one test: the same key, receiver and state directory."""

    harness: Harness
    org: Org
    receiver: Receiver
    state_dir: Path
    interval_waits: int = 0
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def forward_to(self) -> str:
        return f"http://127.0.0.1:{self.receiver.port}/hook"

    def state(self, events: tuple[EventName, ...] = ()) -> StateFile:
        return StateFile.of(self.state_dir, "https://hangar.example", self.org.key, events)

    async def run(
        self,
        steps: list[Step],
        *,
        resume: bool = False,
        events: tuple[EventName, ...] = (),
        limit: int = 100,
        forward_to: str | None = None,
        on_sleep: Callable[[float], None] = lambda seconds: None,
    ) -> Run:
        self.stop = asyncio.Event()
        out, err, slept = io.StringIO(), io.StringIO(), []

        async def sleep(seconds: float) -> None:
            slept.append(seconds)
            self.harness.clock.advance(seconds=seconds)
            on_sleep(seconds)
            if seconds == INTERVAL:
                if steps:
                    await steps.pop(0)()
                else:
                    self.stop.set()

        options = ListenOptions(
            forward_to=forward_to or self.forward_to,
            secret=SECRET,
            events=events,
            resume=resume,
            interval=INTERVAL,
            limit=limit,
        )
        # The client as built for any use: the listener sets the retries it needs.
        async with self.harness.client(self.org.key) as api, httpx.AsyncClient() as fwd:
            listener = Listener(
                api,
                fwd,
                options,
                self.state(events),
                self.stop,
                out=out,
                err=err,
                now=self.harness.clock.now,
                sleep=sleep,
                random=lambda: 0.5,
            )
            code = await listener.run()
        return Run(code, out.getvalue().splitlines(), err.getvalue(), slept)


def forwarded_ids(receiver: Receiver) -> list[str]:
    return [header(r, "X-Service-Event-Id") for r in receiver.requests]


def hangars_headers(request: Received) -> dict[str, str]:
    """The headers a hangar delivery sets (httpx adds its own: length, encoding...)."""
    return {
        key.lower(): value
        for key, value in request.headers.items()
        if key.lower().startswith(("x-service-", "webhook-"))
        or key.lower() in ("content-type", "user-agent")
    }


def header(request: Received, name: str) -> str:
    found = {key.lower(): value for key, value in request.headers.items()}
    return found[name.lower()]


def event_lines(run: Run) -> list[str]:
    return [line for line in run.out if re.match(r"\d\d:\d\d:\d\dZ  [a-z_]+\.[a-z_]+  ", line)]


async def report_squawks(admin: httpx.AsyncClient, org: Org, count: int) -> None:
    plane = str((await org.add(Aircraft))["id"])
    for n in range(count):
        squawk = {"aircraft_id": plane, "description": f"squawk {n}", "severity": "minor"}
        response = await admin.post(url(org, "squawks"), json=squawk)
        assert response.status_code == 201, response.text


async def test_each_event_is_forwarded_once_in_order_as_hangar_delivers_it(
    harness: Harness,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
    tmp_path: Path,
) -> None:
    await report_squawks(admin, org, 1)  # before the start: not forwarded
    clock.advance(seconds=1)
    started = clock.now()
    attempts: list[datetime] = []
    listen = Listen(harness, org, loopback, tmp_path)

    async def fire() -> None:
        await report_squawks(outsider, other, 2)
        await fire_everything(admin, org, clock)

    run = await listen.run([fire], limit=4)
    assert run.code == 0, run.err
    assert run.out[:4] == [
        f"Forwarding all events to {listen.forward_to}",
        f"Signing secret: {SECRET}",
        f"  the same for Standard Webhooks libraries: {WHSEC}",
        f"Starting from now (events created from {started.isoformat()} on); Ctrl-C to stop.",
    ]
    assert run.out[-1].startswith("Stopped. Position saved in ")

    stored = (await raw_events(org.engine, org.id))[1:]  # the squawk before the start aside
    async with harness.client(org.key) as api:
        logged = [e async for e in api.events.iter(created_after=started)]
    assert len(loopback.requests) == len(logged) == len(stored) >= 13
    assert forwarded_ids(loopback) == [e.id for e in logged]  # each once, in the log's order
    assert [(e.event, orjson.dumps(e.raw_data).decode()) for e in logged] == stored
    # Pages of 4 follow each other at once; only a short page waits for the interval.
    assert run.slept == [INTERVAL, INTERVAL]

    delivery_ids = set()
    for request, event, (name, data) in zip(loopback.requests, logged, stored, strict=True):
        assert request.path == "/hook"
        body = request.body
        assert verify_signature(SECRET, body, header(request, "X-Service-Signature"))
        envelope = orjson.loads(body)
        assert list(envelope) == ["event", "delivered_at", "data"]
        stamp = envelope["delivered_at"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", stamp)
        attempts.append(datetime.fromisoformat(stamp))
        # Compact, the data byte for byte as hangar stores and delivers it.
        assert body == signing.envelope(name, attempts[-1], data)
        delivery = header(request, "X-Service-Delivery")
        assert delivery not in delivery_ids
        delivery_ids.add(str(uuid.UUID(delivery)))
        # Every header as hangar's own sender makes it for this body, id and instant.
        sent_by_hangar = signing.headers(
            name, delivery, SECRET, body, event_id=event.id, sent_at=attempts[-1]
        )
        assert hangars_headers(request) == {k.lower(): v for k, v in sent_by_hangar.items()}
        assert set(sent_by_hangar) >= {"X-Service-Event-Id", "webhook-signature"}
    assert all(at >= started for at in attempts)
    lines = event_lines(run)
    assert len(lines) == len(logged)
    for line, event in zip(lines, logged, strict=True):
        assert line.endswith(f"  {event.event}  {event.id}  -> 200")


async def test_a_failing_receiver_gets_three_attempts_then_listen_moves_on(
    harness: Harness,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
    tmp_path: Path,
) -> None:
    loopback.statuses = [500, 503, 302, 204]
    listen = Listen(harness, org, loopback, tmp_path)
    run = await listen.run([lambda: report_squawks(admin, org, 2)])
    assert run.code == 0, run.err
    first, second = event_lines(run)
    assert first.endswith("-> 500; 503; 302; failed 3 times, moving on")
    assert second.endswith("-> 204")
    assert len(loopback.requests) == 4  # a redirect is a failure, not followed
    retried = loopback.requests[:3]
    assert run.slept == [INTERVAL, 2.0, 8.0, INTERVAL]  # hangar's waits, then the next poll
    # One delivery, three attempts: the same delivery id, each attempt signed afresh.
    assert len({header(r, "X-Service-Delivery") for r in retried}) == 1
    stamps = [int(header(r, "webhook-timestamp")) for r in retried]
    assert [b - a for a, b in itertools.pairwise(stamps)] == [2, 8]
    assert all(verify_signature(SECRET, r.body, header(r, "X-Service-Signature")) for r in retried)
    assert len({r.body for r in retried}) == 3  # delivered_at is each attempt's

    harness.transport.sent.clear()
    gone = Listen(harness, org, loopback, tmp_path / "gone")
    unreachable = f"http://127.0.0.1:{free_port()}/hook"
    run = await gone.run([lambda: report_squawks(admin, org, 1)], forward_to=unreachable)
    assert run.code == 0, run.err
    (line,) = event_lines(run)
    assert "ConnectError" in line
    assert line.endswith("failed 3 times, moving on")


async def use_up_the_hour(services: Services, org: Org) -> None:
    """The key's hour budget spent (counting a thousand real requests would be slow)."""
    (hour,) = [limit for limit in API_LIMITS if limit.seconds == 3600]
    async with org.engine.connect() as conn:
        key_id = await conn.scalar(select(ApiKey.id).where(ApiKey.org_id == org.id))
    for _ in range(hour.count):
        await services.limiter.hit(f"key:{key_id}", (hour,), services.clock.now())


async def test_a_429_is_waited_out_to_the_next_minute_or_hour(
    harness: Harness,
    services: Services,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    clock: FakeClock,
    tmp_path: Path,
) -> None:
    async with harness.client(org.key) as api:
        for _ in range(60):
            await api.aircraft()  # the key's minute spent, at 10:00:30
    listen = Listen(harness, org, loopback, tmp_path)
    run = await listen.run([lambda: report_squawks(admin, org, 1)])
    assert run.code == 0, run.err
    assert (
        "10:00:30Z  rate limited (60 requests a minute per key): waiting 30 s for the next minute"
        in run.out
    )
    assert run.slept[0] == 30.5  # to the top of the minute, and half the 1 s jitter
    assert len(event_lines(run)) == 1

    await use_up_the_hour(services, org)
    loopback.requests.clear()
    refused_at = clock.now()
    to_the_hour = 3600 - refused_at.minute * 60 - refused_at.second - 1e-6 * refused_at.microsecond
    run = await listen.run([lambda: report_squawks(admin, org, 1)], resume=True)
    assert run.code == 0, run.err
    assert (
        f"{refused_at:%H:%M:%S}Z  rate limited (1000 requests an hour per key): "
        f"waiting {to_the_hour + 0.5:.0f} s for the next hour"
    ) in run.out
    assert run.slept[0] == to_the_hour + 0.5
    assert len(loopback.requests) == 1


async def test_an_outage_is_said_and_waited_out_by_the_clients_own_retries(
    harness: Harness,
    services: Services,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    tmp_path: Path,
) -> None:
    down = Script([html_502(), httpx.ConnectError("refused"), httpx.ReadTimeout("timed out")])
    harness.transport = Counting(Outage(down.transport(), asgi(services), failures=3))
    listen = Listen(harness, org, loopback, tmp_path)
    run = await listen.run([lambda: report_squawks(admin, org, 1)])
    assert run.code == 0, run.err
    said = [line.split("  ", 1)[1] for line in run.out if "unreachable" in line]
    assert said == [
        "hangar unreachable (502 HTTP_502); trying again in 0.4 s",
        "hangar unreachable (ConnectError: refused); trying again in 0.8 s",
        "hangar unreachable (ReadTimeout: timed out); trying again in 1.5 s",
    ]
    assert run.slept[:4] == [0.375, 0.75, 1.5, INTERVAL]  # backoff, then caught up
    assert len(event_lines(run)) == 1


async def test_what_a_server_says_is_printed_with_its_control_characters_escaped(
    harness: Harness,
    services: Services,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    tmp_path: Path,
) -> None:
    # A server in the middle (or a hostile one) answers with terminal escapes and a
    # bidirectional override: clear the screen, hide a line, reorder what follows.
    hostile = json_answer(503, {"detail": "x", "code": "\x1b[2J\x1b[1A\u202eEVIL\x07"})
    down = Script([hostile, httpx.ConnectError("\x1b]0;owned\x07")])
    harness.transport = Counting(Outage(down.transport(), asgi(services), failures=2))
    run = await Listen(harness, org, loopback, tmp_path).run(
        [lambda: report_squawks(admin, org, 1)]
    )
    assert run.code == 0, run.err
    printed = "".join(run.out)
    assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in printed)
    said = [line.split("  ", 1)[1] for line in run.out if "unreachable" in line]
    assert said[0].startswith("hangar unreachable (503 \\x1b[2J\\x1b[1A\\u202eEVIL\\x07)")
    assert said[1].startswith("hangar unreachable (ConnectError: \\x1b]0;owned\\x07)")


async def test_resume_continues_where_the_last_run_stopped_without_repeats(
    harness: Harness,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
    tmp_path: Path,
) -> None:
    listen = Listen(harness, org, loopback, tmp_path)
    first = await listen.run([lambda: report_squawks(admin, org, 2)])
    assert first.code == 0
    assert len(loopback.requests) == 2
    await report_squawks(admin, org, 3)  # while nobody listens
    resumed = await listen.run([], resume=True, limit=2)
    assert resumed.code == 0
    assert (
        resumed.out[3]
        == f"Resuming from the position saved in {listen.state().path}; Ctrl-C to stop."
    )
    assert len(event_lines(resumed)) == 3
    await report_squawks(admin, org, 1)  # before the next run without --resume: not for it
    clock.advance(seconds=1)
    fresh = await listen.run([lambda: report_squawks(admin, org, 1)])
    assert len(event_lines(fresh)) == 1
    ids = forwarded_ids(loopback)
    assert len(ids) == len(set(ids)) == 6
    async with harness.client(org.key) as api:
        logged = [e.id async for e in api.events.iter()]
    assert ids == logged[:5] + logged[6:]

    # Another filter is another position: nothing saved for it yet.
    only: tuple[EventName, ...] = ("squawk.resolved",)
    other_filter = await listen.run([], resume=True, events=only)
    assert other_filter.out[0] == "Forwarding squawk.resolved to " + listen.forward_to
    assert other_filter.out[3].startswith(
        f"No position saved yet in {listen.state(only).path}: starting from now"
    )


async def test_a_stop_abandons_the_event_under_way_and_resume_forwards_it_again(
    harness: Harness,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    tmp_path: Path,
) -> None:
    listen = Listen(harness, org, loopback, tmp_path)
    loopback.statuses = [200, 500, 200]

    def stop_in_the_retry_wait(seconds: float) -> None:
        if seconds == 2.0:  # the second event failed once: stop before its retry
            listen.stop.set()

    stopped = await listen.run(
        [lambda: report_squawks(admin, org, 3)], on_sleep=stop_in_the_retry_wait
    )
    assert stopped.code == 0, stopped.err
    assert len(event_lines(stopped)) == 1  # the first; the second was abandoned
    assert stopped.out[-1] == (
        f"Stopped. Position saved in {listen.state().path}; --resume continues there."
    )
    first, second = forwarded_ids(loopback)

    resumed = await listen.run([], resume=True)
    assert len(event_lines(resumed)) == 2
    ids = forwarded_ids(loopback)
    assert ids[:2] == [first, second]
    assert ids[2] == second  # the one abandoned, and only it, comes twice
    assert ids[3] not in (first, second)

    # A forward in flight is abandoned at once, not waited for.
    held = asyncio.Event()
    loopback.held_paths["/hook"] = held

    async def stop_once_heard() -> None:
        await eventually(lambda: len(loopback.requests) == 5, 30, "the fifth forward sent")
        listen.stop.set()

    watcher = asyncio.create_task(stop_once_heard())
    in_flight = await listen.run([lambda: report_squawks(admin, org, 1)], resume=True)
    await watcher
    assert in_flight.code == 0
    assert event_lines(in_flight) == []
    held.set()
    again = await listen.run([], resume=True)
    assert len(event_lines(again)) == 1
    assert forwarded_ids(loopback)[4] == forwarded_ids(loopback)[5]


async def test_an_expired_position_ends_the_run_saying_what_to_do(
    harness: Harness,
    loopback: Receiver,
    admin: httpx.AsyncClient,
    org: Org,
    clock: FakeClock,
    tmp_path: Path,
) -> None:
    listen = Listen(harness, org, loopback, tmp_path)
    assert (await listen.run([lambda: report_squawks(admin, org, 1)])).code == 0
    clock.advance(days=30)  # the saved cursor falls out of the retention window
    expired = await listen.run([], resume=True)
    assert expired.code == 1
    assert expired.err == (
        "hangar-client listen: the saved position is older than hangar keeps events "
        "(410 CURSOR_EXPIRED); run without --resume to start from now\n"
    )
    assert not any(line.startswith("Stopped") for line in expired.out)
