"""The log's record of each attempt, and of each delivery held back for hangar's own reason:
its ids as fields (JSON logs), never the URL (its user information and query may be
credentials), the secret, the signature or any body; and the metrics' `event` label."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from hangar.webhooks.delivery.claims import Claimed
from hangar.webhooks.delivery.outcomes import Outcome
from hangar.webhooks.delivery.sender import AttemptResult
from hangar.webhooks.events.catalogue import EVENT_NAMES, TEST_PING

log = logging.getLogger("hangar.webhooks")

# The metrics' `event` label: a known name, or "other" (the label's values stay bounded).
_EVENT_LABELS = frozenset((*EVENT_NAMES, TEST_PING))


def event_label(name: str) -> str:
    return name if name in _EVENT_LABELS else "other"


def log_held(delivery: Claimed, held_for: timedelta) -> None:
    """No key this process holds opens the subscription's secret: tried again in `held_for`."""
    log.error(
        "delivery %s held: its subscription's signing secret opens with neither "
        "HANGAR_SECRET_KEY nor any key in HANGAR_SECRET_KEY_PREVIOUS (was the key changed "
        "without listing the old one?); not counted against the endpoint, tried again in "
        "%d s",
        delivery.id,
        held_for.total_seconds(),
        extra={
            "delivery_id": str(delivery.id),
            "event_id": str(delivery.event_id),
            "event": delivery.event_name,
            "subscription_id": str(delivery.subscription_id),
            "outcome": "held",
            "error": "secret_unreadable",
        },
    )


def log_attempt(delivery: Claimed, outcome: Outcome, result: AttemptResult, now: datetime) -> None:
    """One record per attempt, with its ids as fields (JSON logs). Never the URL (its user
    information and query may be credentials), the secret, the signature or any body. A
    delivery that failed for good is a warning: a receiver lost an event."""
    number = outcome.attempts_made
    said = "retrying" if outcome.status == "pending" else outcome.status
    answer = f"HTTP {result.status_code}" if result.error is None else result.error
    if outcome.status == "pending" and outcome.next_attempt_at is not None:
        then = f"retrying in {(outcome.next_attempt_at - now).total_seconds():g} s"
    elif outcome.status == "failed":
        then = f"failed after {number} attempts"
    else:
        then = outcome.status
    log.log(
        logging.WARNING if outcome.status == "failed" else logging.INFO,
        "delivery %s attempt %d took %d ms: %s; %s",
        delivery.id,
        number,
        result.duration_ms,
        answer,
        then,
        extra={
            "delivery_id": str(delivery.id),
            "event_id": str(delivery.event_id),
            "event": delivery.event_name,
            "subscription_id": str(delivery.subscription_id),
            "attempt": number,
            "outcome": said,
            "status": result.status_code,
            "error": result.error,
            "duration_ms": result.duration_ms,
        },
    )
