"""What a batch of outcomes does to its subscriptions, in the batch's transaction: each one's
run of consecutive failed deliveries (the fifth in a row disables it, with its notice and its
audit record) and whether its attempts are timing out (one in flight at a time until one is
answered)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, cast

from sqlalchemy import case, literal, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit import service as audit
from hangar.db.base import UTCDateTime
from hangar.webhooks.delivery import alerts
from hangar.webhooks.models import Subscription

if TYPE_CHECKING:
    from hangar.webhooks.delivery.outcomes import Outcome

FAILURES_BEFORE_DISABLE = 5


async def note_timeouts(conn: AsyncConnection, outcomes: Sequence[Outcome]) -> None:
    """Each subscription whose latest attempt here timed out has one attempt in flight at a
    time from now on (states.subscription_cap), until one is answered again. Written only
    when it changes: successes to a busy receiver must not queue on its row."""
    latest: dict[uuid.UUID, dict[str, Any]] = {}
    for o in outcomes:
        if o.attempt is not None:
            latest[o.subscription_id] = o.attempt
    timed_out = sorted(k for k, a in latest.items() if a.get("outcome") == "timeout")
    answered = sorted(k for k, a in latest.items() if a.get("status_code") is not None)
    if timed_out:
        first = min(latest[k]["started_at"] for k in timed_out)
        await conn.execute(
            update(Subscription)
            .where(Subscription.id.in_(timed_out), Subscription.timing_out_since.is_(None))
            .values(timing_out_since=first)
        )
    if answered:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id.in_(answered), Subscription.timing_out_since.is_not(None))
            .values(timing_out_since=None)
        )


@dataclass
class _Run:
    """One subscription's successes and failures in a batch, in the order they happened, as
    what they do to its run of consecutive failures."""

    head: list[datetime] = field(default_factory=list)  # failures before the first success
    reset: bool = False  # a success came: the run restarts from zero after the head
    # After a success: when a fifth failure in a row came, or how many failures followed
    # the last success.
    fifth_at: datetime | None = None
    tail: int = 0

    def add(self, counts: Literal["success", "failure"], at: datetime | None) -> None:
        if counts == "success":
            self.reset = True
            if self.fifth_at is None:
                self.tail = 0
        elif not self.reset:
            self.head.append(cast(datetime, at))
        elif self.fifth_at is None:
            self.tail += 1
            if self.tail == FAILURES_BEFORE_DISABLE:
                self.fifth_at = at


@dataclass(frozen=True)
class Disabled:
    """A subscription the fifth failure in a row disabled."""

    subscription_id: uuid.UUID
    org_id: uuid.UUID


async def count_runs(conn: AsyncConnection, outcomes: Sequence[Outcome]) -> list[Disabled]:
    """Applies the batch's successes and failures to each subscription's run of consecutive
    failures, in the order they happened: a success forgets the failures before it, and the
    fifth failure in a row disables the subscription. Returns those it disabled.

    Only an enabled subscription's run changes: failures of deliveries still in flight when
    the fifth disabled it (in this batch, an earlier one, or another worker's) do not count,
    nor does a late success, so a disabled subscription says it was disabled after 5. Each
    subscription is one statement that tests `enabled` under the row's lock, so two workers
    settling failures at once cannot overshoot or disable twice."""
    runs: dict[uuid.UUID, _Run] = defaultdict(_Run)
    for o in outcomes:
        if o.counts == "success" or (o.counts == "failure" and o.completed_at is not None):
            runs[o.subscription_id].add(o.counts, o.completed_at)
    # Only a subscription with failures to forget is written (and locked): concurrent
    # successes to one receiver must not queue on its row.
    only_reset = sorted(k for k, r in runs.items() if not r.head and not r.tail and not r.fifth_at)
    if only_reset:
        await conn.execute(
            update(Subscription)
            .where(
                Subscription.id.in_(only_reset),
                Subscription.enabled,
                Subscription.consecutive_failures != 0,
            )
            .values(consecutive_failures=0)
        )
    disabled: list[Disabled] = []
    for sub_id in sorted(runs.keys() - set(only_reset)):  # one lock order for every worker
        row = (
            await conn.execute(
                update(Subscription)
                .where(Subscription.id == sub_id, Subscription.enabled)
                .values(_counted(runs[sub_id]))
                .returning(Subscription.enabled, Subscription.org_id, Subscription.disabled_at)
            )
        ).one_or_none()
        # None: it was disabled already, and is left alone.
        if row is not None and not row.enabled:
            disabled.append(Disabled(sub_id, row.org_id))
            await alerts.noted(conn, sub_id)  # the admins are told, by a notice committed with it
            # And the audit log says hangar did it, when the fifth failure came.
            await audit.record(
                conn,
                row.org_id,
                audit.SYSTEM,
                "webhook.disabled",
                ("webhook", sub_id),
                row.disabled_at,
                {"consecutive_failures": FAILURES_BEFORE_DISABLE},
            )
    return disabled


def _counted(run: _Run) -> dict[str, Any]:
    """The subscription's new run, enabled flag and disabled_at: the head's failures count on
    from the stored run (an enabled subscription's is below five), the rest from zero."""
    if not run.head:
        if run.fifth_at is None:
            return {"consecutive_failures": run.tail}
        return {
            "consecutive_failures": FAILURES_BEFORE_DISABLE,
            "enabled": False,
            "disabled_at": run.fifth_at,
        }
    stored = Subscription.consecutive_failures
    # When the fifth in a row came: which of the head's failures it is depends on the stored
    # run; NULL when none is.
    fifth_at = case(
        *(
            (stored >= FAILURES_BEFORE_DISABLE - i, literal(at, UTCDateTime()))
            for i, at in enumerate(run.head[:FAILURES_BEFORE_DISABLE], start=1)
        ),
        else_=literal(run.fifth_at, UTCDateTime()),
    )
    after = run.tail if run.reset else stored + len(run.head)
    return {
        "consecutive_failures": case((fifth_at.is_not(None), FAILURES_BEFORE_DISABLE), else_=after),
        "enabled": fifth_at.is_(None),
        "disabled_at": fifth_at,
    }
