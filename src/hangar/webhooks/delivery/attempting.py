"""One attempt of a claimed delivery, as the dispatcher runs it: skipped when its subscription
is disabled or deleted, held back when no key opens its secret, otherwise signed (with the
previous secret too while a rotation's grace runs), sent, and its outcome recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from hangar.foundation.clock import Clock
from hangar.foundation.crypto import SecretUnreadable
from hangar.foundation.metrics import (
    ATTEMPTS,
    ATTEMPTS_IN_PROGRESS,
    DELIVERIES_FINISHED,
    DELIVERIES_HELD,
    FIRST_ATTEMPT_DELAY,
)
from hangar.webhooks.delivery.attempt_log import event_label, log_attempt, log_held
from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.outcomes import Recorder
from hangar.webhooks.delivery.retries import outcome_of, unattempted
from hangar.webhooks.delivery.sender import AttemptResult, Sender
from hangar.webhooks.delivery.signing import envelope, headers

# How long a delivery held back for hangar's own reason (`_hold`) waits before its next try.
HELD_FOR = timedelta(minutes=1)


class Attempter:
    """Attempts deliveries for one dispatcher: `kick` wakes its loop when a retry (or a held
    delivery) comes due."""

    def __init__(
        self,
        clock: Clock,
        sender: Sender,
        open_secret: Callable[[str], str],
        recorder: Recorder[Claimed],
        kick: Callable[[], None],
    ) -> None:
        self._clock = clock
        self._sender = sender
        self._open_secret = open_secret
        self._recorder = recorder
        self._kick = kick

    async def attempt(self, delivery: Claimed) -> None:
        is_test = delivery.is_test
        if delivery.deleted or (not delivery.enabled and not is_test):
            # Disabled: skipped, and never replayed when the subscription is enabled again.
            now = self._clock.now()
            skipped = await self._recorder.write(unattempted(delivery, "skipped", completed_at=now))
            if skipped:
                DELIVERIES_FINISHED.labels(event_label(delivery.event_name), "skipped").inc()
            return
        started_at = self._clock.now()
        try:
            secret = self._open_secret(delivery.secret_encrypted)
            previous = self._previous_secret(delivery, started_at)
        except SecretUnreadable:
            await self._hold(delivery)
            return
        if delivery.attempts_made == 0:
            FIRST_ATTEMPT_DELAY.observe(max((started_at - delivery.event_at).total_seconds(), 0))
        body = envelope(delivery.event_name, started_at, delivery.data)
        sent = headers(
            delivery.event_name,
            str(delivery.id),
            secret,
            body,
            event_id=str(delivery.event_id),
            sent_at=started_at,
            previous_secret=previous,
            org_id=str(delivery.org_id),
            test=is_test,
        )
        with ATTEMPTS_IN_PROGRESS.track_inprogress():
            result = await self._sender.post(delivery.url, sent, body)
        ATTEMPTS.labels(event_label(delivery.event_name), result.outcome).inc()
        await self._record(delivery, started_at, result, counts=not is_test)

    async def _hold(self, delivery: Claimed) -> None:
        """No key this process holds opens the subscription's secret: hangar's failure, not
        the endpoint's (issue 40: one process with a wrong key disabled every tenant's
        webhooks). Nothing is sent or counted; the delivery stays pending, as it was, and is
        tried again in HELD_FOR, by whichever worker holds the right key by then."""
        now = self._clock.now()
        retry_at = now + HELD_FOR
        DELIVERIES_HELD.labels("secret_unreadable").inc()
        log_held(delivery, HELD_FOR)
        held = await self._recorder.write(
            unattempted(delivery, "pending", next_attempt_at=retry_at)
        )
        if held:
            wait = (retry_at - now).total_seconds() + 0.005
            asyncio.get_running_loop().call_later(wait, self._kick)

    def _previous_secret(self, delivery: Claimed, started_at: datetime) -> str | None:
        """The secret a rotation replaced, if its grace still runs when this attempt starts:
        decided at each attempt, so a retry or redelivery after the grace carries the new
        secret's signature alone."""
        sealed, until = delivery.previous_secret_encrypted, delivery.previous_secret_expires_at
        if sealed is None or until is None or started_at >= until:
            return None
        return self._open_secret(sealed)

    async def _record(
        self, delivery: Claimed, started_at: datetime, result: AttemptResult, *, counts: bool
    ) -> None:
        now = self._clock.now()
        outcome = outcome_of(delivery, started_at, result, now, counts=counts)
        retry = outcome.status == "pending"
        recorded = await self._recorder.write(outcome)
        log_attempt(delivery, outcome, result, now)
        if not recorded:
            return  # the lease was lost: another worker's outcome counts
        if retry:
            # Wake the loop when the retry is due: a busy loop does not look for the next
            # due time in the database (each attempt that ends wakes it anyway).
            # A few ms late rather than early: early, the claim would find it not yet due.
            assert outcome.next_attempt_at is not None
            wait = (outcome.next_attempt_at - now).total_seconds() + 0.005
            asyncio.get_running_loop().call_later(wait, self._kick)
        else:
            DELIVERIES_FINISHED.labels(event_label(delivery.event_name), outcome.status).inc()
