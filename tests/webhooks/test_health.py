"""GET /api/orgs/{org_id}/webhooks/{id}/health: a subscription's queue, its endpoint's last 24
hours and 7 days, and whether the per-endpoint cap is what holds its deliveries back.

Histories are written directly (tests/fixtures/health.py) with durations chosen so that every
number can be worked out by hand; the queue's in-flight deliveries come from the production
dispatcher's claims. The other organization has a subscription with a history of its own at
the same moments: none of it may show up.
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy import update

from hangar.kit.container import Services
from hangar.webhooks.delivery.states import LEASE, MAX_IN_FLIGHT, MAX_IN_FLIGHT_TIMING_OUT
from hangar.webhooks.inspection.health import (
    BucketView,
    QueueView,
    ResponseTimes,
    WindowView,
    subscription_health,
    summary,
)
from hangar.webhooks.models import Delivery, Subscription
from tests.fixtures.factories import Org
from tests.fixtures.fakes import START, FakeClock
from tests.fixtures.health import History, Sent, health_of, health_url, nearest_rank
from tests.fixtures.webhooks import Hooks, subscribe

URL = "https://hooks.example.com/hangar"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.fixture
def until(clock: FakeClock) -> datetime:
    """Where the windows end: the start of the clock's minute."""
    return clock.now().replace(second=0, microsecond=0)


async def history(services: Services, org: Org, **values: object) -> History:
    return History(services.engine, org, await subscribe(services, org, URL, None, **values))


async def foreign_history(services: Services, other: Org, t: datetime) -> History:
    """The other organization's subscription, busy at the same moments: slow, failing, with
    its cap full and a backlog."""
    theirs = await history(services, other)
    for minutes in (5, 90, 60 * 30):
        done = t - timedelta(minutes=minutes)
        await theirs.finished("failed", done, [Sent(done, 9_999, "http_error", 500)])
    for _ in range(MAX_IN_FLIGHT):
        await theirs.pending(t - timedelta(hours=1), lease_until=t + timedelta(minutes=5))
    await theirs.pending(t - timedelta(hours=1))
    return theirs


async def test_the_numbers_of_a_known_history(
    services: Services, org: Org, other: Org, admin: httpx.AsyncClient, until: datetime
) -> None:
    t = until
    ours = await history(services, org)
    await foreign_history(services, other, t)

    def sent(done: datetime, *durations: int, outcome: str = "delivered") -> list[Sent]:
        """Attempts 2 s apart, the last 1 s before `done`."""
        n = len(durations)
        return [
            Sent(done - timedelta(seconds=1 + 2 * (n - i)), ms, outcome)
            for i, ms in enumerate(durations, 1)
        ]

    m = timedelta(minutes=1)
    # The last hour: two deliveries, and an old one redelivered (its first series, 20 days
    # ago, is far outside both windows; only the new attempt counts).
    await ours.finished("succeeded", t - 10 * m, sent(t - 10 * m, 120))
    await ours.finished("succeeded", t - 30 * m, sent(t - 30 * m, 80))
    old = t - timedelta(days=20)
    await ours.finished(
        "succeeded",
        t - 20 * m,
        [*sent(old, 7_000, 7_000, 7_000, outcome="timeout"), *sent(t - 20 * m, 150)],
        created_at=old,
    )
    # Earlier today: skipped (subscription disabled: not the endpoint's doing), failed after a
    # timeout, a 503 and a refused connection, failed with its URL refused (nothing sent:
    # its 40 ms are not a response time), and one more success.
    await ours.finished("skipped", t - 90 * m)
    await ours.finished(
        "failed",
        t - 150 * m,
        [
            Sent(t - 150 * m - timedelta(seconds=30), 10_000, "timeout", None),
            Sent(t - 150 * m - timedelta(seconds=12), 200, "http_error", 503),
            Sent(t - 150 * m - timedelta(seconds=2), 5, "connection_refused", None),
        ],
    )
    await ours.finished("failed", t - 200 * m, sent(t - 200 * m, 40, outcome="url_private"))
    await ours.finished("succeeded", t - 270 * m, sent(t - 270 * m, 300))
    # Earlier this week, and before it.
    await ours.finished("succeeded", t - timedelta(hours=30), sent(t - timedelta(hours=30), 1_000))
    six_and_a_half = t - timedelta(days=6, hours=12)
    await ours.finished("succeeded", six_and_a_half, sent(six_and_a_half, 2_000))
    eight_days = t - timedelta(days=8)
    await ours.finished("succeeded", eight_days, sent(eight_days, 9_000))
    # The queue: a retry waiting out its wait (its first attempt counts), one due, one in
    # flight.
    now = services.clock.now()
    await ours.pending(now + timedelta(seconds=6), sent(t - 2 * m, 400))
    await ours.pending(t - m)
    await ours.pending(t - 3 * m, lease_until=now + timedelta(seconds=30))

    health = await health_of(admin, org, ours.sub_id)

    assert health["subscription_id"] == str(ours.sub_id)
    assert at(health["at"]) == now
    assert health["queue"] == {
        "waiting": 2,
        "due": 1,
        "in_flight": 1,
        "max_in_flight": MAX_IN_FLIGHT,
        "oldest_due_at": (t - m).isoformat().replace("+00:00", "Z"),
    }
    day, week = health["windows"]
    assert (at(day["since"]), at(day["until"])) == (t - timedelta(days=1), t)
    assert (at(week["since"]), at(week["until"])) == (t - timedelta(days=7), t)
    # 24 h: sent 120, 80, 150, 10000, 200, 5, 300 and the retry's 400: sorted 5, 80, 120,
    # 150, 200, 300, 400, 10000. Nearest rank: p50 is the 4th, p95 the 8th.
    assert {k: v for k, v in day.items() if k not in ("window", "since", "until")} == {
        "succeeded": 4,
        "failed": 2,
        "skipped": 1,
        "success_rate": 0.6667,
        "attempts": 8,
        "response_ms": {"p50": 150, "p95": 10_000, "mean": 1407},  # 11255 / 8
    }
    # 7 d adds 1000 and 2000: p50 the 5th of 10, p95 the 10th.
    assert {k: v for k, v in week.items() if k not in ("window", "since", "until")} == {
        "succeeded": 6,
        "failed": 2,
        "skipped": 1,
        "success_rate": 0.75,
        "attempts": 10,
        "response_ms": {"p50": 200, "p95": 10_000, "mean": 1426},  # 14255 / 10
    }

    hourly, daily = (s["buckets"] for s in health["series"])
    assert [at(b["since"]) for b in hourly] == [t - timedelta(hours=h) for h in range(24, 0, -1)]
    assert [at(b["until"]) for b in hourly][-1] == t
    # Newest last: (succeeded, failed, skipped, attempts, p50, p95) of the last five hours.
    assert [
        (
            b["succeeded"],
            b["failed"],
            b["skipped"],
            b["attempts"],
            b["response_ms"]["p50"],
            b["response_ms"]["p95"],
        )
        for b in hourly[-5:]
    ] == [
        (1, 0, 0, 1, 300, 300),
        (0, 1, 0, 0, None, None),  # the URL refused: a failure, but no response time
        (0, 1, 0, 3, 200, 10_000),
        (0, 0, 1, 0, None, None),
        (3, 0, 0, 4, 120, 400),  # 80, 120, 150 and the retry's 400
    ]
    assert all(b["attempts"] == 0 for b in hourly[:-5])
    assert [at(b["since"]) for b in daily] == [t - timedelta(days=d) for d in range(7, 0, -1)]
    assert [(b["succeeded"], b["attempts"], b["response_ms"]["p95"]) for b in daily] == [
        (1, 1, 2_000),
        (0, 0, None),
        (0, 0, None),
        (0, 0, None),
        (0, 0, None),
        (1, 1, 1_000),
        (4, 8, 10_000),  # the last day: the 24 h window
    ]
    assert daily[-1]["response_ms"] == day["response_ms"]

    assert health["held_back"] is False
    assert health["summary"] == (
        "66.6% of the deliveries of the last 24 hours succeeded (4 of 6); your endpoint "
        "answered in 1.4 s on average (95% within 10.0 s). 1 delivery is being sent now and "
        "2 waiting."
    )
    assert health["retention_days"] == services.settings.delivery_retention_days == 30


async def test_percentiles_are_exact_by_nearest_rank_in_every_bucket(
    services: Services, org: Org, admin: httpx.AsyncClient, until: datetime
) -> None:
    ours = await history(services, org)
    rng = random.Random(23)
    sent: list[tuple[datetime, int]] = []
    for _ in range(240):
        # Clustered over the last day and spread over the week; durations with ties.
        ago = timedelta(minutes=rng.choice([rng.randrange(1, 24 * 60), rng.randrange(1, 7 * 1440)]))
        started = until - ago
        ms = rng.choice([rng.randrange(20, 400), rng.randrange(20, 60), 10_000])
        sent.append((started, ms))
        done = started + timedelta(milliseconds=ms)
        await ours.finished(
            "succeeded", min(done, until - timedelta(microseconds=1)), [Sent(started, ms)]
        )

    health = await health_of(admin, org, ours.sub_id)

    spans = [*health["windows"], *(b for s in health["series"] for b in s["buckets"])]
    for span in spans:
        since, end = at(span["since"]), at(span["until"])
        durations = [ms for started, ms in sent if since <= started < end]
        assert span["attempts"] == len(durations), span
        expected = {
            "p50": nearest_rank(durations, 50),
            "p95": nearest_rank(durations, 95),
            "mean": round(sum(durations) / len(durations)) if durations else None,
        }
        assert span["response_ms"] == expected, span
    assert health["windows"][1]["attempts"] == 240


async def test_the_windows_end_at_the_minute_and_move_with_the_clock(
    services: Services, org: Org, clock: FakeClock, until: datetime
) -> None:
    ours = await history(services, org)
    t = until - timedelta(hours=3)
    await ours.finished("succeeded", t, [Sent(t, 250)])

    async def counts() -> tuple[int, int, int, int]:
        """(24 h deliveries, 24 h attempts, 7 d deliveries, 7 d attempts)"""
        async with services.engine.connect() as conn:
            health = await subscription_health(
                conn, org.id, ours.sub_id, clock.now(), retention_days=30
            )
        day, week = health["windows"]
        return day["succeeded"], day["attempts"], week["succeeded"], week["attempts"]

    assert await counts() == (1, 1, 1, 1)
    # 24 hours after it, to the minute: still in (a window includes its start).
    clock.set(t + timedelta(days=1, seconds=59))
    assert await counts() == (1, 1, 1, 1)
    clock.advance(seconds=1)  # a minute later: only in the week
    assert await counts() == (0, 0, 1, 1)
    clock.set(t + timedelta(days=7, seconds=30))
    assert await counts() == (0, 0, 1, 1)
    clock.advance(minutes=1)
    assert await counts() == (0, 0, 0, 0)

    # A reload within the minute gets the week already read: what is recorded meanwhile, even
    # about an earlier minute, shows from the next minute on (a minute late at most).
    earlier = clock.now() - timedelta(minutes=5)
    await ours.finished("succeeded", earlier, [Sent(earlier, 90)])
    assert await counts() == (0, 0, 0, 0)
    clock.advance(minutes=1)
    assert await counts() == (1, 1, 1, 1)


async def test_held_back_exactly_when_due_deliveries_wait_behind_a_full_cap(
    hooks: Hooks, other: Org, admin: httpx.AsyncClient
) -> None:
    services, clock = hooks.services, hooks.clock
    until = clock.now().replace(second=0, microsecond=0)
    await foreign_history(services, other, until)
    ours = History(services.engine, hooks.org, await hooks.subscribe())
    # The endpoint answered slowly in the last hour.
    for minutes, ms in ((5, 6_000), (15, 6_200), (25, 6_100)):
        done = until - timedelta(minutes=minutes)
        await ours.finished("succeeded", done, [Sent(done - timedelta(seconds=7), ms)])
    for _ in range(MAX_IN_FLIGHT + 2):
        await ours.pending(clock.now() - timedelta(minutes=10))
    retry_at = clock.now() + timedelta(seconds=8)
    await ours.pending(retry_at, [Sent(until - timedelta(minutes=1), 10_000, "timeout", None)])

    async def state() -> tuple[dict[str, object], bool, str]:
        health = await health_of(admin, hooks.org, ours.sub_id)
        queue = {k: health["queue"][k] for k in ("waiting", "due", "in_flight")}
        return queue, health["held_back"], health["summary"]

    # Nothing claimed yet: due work, but no slot taken (the workers may be down).
    queue, held, words = await state()
    assert (queue, held) == (
        {"waiting": MAX_IN_FLIGHT + 3, "due": MAX_IN_FLIGHT + 2, "in_flight": 0},
        False,
    )
    assert words.endswith(f" {MAX_IN_FLIGHT + 3} deliveries are waiting to be sent.")

    claimed = await hooks.dispatcher().claim(50)
    assert [c.subscription_id for c in claimed].count(ours.sub_id) == MAX_IN_FLIGHT
    queue, held, words = await state()
    assert (queue, held) == ({"waiting": 3, "due": 2, "in_flight": MAX_IN_FLIGHT}, True)
    # 6000, 6200, 6100 and the 10 s timeout: 7.1 s on average over the last hour.
    assert words == (
        "Your endpoint answered in 7.1 s on average over the last hour; 3 deliveries are "
        f"waiting. hangar sends at most {MAX_IN_FLIGHT} deliveries at a time to one endpoint, so "
        "a slow endpoint is served more slowly; it is not disabled for being slow."
    )

    # The cap full but nothing due (what waits is a retry's wait): not held back.
    await hooks.dispatcher().attempt(next(c for c in claimed if c.subscription_id == ours.sub_id))
    refill = await hooks.dispatcher().claim(50)
    assert [c.subscription_id for c in refill].count(ours.sub_id) == 1
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Delivery)
            .where(Delivery.subscription_id == ours.sub_id, Delivery.lease_until.is_(None))
            .where(Delivery.status == "pending", Delivery.attempts_made == 0)
            .values(next_attempt_at=clock.now() + timedelta(seconds=5))
        )
    queue, held, _ = await state()
    assert (queue, held) == ({"waiting": 2, "due": 0, "in_flight": MAX_IN_FLIGHT}, False)

    # Due again (the retry too), with one slot free: not held back either.
    clock.advance(seconds=8)
    await hooks.dispatcher().attempt(next(c for c in refill if c.subscription_id == ours.sub_id))
    queue, held, _ = await state()
    assert (queue["in_flight"], held) == (MAX_IN_FLIGHT - 1, False)
    assert queue["due"] == 2

    # Leases of a worker that died: once they run out nothing is in flight, all is due.
    clock.advance(seconds=LEASE.total_seconds())
    queue, held, _ = await state()
    assert (queue, held) == (
        {"waiting": MAX_IN_FLIGHT + 1, "due": MAX_IN_FLIGHT + 1, "in_flight": 0},
        False,
    )


async def test_a_subscription_that_times_out_is_held_back_at_one_in_flight(
    hooks: Hooks, other: Org, admin: httpx.AsyncClient
) -> None:
    services, clock = hooks.services, hooks.clock
    await foreign_history(services, other, clock.now().replace(second=0, microsecond=0))
    ours = History(services.engine, hooks.org, await hooks.subscribe())
    for _ in range(3):
        await ours.pending(clock.now() - timedelta(minutes=1))
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == ours.sub_id)
            .values(timing_out_since=clock.now() - timedelta(minutes=2))
        )
    claimed = await hooks.dispatcher().claim(50)
    assert [c.subscription_id for c in claimed] == [ours.sub_id]
    health = await health_of(admin, hooks.org, ours.sub_id)
    assert health["queue"]["max_in_flight"] == MAX_IN_FLIGHT_TIMING_OUT == 1
    assert (health["queue"]["in_flight"], health["queue"]["due"], health["held_back"]) == (
        1,
        2,
        True,
    )
    assert health["summary"] == (
        "Your endpoint's attempts time out (no answer within 10 s); 2 deliveries are waiting. "
        "Until it answers again hangar sends it one delivery at a time, so that its backlog "
        "does not hold the slots other endpoints need."
    )


async def test_another_organizations_or_a_deleted_subscription_is_not_found(
    services: Services,
    org: Org,
    other: Org,
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    member: httpx.AsyncClient,
    client: httpx.AsyncClient,
) -> None:
    ours = await history(services, org)
    theirs = await foreign_history(services, other, services.clock.now())

    for who, path in (
        (outsider, health_url(org, ours.sub_id)),  # their admin, our path
        (outsider, health_url(other, ours.sub_id)),  # their admin, their path, our id
        (admin, health_url(org, theirs.sub_id)),  # our admin, their subscription
        (admin, health_url(org, uuid.uuid4())),
        (admin, health_url(org, "not-an-id")),
    ):
        refused = await who.get(path)
        assert (refused.status_code, refused.json()["code"]) == (404, "NOT_FOUND"), path

    deleted = await history(services, org, deleted_at=services.clock.now(), enabled=False)
    gone = await admin.get(health_url(org, deleted.sub_id))
    assert (gone.status_code, gone.json()["code"]) == (404, "NOT_FOUND")

    forbidden = await member.get(health_url(org, ours.sub_id))
    assert (forbidden.status_code, forbidden.json()["code"]) == (403, "FORBIDDEN")
    assert "org.settings" in forbidden.json()["detail"]
    anonymous = await client.get(health_url(org, ours.sub_id))
    assert (anonymous.status_code, anonymous.json()["code"]) == (401, "UNAUTHORIZED")

    # A session API: not in the public description.
    described = await client.get("/api/v1/external/openapi.json")
    assert "/health" not in described.text


async def test_an_empty_history_in_words(
    services: Services, org: Org, admin: httpx.AsyncClient
) -> None:
    ours = await history(services, org)
    health = await health_of(admin, org, ours.sub_id)
    assert health["queue"] == {
        "waiting": 0,
        "due": 0,
        "in_flight": 0,
        "max_in_flight": MAX_IN_FLIGHT,
        "oldest_due_at": None,
    }
    for window in health["windows"]:
        assert (window["succeeded"], window["attempts"], window["success_rate"]) == (0, 0, None)
        assert window["response_ms"] == {"p50": None, "p95": None, "mean": None}
    assert health["held_back"] is False
    assert health["summary"] == "Nothing was delivered to this endpoint in the last 7 days."


def window(name: str, succeeded: int = 0, failed: int = 0, mean: int | None = None) -> WindowView:
    times = ResponseTimes(p50=mean, p95=None if mean is None else 2 * mean, mean=mean)
    return WindowView(
        window=name,
        since=START,
        until=START,
        succeeded=succeeded,
        failed=failed,
        skipped=0,
        success_rate=None,
        attempts=0 if mean is None else succeeded + failed,
        response_ms=times,
    )


def queue(waiting: int = 0, due: int = 0, in_flight: int = 0) -> QueueView:
    return QueueView(
        waiting=waiting,
        due=due,
        in_flight=in_flight,
        max_in_flight=MAX_IN_FLIGHT,
        oldest_due_at=None,
    )


@pytest.mark.parametrize(
    ("state", "day", "week", "last_hour", "held", "words"),
    [
        (
            queue(waiting=280, due=276, in_flight=MAX_IN_FLIGHT),
            window("24h", 900, 0, 5_800),
            window("7d", 900, 0, 5_800),
            6_100,
            True,
            "Your endpoint answered in 6.1 s on average over the last hour; 280 deliveries are "
            f"waiting. hangar sends at most {MAX_IN_FLIGHT} deliveries at a time to one endpoint, "
            "so a slow "
            "endpoint is served more slowly; it is not disabled for being slow.",
        ),
        (
            queue(waiting=1, due=1, in_flight=MAX_IN_FLIGHT),
            window("24h"),
            window("7d"),
            None,
            True,
            "Your endpoint has not answered yet; 1 delivery is waiting. hangar sends at most "
            f"{MAX_IN_FLIGHT} "
            "deliveries at a time to one endpoint, so a slow endpoint is served more slowly; it "
            "is not disabled for being slow.",
        ),
        (
            queue(),
            window("24h", 1, 0, 180),
            window("7d", 1, 0, 180),
            180,
            False,
            "The one delivery of the last 24 hours succeeded; your endpoint answered in 180 ms "
            "on average (95% within 360 ms).",
        ),
        (
            queue(in_flight=2),
            window("24h"),
            window("7d", 1_204, 3, 2_000),
            None,
            False,
            "99.7% of the deliveries of the last 7 days succeeded (1,204 of 1,207); your "
            "endpoint answered in 2.0 s on average (95% within 4.0 s). 2 deliveries are being "
            "sent now.",
        ),
    ],
)
def test_the_sentence(
    state: QueueView,
    day: WindowView,
    week: WindowView,
    last_hour: int | None,
    held: bool,
    words: str,
) -> None:
    hour = BucketView(
        since=START,
        until=START,
        succeeded=0,
        failed=0,
        skipped=0,
        attempts=0,
        response_ms=ResponseTimes(p50=last_hour, p95=last_hour, mean=last_hour),
    )
    assert summary(state, [day, week], last_hour=hour, held_back=held) == words


async def test_a_disabled_subscription_says_so_at_once(
    hooks: Hooks, other: Org, admin: httpx.AsyncClient
) -> None:
    """Issue 39: 50 s after five failures disabled it, the panel still said "100% succeeded":
    the windows are the minute's, read once a minute, and did not hold the failures yet.
    Whether it is disabled is read at the moment, like the queue, and said first."""
    org, clock = hooks.org, hooks.clock
    sub_id = await hooks.subscribe()
    theirs = await hooks.subscribe("/theirs", org=other)
    for _ in range(3):
        await hooks.fire()
    assert await hooks.dispatcher().run_once() == 3
    clock.set(clock.now().replace(second=0) + timedelta(minutes=1, seconds=5))
    before = await health_of(admin, org, sub_id)
    assert before["summary"].startswith("All 3 deliveries of the last 24 hours succeeded")
    assert before["disabled_at"] is None

    hooks.receiver.statuses = [500]
    for _ in range(5):
        await hooks.fire()
    await hooks.run_all_attempts()  # the fifth failure disables it, 10 s on
    disabled_at = (await admin.get(f"/api/orgs/{org.id}/webhooks/{sub_id}")).json()["disabled_at"]
    assert disabled_at is not None
    clock.advance(seconds=40)  # 50 s after the first failure, in the same minute

    after = await health_of(admin, org, sub_id)
    assert after["disabled_at"] == disabled_at
    assert after["summary"] == (
        f"Disabled since {clock.now():%Y-%m-%d %H:%M} UTC, after 5 failed deliveries in a row: "
        "nothing is sent to this endpoint until it is enabled again. Once it answers, enable "
        "it, then recover what it missed."
    )
    # The numbers are still the minute's: only the sentence knows better.
    assert (after["windows"][0]["succeeded"], after["windows"][0]["failed"]) == (3, 0)
    page = await admin.get(f"/settings/{org.id}/webhooks/{sub_id}/deliveries")
    assert 'data-disabled="true"' in page.text
    assert 'class="health-summary notice notice-bad disabled">Disabled since' in page.text
    # The other organization's subscription is none of ours to see.
    assert (await admin.get(f"/api/orgs/{org.id}/webhooks/{theirs}/health")).status_code == 404
