"""What one attempt's result means for its delivery: succeeded, retried (after 2 s, then
8 s: three attempts a series), or failed, as the spec's retry policy says. A redelivery starts
a new series: its own three attempts and waits, numbered on from the last."""

from __future__ import annotations

from datetime import datetime, timedelta

from hangar.foundation.ids import new_id
from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.outcomes import Outcome
from hangar.webhooks.delivery.sender import AttemptResult
from hangar.webhooks.delivery.signing import without_signatures
from hangar.webhooks.models import DeliveryStatus

MAX_ATTEMPTS = 3
# The wait before attempt 2 and before attempt 3.
RETRY_WAITS = (timedelta(seconds=2), timedelta(seconds=8))


def outcome_of(
    delivery: Claimed, started_at: datetime, result: AttemptResult, now: datetime, *, counts: bool
) -> Outcome:
    """The delivery's state after this attempt, and the attempt's record. `counts`: whether
    it counts toward the subscription's consecutive failures (a Test does not)."""
    number = delivery.attempts_made + 1
    in_series = number - delivery.series_from
    retry = not result.succeeded and in_series < MAX_ATTEMPTS
    sent = result.request_headers
    return Outcome(
        delivery_id=delivery.id,
        subscription_id=delivery.subscription_id,
        lease_until=delivery.lease_until,
        status="succeeded" if result.succeeded else "pending" if retry else "failed",
        attempts_made=number,
        next_attempt_at=now + RETRY_WAITS[in_series - 1] if retry else None,
        completed_at=None if retry else now,
        attempt={
            "id": new_id(),
            "delivery_id": delivery.id,
            "number": number,
            "started_at": started_at,
            "duration_ms": result.duration_ms,
            "status_code": result.status_code,
            "error": result.error,
            "response_body": result.response_body,
            "outcome": result.kind,
            "outcome_detail": result.detail,
            "request_headers": None if sent is None else without_signatures(sent),
            "response_reason": result.reason,
            "response_headers": _pairs(result.response_headers),
        },
        counts=None if not counts or retry else "success" if result.succeeded else "failure",
    )


def _pairs(headers: list[tuple[str, str]] | None) -> list[list[str]] | None:
    return None if headers is None else [[name, value] for name, value in headers]


def unattempted(
    delivery: Claimed,
    status: DeliveryStatus,
    *,
    next_attempt_at: datetime | None = None,
    completed_at: datetime | None = None,
) -> Outcome:
    """The outcome of a delivery nothing was sent for (skipped, or held): its attempts and its
    subscription's run of failures as they were."""
    return Outcome(
        delivery_id=delivery.id,
        subscription_id=delivery.subscription_id,
        lease_until=delivery.lease_until,
        status=status,
        attempts_made=delivery.attempts_made,
        next_attempt_at=next_attempt_at,
        completed_at=completed_at,
        attempt=None,
        counts=None,
    )
