"""What goes on the wire: the envelope bytes and their signatures.

Two signatures over the same body, keyed with the same secret's UTF-8 bytes: the contract's
`X-Service-Signature` (the body alone), and Standard Webhooks' `webhook-signature` (the
delivery id and the attempt's unix second before the body), which the official verifiers in
many languages check, rejecting a stale timestamp: replay protection the first cannot give.

During a rotation's grace the previous secret signs too, so a receiver that still holds it
verifies every delivery until it switches: `X-Service-Signature-Previous` beside the
contract's header, and a second `v1,` signature in `webhook-signature`, which Standard
Webhooks lets hold several (space-separated) for exactly this.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

import orjson

USER_AGENT = "Service-Webhooks/1.0"
# The headers that hold a signature, lowercase. Never stored: a stored signature is a delivery
# anyone who reads the database (or a backup) could send again.
SIGNATURE_HEADERS = frozenset(
    ("x-service-signature", "x-service-signature-previous", "webhook-signature")
)
# What the delivery log shows in their place.
NOT_KEPT = "(computed when sent; not kept)"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def signature(secret: str, body: bytes) -> str:
    """`sha256=` and the lowercase hex HMAC-SHA256 of the exact body bytes."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def envelope(event: str, delivered_at: datetime, data: str) -> bytes:
    """{event, delivered_at, data}, with `data` spliced in as stored: serialized once, ever."""
    stamp = delivered_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return b"".join(
        (
            b'{"event":',
            orjson.dumps(event),
            b',"delivered_at":"',
            stamp.encode(),
            b'","data":',
            data.encode(),
            b"}",
        )
    )


def without_signatures(headers: Iterable[Sequence[str]]) -> list[list[str]]:
    """`headers` ([name, value] pairs) as kept and shown: each signature's value replaced by
    NOT_KEPT. The log shows what went out, and a signature can be made again from the secret
    (Redeliver signs when it sends), so nothing is lost by not keeping it."""
    return [[n, NOT_KEPT if n.lower() in SIGNATURE_HEADERS else v] for n, v in headers]


def unix_seconds(moment: datetime) -> int:
    """Whole seconds since the epoch, rounded down as the verifiers do (exact integer
    arithmetic: no float in between)."""
    return (moment - _EPOCH) // timedelta(seconds=1)


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks' `v1,` and the base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


TEST_HEADER = "X-Service-Test"


def headers(
    event: str,
    delivery_id: str,
    secret: str,
    body: bytes,
    *,
    event_id: str,
    sent_at: datetime,
    previous_secret: str | None = None,
    org_id: str | None = None,
    test: bool = False,
) -> dict[str, str]:
    """Every delivery's headers. `sent_at` is the instant the envelope's `delivered_at` says
    (each attempt's own), so the signed timestamp and the body agree. `previous_secret` is
    the one a rotation replaced, while its grace lasts: it signs beside `secret`. `org_id`,
    the organization the delivery is for (the dispatcher always gives it): a partner serving
    many organizations routes by it, before choosing the secret to verify with. `test`: a
    delivery of the Test action (test.ping or a sample), marked so a receiver can tell it
    from the real thing."""
    timestamp = unix_seconds(sent_at)
    signatures = [standard_signature(secret, delivery_id, timestamp, body)]
    sent = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event,
        "X-Service-Signature": signature(secret, body),
    }
    if previous_secret is not None:
        sent["X-Service-Signature-Previous"] = signature(previous_secret, body)
        signatures.append(standard_signature(previous_secret, delivery_id, timestamp, body))
    return {
        **sent,
        "X-Service-Delivery": delivery_id,
        # The id the events API lists it under: a consumer of both drops duplicates by it.
        "X-Service-Event-Id": event_id,
        **({"X-Service-Organization": org_id} if org_id is not None else {}),
        **({TEST_HEADER: "true"} if test else {}),
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        # The new secret's first: a verifier tries each in turn.
        "webhook-signature": " ".join(signatures),
    }
