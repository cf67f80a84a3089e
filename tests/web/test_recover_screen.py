"""Recover on the subscription's page (`#recover`): a time field in UTC offering when it was
last disabled or 24 hours ago, whichever is earlier; what a recovery queued, and who asked
for the last one; refusals beside the field or above the form; a disabled subscription
asks to be enabled first; and nobody else's subscription."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta

import httpx
from sqlalchemy import insert, update

from hangar.kit.container import Services
from hangar.webhooks.events import outbox
from hangar.webhooks.models import DisabledNotice, Subscription
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.pages import csrf_in
from tests.fixtures.webhooks import DATA, subscribe

URL = "https://hooks.example.com/recover"
SINCE = re.compile(r'<input id="since" name="since" type="datetime-local"[^>]* value="([^"]*)"')


def page_of(org: Org, sub_id: uuid.UUID | str) -> str:
    return f"/settings/{org.id}/webhooks/{sub_id}/deliveries"


def field(moment: datetime) -> str:
    """A time as the form's datetime-local field holds it (UTC, to the minute)."""
    return f"{moment:%Y-%m-%dT%H:%M}"


def offered(page: str) -> str:
    found = SINCE.search(page)
    assert found is not None, "no Recover form on the page"
    return found.group(1)


async def subscription_of(
    services: Services, org: Org, clock: FakeClock, *, enabled: bool = True, days: int = 10
) -> uuid.UUID:
    """A subscription `days` old, not yet sent anything."""
    created = clock.now() - timedelta(days=days)
    return await subscribe(services, org, URL, None, created_at=created, enabled=enabled)


async def missed(services: Services, org: Org, sub_id: uuid.UUID, count: int) -> None:
    """`count` events recorded while the subscription was disabled: no delivery to it."""
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Subscription).where(Subscription.id == sub_id).values(enabled=False)
        )
        for _ in range(count):
            await outbox.record(conn, org.id, ["squawk.created"], DATA, services.clock.now())
        await conn.execute(
            update(Subscription).where(Subscription.id == sub_id).values(enabled=True)
        )


async def post_recover(
    admin: httpx.AsyncClient, org: Org, sub_id: uuid.UUID | str, since: str
) -> httpx.Response:
    page = await admin.get(page_of(org, sub_id))
    return await admin.post(
        f"/settings/{org.id}/webhooks/{sub_id}/recover",
        data={"csrf_token": csrf_in(page.text), "since": since},
    )


async def test_the_form_offers_the_last_day_or_when_it_was_disabled_if_earlier(
    services: Services, admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    sub_id = await subscription_of(services, org, clock)
    page = await admin.get(page_of(org, sub_id))
    assert page.status_code == 200
    assert '<section class="recover" id="recover"' in page.text
    assert f'action="/settings/{org.id}/webhooks/{sub_id}/recover#recover"' in page.text
    assert offered(page.text) == field(clock.now() - timedelta(days=1))

    # Disabled three days ago, and enabled since: its notice remembers when.
    three_days = clock.now() - timedelta(days=3, minutes=7)
    async with services.engine.begin() as conn:
        await conn.execute(
            insert(DisabledNotice).values(subscription_id=sub_id, disabled_at=three_days)
        )
    assert offered((await admin.get(page_of(org, sub_id))).text) == field(three_days)

    # Never before it was created.
    async with services.engine.begin() as conn:
        await conn.execute(
            update(DisabledNotice)
            .where(DisabledNotice.subscription_id == sub_id)
            .values(disabled_at=clock.now() - timedelta(days=40))
        )
    assert offered((await admin.get(page_of(org, sub_id))).text) == field(
        clock.now() - timedelta(days=10)
    )

    # A subscription of 60 days, disabled 40 days ago: no further back than what is kept (30
    # days), with a margin of minutes for the form to be sent.
    old = await subscription_of(services, org, clock, days=60)
    async with services.engine.begin() as conn:
        await conn.execute(
            insert(DisabledNotice).values(
                subscription_id=old, disabled_at=clock.now() - timedelta(days=40)
            )
        )
    kept = clock.now() - timedelta(days=30) + timedelta(minutes=10)
    assert offered((await admin.get(page_of(org, old))).text) == field(kept + timedelta(minutes=1))


async def test_recover_from_the_page_then_it_says_what_was_queued_and_by_whom(
    services: Services, admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    sub_id = await subscription_of(services, org, clock)
    await missed(services, org, sub_id, 2)

    answer = await post_recover(admin, org, sub_id, field(clock.now() - timedelta(hours=1)))

    assert answer.status_code == 303
    assert answer.headers["location"] == f"{page_of(org, sub_id)}?done=recovered#recover"
    page = await admin.get(f"{page_of(org, sub_id)}?done=recovered")
    assert "2 deliveries are queued, oldest event first" in page.text
    last = re.search(r'<p class="hint last-recovery"[^>]*>(.*?)</p>', page.text, re.S)
    assert last is not None
    assert "asked for by admin-" in last.group(1)
    assert "2 deliveries queued, 2 still waiting to be sent" in last.group(1)

    # Again while those wait: refused above the form, the time kept as typed.
    again = await post_recover(admin, org, sub_id, "2026-05-04T09:00")
    assert again.status_code == 409
    assert (
        '<p class="notice notice-bad" role="alert">A recovery of this webhook subscription is '
        "still sending" in again.text
    )
    assert offered(again.text) == "2026-05-04T09:00"
    # A page answering a form never reloads itself: the reload would post it again.
    assert 'id="auto-refresh"' not in again.text
    assert 'id="auto-refresh"' in page.text


async def test_a_time_in_the_future_past_retention_or_not_a_time_is_refused_beside_it(
    services: Services, admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    sub_id = await subscription_of(services, org, clock)
    for typed, said in (
        (field(clock.now() + timedelta(hours=1)), "It is in the future; choose a time before now"),
        (
            field(clock.now() - timedelta(days=31)),
            "It is more than 30 days ago, beyond what hangar keeps",
        ),
        ("next tuesday", "Enter a date and time in UTC, such as 2026-05-03T10:00."),
        ("", "Enter a date and time in UTC, such as 2026-05-03T10:00."),
    ):
        refused = await post_recover(admin, org, sub_id, typed)
        assert refused.status_code == 422, typed
        error = re.search(
            r'<p class="field-error" id="since-error" role="alert">([^<]*)</p>', refused.text
        )
        assert error is not None, typed
        assert error.group(1).startswith(said), error.group(1)
        assert offered(refused.text) == typed
        assert 'aria-invalid="true"' in refused.text


async def test_a_disabled_subscription_asks_to_be_enabled_first(
    services: Services, admin: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    sub_id = await subscription_of(services, org, clock, enabled=False)
    page = await admin.get(page_of(org, sub_id))
    assert "This webhook is disabled: enable it first, then recover." in page.text
    assert SINCE.search(page.text) is None
    assert f'action="/settings/{org.id}/webhooks/{sub_id}/enable"' in page.text

    refused = await admin.post(
        f"/settings/{org.id}/webhooks/{sub_id}/recover",
        data={"csrf_token": csrf_in(page.text), "since": field(clock.now())},
    )
    assert refused.status_code == 409
    assert "enable it first, then recover" in refused.text


async def test_another_organizations_subscription_is_not_found(
    services: Services,
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    sub_id = await subscription_of(services, org, clock)
    theirs = await subscription_of(services, other, clock)
    await missed(services, org, sub_id, 1)
    csrf = csrf_in((await outsider.get(f"/settings/{other.id}/webhooks")).text)
    since = field(clock.now() - timedelta(hours=1))
    for path in (
        f"/settings/{org.id}/webhooks/{sub_id}/recover",  # our organization, not theirs
        f"/settings/{other.id}/webhooks/{sub_id}/recover",  # ours, through theirs
    ):
        hidden = await outsider.post(path, data={"csrf_token": csrf, "since": since})
        assert hidden.status_code == 404, path
    ours_csrf = csrf_in((await admin.get(page_of(org, sub_id))).text)
    hidden = await admin.post(
        f"/settings/{org.id}/webhooks/{theirs}/recover",
        data={"csrf_token": ours_csrf, "since": since},
    )
    assert hidden.status_code == 404
    page = await admin.get(page_of(org, sub_id))
    assert "last-recovery" not in page.text  # none of those did anything
