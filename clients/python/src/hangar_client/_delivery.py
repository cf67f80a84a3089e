"""One webhook delivery as hangar sends it (body and headers), rebuilt on this side from an
item of the events API: what `hangar-client listen` posts, so that a receiver's own
verification code runs unchanged."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hangar_client import signature

USER_AGENT = "Service-Webhooks/1.0"
# hangar's delivery rules: 3 attempts, waiting 2 s after the first failure and 8 s after the
# second, each with a 10-second timeout; any 2xx is a success, a redirect is not followed.
RETRY_WAITS = (2.0, 8.0)
ATTEMPT_TIMEOUT = 10.0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def new_secret() -> str:
    """A signing secret like a subscription's: 64 lowercase hex characters."""
    return secrets.token_hex(32)


def unix_seconds(moment: datetime) -> int:
    """`webhook-timestamp`: whole seconds, rounded down in integers (a float timestamp can
    round a last microsecond up into the next second)."""
    return (moment - _EPOCH) // timedelta(seconds=1)


def envelope(event: str, delivered_at: datetime, data: Mapping[str, Any]) -> bytes:
    """`{event, delivered_at, data}` as compact JSON, `delivered_at` in UTC with microseconds
    and Z, as hangar writes it."""
    stamp = delivered_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body = {"event": event, "delivered_at": stamp, "data": data}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def headers(
    *, event: str, event_id: str, delivery_id: str, secret: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """Every header of a hangar delivery: the contract's, the event id, and the Standard
    Webhooks three (`timestamp`: unix seconds of this attempt)."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signature.EVENT_HEADER: event,
        signature.EVENT_ID_HEADER: event_id,
        signature.DELIVERY_HEADER: delivery_id,
        signature.SIGNATURE_HEADER: signature.sign(secret, body),
        signature.WEBHOOK_ID_HEADER: delivery_id,
        signature.WEBHOOK_TIMESTAMP_HEADER: str(timestamp),
        signature.WEBHOOK_SIGNATURE_HEADER: signature.sign_standard(
            secret, delivery_id, timestamp, body
        ),
    }
