"""Told when it fails: a subscription disabled by five failed deliveries in a row has a notice
written in the same transaction, and the worker's `webhook-alerts` job mails it to every
admin of its organization (HANGAR_SMTP_URL): the name and URL, the last attempt's sentence,
links to its page and to Recover. At most one a day per subscription; a mail server that
fails is tried again later; a notice no longer needed is dropped; a crash between the
disabling and the mail loses nothing. Counted in hangar_webhook_disabled_notices_total.

Mail goes to a loopback SMTP server (tests/fixtures/smtp.py). The run shares one database,
so each test first runs the job once without mail, which drops what others left due, and
reads only its own organization's mailboxes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import httpx
import pytest
from prometheus_client import REGISTRY
from scripts.scratch import free_port
from sqlalchemy import select

from hangar.app import create_app
from hangar.audit.service import OPERATOR
from hangar.foundation.mail import Mailer
from hangar.jobs.scheduler import Done, JobRun
from hangar.kit.container import Services
from hangar.orgs import service as org_service
from hangar.webhooks import service as webhooks
from hangar.webhooks.models import DisabledNotice
from hangar.wiring.worker import JOBS
from tests.fixtures.factories import Org
from tests.fixtures.metrics import TOKEN, labels, scrape
from tests.fixtures.smtp import MailServer, mail_server
from tests.fixtures.webhooks import Hooks, subscribe, subscription

FROM = "Hangar <hangar@example.org>"
BANNER = r'<section class="notice notice-bad banner".*?</section>'
PUBLIC = "https://hangar.example"


def sent_so_far(outcome: str) -> float:
    value = REGISTRY.get_sample_value("hangar_webhook_disabled_notices_total", {"outcome": outcome})
    return value or 0.0


async def served(services: Services, outcome: str) -> float:
    """The counter as GET /metrics serves it (the process's registry, in Prometheus's text)."""
    scraped = dataclasses.replace(
        services, settings=dataclasses.replace(services.settings, metrics_token=TOKEN)
    )
    transport = httpx.ASGITransport(app=create_app(scraped))
    async with httpx.AsyncClient(transport=transport, base_url="https://hangar.example") as c:
        samples = await scrape(c)
    return samples[("hangar_webhook_disabled_notices_total", labels(outcome=outcome))]


@pytest.fixture
async def smtp() -> AsyncIterator[MailServer]:
    async with mail_server() as server:
        yield server


def with_mail(services: Services, url: str) -> Services:
    settings = dataclasses.replace(services.settings, smtp_url=url, mail_from=FROM)
    return dataclasses.replace(services, settings=settings)


async def run_job(services: Services, now: datetime | None = None) -> Done:
    """The scheduler's `webhook-alerts` job, once, as a tick runs it."""
    return await JOBS["webhook-alerts"](JobRun(services, now or services.clock.now()))


@pytest.fixture
async def quiet(hooks: Hooks) -> None:
    """What other tests left due, now or at any later time their clocks set (a retry, a
    day's wait), is dropped (no mail configured): from here on, the notices are this test's."""
    await run_job(hooks.services, hooks.clock.now() + timedelta(days=3650))


@dataclasses.dataclass(frozen=True)
class People:
    admins: list[str]  # the addresses of our organization's admins
    others: list[str]  # of people who must never get our notice


@pytest.fixture
async def people(hooks: Hooks, other: Org, admin: httpx.AsyncClient) -> People:
    """Our organization's admins (the one it was made with, the signed-in `admin`, one more),
    a member and an instructor of it, and the other organization's admin."""
    org = hooks.org
    second = f"second-admin-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("admin", email=second, password="pw-second-admin")
    member = f"member-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("member", email=member, password="pw-member")
    instructor = f"instructor-{uuid.uuid4().hex[:8]}@example.org"
    await org.member("instructor", email=instructor, password="pw-instructor")
    async with hooks.services.engine.connect() as conn:
        _, admins = await org_service.admins_of(conn, org.id)
        _, theirs = await org_service.admins_of(conn, other.id)
    assert second in admins
    assert len(admins) == 3
    return People(admins, [member, instructor, *theirs])


async def disable(hooks: Hooks, sub_id: uuid.UUID) -> datetime:
    """Five deliveries fail three times each: the fifth disables it. Its disabled_at."""
    hooks.receiver.statuses = [503]
    for _ in range(5):
        await hooks.fire()
    await hooks.run_all_attempts()
    enabled, failures, disabled_at = await subscription(hooks.services.engine, sub_id)
    assert (enabled, failures) == (False, 5)
    assert disabled_at is not None
    return disabled_at


async def enable(hooks: Hooks, sub_id: uuid.UUID) -> None:
    """Enable, as the action does it (the day's clock outlives any session)."""
    async with hooks.services.engine.begin() as conn:
        await webhooks.enable(conn, hooks.org.id, sub_id, hooks.clock.now(), by=OPERATOR)


async def notice(hooks: Hooks, sub_id: uuid.UUID) -> DisabledNotice | None:
    async with hooks.services.engine.connect() as conn:
        return (  # type: ignore[return-value]
            await conn.execute(
                select(DisabledNotice).where(DisabledNotice.subscription_id == sub_id)
            )
        ).first()


def mailed_to(server: MailServer, addresses: list[str]) -> list[str]:
    """Who among `addresses` got a mail, in the order the mails came."""
    return [r for m in server.received for r in m.recipients if r in addresses]


async def test_every_admin_is_told_once_with_the_name_url_sentence_and_links(
    hooks: Hooks, quiet: None, people: People, smtp: MailServer, other: Org
) -> None:
    sub_id = await hooks.subscribe(name="Ops receiver")
    theirs = await hooks.subscribe("/theirs", org=other, name="Their receiver")
    services = with_mail(hooks.services, smtp.url())
    sent_before = sent_so_far("sent")

    disabled_at = await disable(hooks, sub_id)

    # Written with the disabling, due at once.
    written = await notice(hooks, sub_id)
    assert written is not None
    assert (written.disabled_at, written.due_at, written.sent_at) == (
        disabled_at,
        disabled_at,
        None,
    )
    assert await notice(hooks, theirs) is None
    done = await run_job(services)
    assert done["sent"] >= 1
    assert sorted(mailed_to(smtp, people.admins)) == sorted(people.admins)
    assert mailed_to(smtp, people.others) == []
    assert sent_so_far("sent") == sent_before + 1  # one notice, to three admins
    assert await served(services, "sent") == sent_so_far("sent")  # on GET /metrics
    mail = next(m for m in smtp.received if m.recipients == [people.admins[0]])
    page = f"{PUBLIC}/settings/{hooks.org.id}/webhooks/{sub_id}/deliveries"
    assert mail.message["Subject"].startswith('Webhook "Ops receiver" of Acme Flight School')
    assert mail.message["From"] == FROM
    body = mail.text
    assert 'The webhook "Ops receiver" of Acme Flight School' in body
    assert f"at {disabled_at:%Y-%m-%d %H:%M} UTC, after 5 consecutive failed deliveries" in body
    assert f"URL: {hooks.receiver.url()}\n" in body
    assert "The last attempt: The receiver failed with 503 Service Unavailable.\n" in body
    assert f"   {page}\n" in body
    assert f"   {page}#recover\n" in body
    assert "Their receiver" not in body
    # Sent: nothing left due, and the next minute sends nothing more.
    after = await notice(hooks, sub_id)
    assert after is not None
    assert (after.due_at, after.sent_at) == (None, services.clock.now())
    count = len(mailed_to(smtp, people.admins))
    hooks.clock.advance(minutes=1)
    await run_job(services)
    assert len(mailed_to(smtp, people.admins)) == count


async def test_at_most_one_mail_a_day_then_only_if_still_disabled(
    hooks: Hooks, quiet: None, people: People, smtp: MailServer
) -> None:
    sub_id = await hooks.subscribe()
    services = with_mail(hooks.services, smtp.url())
    await disable(hooks, sub_id)
    await run_job(services)
    assert len(mailed_to(smtp, people.admins)) == 3
    first_mail = hooks.clock.now()

    # Enabled, and disabled again an hour later: the notice waits for the day to be up.
    hooks.clock.advance(hours=1)
    await enable(hooks, sub_id)
    second_time = await disable(hooks, sub_id)
    done = await run_job(services)
    assert done["postponed"] == 1
    assert len(mailed_to(smtp, people.admins)) == 3
    waiting = await notice(hooks, sub_id)
    assert waiting is not None
    assert waiting.due_at == first_mail + timedelta(days=1)
    assert waiting.disabled_at == second_time

    # A day after the first mail, still disabled: told about the second disabling.
    hooks.clock.set(waiting.due_at)
    await run_job(services)
    told = [m for m in smtp.received if m.recipients[0] in people.admins][3:]
    assert len(told) == 3
    assert f"was disabled at {second_time:%Y-%m-%d %H:%M} UTC" in told[0].text

    # Disabled again within the day, then enabled before the day is up: never mailed.
    hooks.clock.advance(hours=1)
    await enable(hooks, sub_id)
    await disable(hooks, sub_id)
    await run_job(services)  # postponed
    await enable(hooks, sub_id)
    dropped_before = sent_so_far("dropped")
    hooks.clock.advance(days=1)
    await run_job(services)
    assert len(mailed_to(smtp, people.admins)) == 6
    assert sent_so_far("dropped") == dropped_before + 1
    gone = await notice(hooks, sub_id)
    assert gone is not None
    assert gone.due_at is None


async def test_a_mail_server_that_fails_is_tried_again_later(
    hooks: Hooks, quiet: None, people: People, smtp: MailServer
) -> None:
    sub_id = await hooks.subscribe()
    await disable(hooks, sub_id)
    failed_before = sent_so_far("failed")

    # Nothing listens there: every admin's mail fails.
    down = with_mail(hooks.services, f"smtp://127.0.0.1:{free_port()}")
    done = await run_job(down)
    assert done["failed"] == 1
    assert sent_so_far("failed") == failed_before + 1
    row = await notice(hooks, sub_id)
    assert row is not None
    now = hooks.clock.now()
    assert (row.due_at, row.failures, row.sent_at) == (now + timedelta(minutes=1), 1, None)
    assert row.last_error == "the mail server could not be reached"

    # The server answers, but refuses every recipient: failed again, a longer wait.
    smtp.refuse_recipients = True
    hooks.clock.advance(minutes=1)
    up = with_mail(hooks.services, smtp.url())
    await run_job(up)
    row = await notice(hooks, sub_id)
    assert row is not None
    assert (row.due_at, row.failures) == (hooks.clock.now() + timedelta(minutes=2), 2)
    assert row.last_error == "the mail server refused the recipient's address"
    hooks.clock.advance(minutes=1)
    assert (await run_job(up))["failed"] == 0  # not due yet

    smtp.refuse_recipients = False
    hooks.clock.advance(minutes=1)
    await run_job(up)
    assert sorted(mailed_to(smtp, people.admins)) == sorted(people.admins)
    row = await notice(hooks, sub_id)
    assert row is not None
    assert (row.due_at, row.failures, row.last_error) == (None, 0, None)


async def test_a_crash_between_the_disabling_and_the_mail_loses_nothing(
    hooks: Hooks,
    quiet: None,
    people: People,
    smtp: MailServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker dies as it sends (its task cancelled mid-mail): the notice, committed with
    the disabling, is still due, and the next run (any worker's) sends it."""
    sub_id = await hooks.subscribe()
    await disable(hooks, sub_id)
    services = with_mail(hooks.services, smtp.url())
    real_send = Mailer.send

    async def dies(self: Mailer, mail: object) -> None:
        raise asyncio.CancelledError

    monkeypatch.setattr(Mailer, "send", dies)
    with pytest.raises(asyncio.CancelledError):
        await run_job(services)
    row = await notice(hooks, sub_id)
    assert row is not None
    assert row.due_at is not None
    assert row.sent_at is None

    monkeypatch.setattr(Mailer, "send", real_send)
    await run_job(services)
    assert sorted(mailed_to(smtp, people.admins)) == sorted(people.admins)


async def test_without_mail_the_notice_is_dropped_and_the_screens_still_say_so(
    hooks: Hooks, quiet: None, admin: httpx.AsyncClient, outsider: httpx.AsyncClient, other: Org
) -> None:
    sub_id = await hooks.subscribe(name="Ops receiver")
    kept = await subscribe(hooks.services, hooks.org, hooks.receiver.url("/kept"), ["mel.created"])
    dropped_before = sent_so_far("dropped")
    await disable(hooks, sub_id)
    assert (await run_job(hooks.services))["dropped"] >= 1
    assert sent_so_far("dropped") >= dropped_before + 1
    row = await notice(hooks, sub_id)
    assert row is not None
    assert (row.due_at, row.sent_at) == (None, None)

    page = f"/settings/{hooks.org.id}/webhooks/{sub_id}/deliveries"
    for path in ("keys", "webhooks", f"webhooks/{kept}/deliveries"):
        shown = await admin.get(f"/settings/{hooks.org.id}/{path}")
        assert shown.status_code == 200
        banner = re.search(BANNER, shown.text, re.S)
        assert banner is not None, path
        assert f'<a href="{page}" data-disabled-webhook="{sub_id}">Ops receiver</a>' in (
            banner.group(0)
        )
        assert str(kept) not in banner.group(0)
    theirs = await outsider.get(f"/settings/{other.id}/webhooks")
    assert "banner" not in theirs.text
    assert "Ops receiver" not in theirs.text

    await enable(hooks, sub_id)
    assert "banner" not in (await admin.get(f"/settings/{hooks.org.id}/keys")).text
