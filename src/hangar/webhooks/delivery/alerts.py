"""Told when it fails: the admins of an organization are mailed when one of its webhook
subscriptions is disabled (five consecutive failed deliveries), as Stripe and Hookdeck tell
an account whose endpoint keeps failing.

Nothing is lost on the way. The notice is a row (`DisabledNotice`), written by `noted` in the
transaction that disables the subscription (webhooks/delivery/outcomes.py): the disabling and its
notice commit together or not at all. The worker's `webhook-alerts` job (`send_due`, each
minute, once across the cluster like every scheduled job) mails each notice that is due and
then clears it: a process that dies between the two leaves the notice due, and the next run
sends it. The job runs beside the dispatcher, never in its way: its reads and writes are
short transactions of their own, and smtplib talks to the mail server on a thread, with its
timeouts (foundation/mail.py).

- **Whom**: every active admin of the organization (whoever holds `org.settings`), at the
  address they sign in with; one mail each, as every hangar mail goes to one mailbox.
- **What**: the subscription's name and URL, when it was disabled, the last attempt's
  explanation (the sentence the delivery log shows, webhooks/delivery/attempt_kinds.py), and links
  to its page and to Recover on it (`HANGAR_PUBLIC_URL/settings/.../deliveries#recover`).
- **At most one a day per subscription**: a notice that comes within a day of the last mail
  about the same subscription (disabled again after an Enable) waits until the day is up,
  then goes out only if the subscription is still disabled.
- **A mail that fails** (the server unreachable or refusing) is tried again later, a minute
  after the first failure, then 2, 4, ... up to an hour apart, for as long as the
  subscription stays disabled. A notice that reached at least one admin counts as sent: the
  others' failures are logged, not retried, since a retry would mail the ones who got it
  again (one recipient refused is a mailbox's matter, not the server's).
- **Dropped** when it is no longer needed or cannot be sent: the subscription was enabled or
  deleted before the mail went out, no mail is configured (`HANGAR_SMTP_URL`), or the
  organization has no admin with an address.

`hangar_webhook_disabled_notices_total{outcome}` counts each notice taken up: sent, failed,
dropped. The banner of the Org Settings screens says the same to whoever signs in, mail or no
mail (web/access.py).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Literal, TypedDict

from sqlalchemy import case, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.foundation.mail import Mail, Mailer, NotSent, mailer_of
from hangar.foundation.metrics import DISABLED_NOTICES, DisabledNoticeOutcome
from hangar.jobs.scheduler import Done, JobRun
from hangar.webhooks.delivery.attempt_kinds import explain
from hangar.webhooks.delivery.states import is_finished
from hangar.webhooks.models import Attempt, Delivery, DisabledNotice, Subscription

log = logging.getLogger("hangar.webhooks")

# At most one mail per subscription in this long.
QUIET = timedelta(days=1)
# Waits after a failed send: doubling from the first, up to the last.
FIRST_RETRY = timedelta(minutes=1)
LAST_RETRY = timedelta(hours=1)
# Notices taken up per run, and the time a run may take (then the next minute goes on): a
# mail server that hangs costs a run its timeouts, never the scheduler's other jobs.
BATCH = 50
BUDGET = timedelta(seconds=30)
# An organization's name and the addresses of its admins, by its id: given by the worker's
# wiring (orgs owns who its admins are; webhooks does not import it).
Admins = Callable[[AsyncConnection, uuid.UUID], Awaitable[tuple[str, list[str]]]]


async def noted(conn: AsyncConnection, sub_id: uuid.UUID) -> None:
    """The subscription was just disabled, in `conn`'s transaction: its notice is due now,
    about this disabling (its `disabled_at`), whatever an earlier one became."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    disabled = select(
        Subscription.id, Subscription.disabled_at, Subscription.disabled_at.label("due_at")
    ).where(Subscription.id == sub_id, Subscription.disabled_at.is_not(None))
    stmt = insert(DisabledNotice).from_select(
        ["subscription_id", "disabled_at", "due_at"], disabled
    )
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[DisabledNotice.subscription_id],
            set_={
                "disabled_at": stmt.excluded.disabled_at,
                "due_at": stmt.excluded.due_at,
                "failures": 0,
                "last_error": None,
            },
        )
    )


class DisabledView(TypedDict):
    id: str
    name: str
    disabled_at: datetime | None


async def disabled_of(conn: AsyncConnection, org_id: uuid.UUID) -> list[DisabledView]:
    """The organization's subscriptions disabled now (not deleted), longest disabled first:
    what the Org Settings banner names."""
    rows = await conn.execute(
        select(Subscription.id, Subscription.name, Subscription.disabled_at)
        .where(
            Subscription.org_id == org_id,
            Subscription.enabled.is_(False),
            Subscription.deleted_at.is_(None),
        )
        .order_by(Subscription.disabled_at, Subscription.id)
    )
    return [DisabledView(id=str(r.id), name=r.name, disabled_at=r.disabled_at) for r in rows]


def page_url(public_url: str, org_id: uuid.UUID, sub_id: uuid.UUID) -> str:
    """The subscription's page in Org Settings (its health, its log, Enable and Recover)."""
    return f"{public_url}/settings/{org_id}/webhooks/{sub_id}/deliveries"


async def last_explanation(conn: AsyncConnection, sub_id: uuid.UUID) -> str | None:
    """What the delivery log says of the subscription's last failed attempt: the last one of
    the delivery that failed last (the subscription's finished deliveries by when they
    finished: migration 0010's index)."""
    failed = (
        select(Delivery.id)
        .where(Delivery.subscription_id == sub_id, is_finished(), Delivery.status == "failed")
        .order_by(Delivery.completed_at.desc())
        .limit(1)
        .scalar_subquery()
    )
    attempt = (
        await conn.execute(
            select(
                Attempt.outcome,
                Attempt.outcome_detail,
                Attempt.status_code,
                Attempt.response_reason,
                Attempt.error,
            )
            .where(Attempt.delivery_id == failed)
            .order_by(Attempt.number.desc())
            .limit(1)
        )
    ).first()
    return None if attempt is None else explain(*attempt)


def notice_mail(
    to: str,
    notice: Any,  # a row of `_due`
    org_name: str,
    explanation: str | None,
    public_url: str,
    now: datetime,
) -> Mail:
    page = page_url(public_url, notice.org_id, notice.subscription_id)
    last = explanation or "No attempt was recorded."
    body = (
        f'The webhook "{notice.name}" of {org_name} was disabled at '
        f"{notice.disabled_at:%Y-%m-%d %H:%M} UTC, after 5 consecutive failed deliveries. "
        "hangar sends it nothing until it is enabled again.\n"
        "\n"
        f"URL: {notice.url}\n"
        f"The last attempt: {last}\n"
        "\n"
        "Once the receiver answers again:\n"
        "\n"
        f"1. Enable the webhook on its page, where every attempt is explained:\n   {page}\n"
        "2. Press Recover there, to send it the events it missed while it failed or was "
        f"disabled:\n   {page}#recover\n"
        "\n"
        "You get this because you are an administrator of "
        f"{org_name}. hangar sends at most one such mail a day for each webhook.\n"
    )
    return Mail(to, f'Webhook "{notice.name}" of {org_name} is disabled', body, now)


def _due(now: datetime, size: int) -> Any:
    return (
        select(
            DisabledNotice.subscription_id,
            DisabledNotice.disabled_at,
            DisabledNotice.sent_at,
            DisabledNotice.failures,
            Subscription.org_id,
            Subscription.name,
            Subscription.url,
            Subscription.enabled,
            Subscription.deleted_at,
        )
        .join(Subscription, Subscription.id == DisabledNotice.subscription_id)
        .where(DisabledNotice.due_at.is_not(None), DisabledNotice.due_at <= now)
        .order_by(DisabledNotice.due_at, DisabledNotice.subscription_id)
        .limit(size)
    )


def retry_wait(failures: int) -> timedelta:
    """The wait after the `failures`-th failed send in a row: 1, 2, 4, ... minutes, an hour
    at most."""
    doubled: timedelta = FIRST_RETRY * 2 ** min(failures - 1, 16)
    return min(doubled, LAST_RETRY)


async def send_due(run: JobRun, admins: Admins) -> Done:
    """The `webhook-alerts` job: every notice due at `run.now`, a batch at a time, within the
    run's budget; what became of them, by outcome."""
    services = run.services
    engine, clock = services.engine, services.clock
    mailer = mailer_of(services.settings)
    done: dict[str, int] = {"sent": 0, "failed": 0, "dropped": 0, "postponed": 0}
    started = clock.now()
    seen: set[uuid.UUID] = set()  # taken up by this run: one left due is for the next

    def in_time() -> bool:
        return not run.stopping.is_set() and clock.now() - started < BUDGET

    while in_time():
        async with engine.connect() as conn:
            due = (await conn.execute(_due(run.now, BATCH))).all()
        fresh = [n for n in due if n.subscription_id not in seen]
        for notice in fresh:
            if not in_time():
                break
            seen.add(notice.subscription_id)
            outcome = await _take_up(run, mailer, admins, notice)
            done[outcome] += 1
            if outcome != "postponed":
                DISABLED_NOTICES.labels(outcome).inc()
        if not fresh or len(due) < BATCH:
            break
    return done


Taken = Literal[DisabledNoticeOutcome, "postponed"]


async def _take_up(run: JobRun, mailer: Mailer | None, admins: Admins, notice: Any) -> Taken:
    engine, now = run.services.engine, run.now
    if notice.enabled or notice.deleted_at is not None:
        await _settle(engine, notice, due_at=None)
        return "dropped"
    if notice.sent_at is not None and now - notice.sent_at < QUIET:
        await _settle(engine, notice, due_at=notice.sent_at + QUIET)
        return "postponed"
    if mailer is None:
        await _settle(engine, notice, due_at=None)
        return "dropped"
    async with engine.connect() as conn:
        org_name, emails = await admins(conn, notice.org_id)
        explanation = await last_explanation(conn, notice.subscription_id)
    if not emails:
        await _settle(engine, notice, due_at=None)
        return "dropped"
    public_url = run.services.settings.public_url
    reached, why = 0, None
    for email in emails:
        try:
            await mailer.send(notice_mail(email, notice, org_name, explanation, public_url, now))
            reached += 1
        except NotSent as failed:
            why = str(failed)
    sub = notice.subscription_id
    if reached:
        if why is not None:
            log.warning(
                "disabled-webhook notice of subscription %s: %d of %d admins not mailed: %s",
                sub,
                len(emails) - reached,
                len(emails),
                why,
            )
        await _sent(engine, notice, now)
        return "sent"
    failures = notice.failures + 1
    wait = retry_wait(failures)
    log.warning(
        "disabled-webhook notice of subscription %s not sent (%s); trying again in %d min",
        sub,
        why,
        wait // timedelta(minutes=1),
    )
    await _settle(engine, notice, due_at=now + wait, failures=failures, last_error=why)
    return "failed"


async def _settle(
    engine: AsyncEngine,
    notice: Any,
    *,
    due_at: datetime | None,
    failures: int = 0,
    last_error: str | None = None,
) -> None:
    """Due again at `due_at` (None: done with), unless a newer disabling was noted meanwhile:
    that one keeps its own due notice."""
    async with engine.begin() as conn:
        await conn.execute(
            update(DisabledNotice)
            .where(
                DisabledNotice.subscription_id == notice.subscription_id,
                DisabledNotice.disabled_at == notice.disabled_at,
            )
            .values(
                due_at=due_at,
                failures=failures,
                last_error=last_error[:500] if last_error else None,
            )
        )


async def _sent(engine: AsyncEngine, notice: Any, now: datetime) -> None:
    """A mail went out: that counts for the day's limit whatever else changed meanwhile,
    while a newer disabling, noted since the notice was read, stays due."""
    same = DisabledNotice.disabled_at == notice.disabled_at
    async with engine.begin() as conn:
        await conn.execute(
            update(DisabledNotice)
            .where(DisabledNotice.subscription_id == notice.subscription_id)
            .values(
                sent_at=now,
                due_at=case((same, None), else_=DisabledNotice.due_at),
                failures=case((same, 0), else_=DisabledNotice.failures),
                last_error=case((same, None), else_=DisabledNotice.last_error),
            )
        )
