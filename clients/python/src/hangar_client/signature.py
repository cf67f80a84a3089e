"""Webhook signatures: checking a delivery (`verify_delivery`: both of hangar's signatures and
the time; `SeenDeliveries`: repeats), and making both signatures (`X-Service-Signature` and
the Standard Webhooks `webhook-signature`), which `hangar-client listen` puts on what it
forwards."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

ORGANIZATION_HEADER = "X-Service-Organization"
SIGNATURE_HEADER = "X-Service-Signature"
PREVIOUS_SIGNATURE_HEADER = "X-Service-Signature-Previous"
EVENT_HEADER = "X-Service-Event"
EVENT_ID_HEADER = "X-Service-Event-Id"
DELIVERY_HEADER = "X-Service-Delivery"
WEBHOOK_ID_HEADER = "webhook-id"
WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp"
WEBHOOK_SIGNATURE_HEADER = "webhook-signature"
# How far a delivery's webhook-timestamp may be from the receiver's clock, either way (the
# Standard Webhooks libraries' default).
TOLERANCE = timedelta(minutes=5)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def sign(secret: str, body: bytes) -> str:
    """The `X-Service-Signature` value: `sha256=` and the lowercase hex HMAC-SHA256 of the
    body bytes, keyed with the secret's UTF-8 bytes."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def sign_standard(secret: str, delivery_id: str, timestamp: int, body: bytes) -> str:
    """The Standard Webhooks `webhook-signature` value: `v1,` and the base64 HMAC-SHA256 of
    `id.timestamp.body`, keyed with the same bytes as `sign` (see `whsec`)."""
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def whsec(secret: str) -> str:
    """The secret in the form the Standard Webhooks libraries take: they base64-decode what
    follows `whsec_`, and so key with exactly the secret's UTF-8 bytes, as hangar does."""
    return "whsec_" + base64.b64encode(secret.encode()).decode()


def organization_of(headers: Mapping[str, str]) -> str | None:
    """The id of the organization a delivery is for (its `X-Service-Organization` header),
    for a receiver serving many: pick that organization's secret by it, then verify with
    `verify_delivery`. It is not signed itself, so trust nothing else on it before that; a
    forged one only picks a secret the signature will not match."""
    for name, value in headers.items():
        if name.lower() == ORGANIZATION_HEADER.lower():
            return value.strip() or None
    return None


def verify_signature(secret: str, raw_body: bytes, header: str | None) -> bool:
    """True when `header` is `sha256=` and the lowercase hex HMAC-SHA256 of `raw_body`,
    keyed with the subscription's secret. Pass the body bytes exactly as received (a
    re-serialised copy differs); the comparison takes constant time."""
    if header is None:
        return False
    # Bytes, not str: compare_digest refuses non-ASCII str, and a hostile header may hold some.
    return hmac.compare_digest(
        sign(secret, raw_body).encode(), header.strip().encode("utf-8", "replace")
    )


def verify_delivery(
    secret: str,
    raw_body: bytes,
    headers: Mapping[str, str],
    *,
    now: datetime | None = None,
    tolerance: timedelta = TOLERANCE,
) -> bool:
    """True when a delivery is signed with `secret`, both ways, and recently:

    - `X-Service-Signature` (or, while a rotation's grace runs, `X-Service-Signature-Previous`,
      the previous secret's) over the body, so a receiver still holding the old secret keeps
      verifying until it is given the new one;
    - and `webhook-signature` (one of its space-separated `v1,` values) over `webhook-id`,
      `webhook-timestamp` and the body, with the timestamp within `tolerance` of `now` (the
      clock's time by default). This is what refuses a copy sent again later, or under
      another id; drop repeats within the tolerance by `webhook-id` (`SeenDeliveries`).

    Header names are matched in any case, as HTTP has them. Comparisons take constant time."""
    named = {name.lower(): value for name, value in headers.items()}
    signed = verify_signature(secret, raw_body, named.get(SIGNATURE_HEADER.lower())) or (
        verify_signature(secret, raw_body, named.get(PREVIOUS_SIGNATURE_HEADER.lower()))
    )
    return signed and _signed_recently(secret, raw_body, named, now or datetime.now(UTC), tolerance)


def _signed_recently(
    secret: str, raw_body: bytes, named: Mapping[str, str], now: datetime, tolerance: timedelta
) -> bool:
    webhook_id = named.get(WEBHOOK_ID_HEADER, "")
    timestamp = named.get(WEBHOOK_TIMESTAMP_HEADER, "")
    # At most 15 digits: an int() of a hostile header's thousands of digits costs seconds.
    if not webhook_id or not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 15):
        return False
    if abs(now - (_EPOCH + timedelta(seconds=int(timestamp)))) > tolerance:
        return False
    expected = sign_standard(secret, webhook_id, int(timestamp), raw_body).encode()
    given = named.get(WEBHOOK_SIGNATURE_HEADER, "").split()
    return any(hmac.compare_digest(expected, g.encode("utf-8", "replace")) for g in given)


class SeenDeliveries:
    """The `webhook-id`s of the deliveries a receiver took, so that one coming again (a retry
    after a timeout, a Redeliver, a copy replayed within the tolerance) is answered with a 2xx
    but handled once. In memory, the newest `limit` ids: in production keep the ids where you
    keep your work (a unique key), so that a restart forgets none.

        if not verify_delivery(SECRET, raw_body, headers): answer 401
        if seen.first_time(headers): queue the work
        answer 204
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._limit = limit

    def first_time(self, headers: Mapping[str, str]) -> bool:
        """True the first time a delivery's (verified) `webhook-id` is seen, False after."""
        named = {name.lower(): value for name, value in headers.items()}
        webhook_id = named.get(WEBHOOK_ID_HEADER, "")
        if webhook_id in self._ids:
            self._ids.move_to_end(webhook_id)
            return False
        self._ids[webhook_id] = None
        if len(self._ids) > self._limit:
            self._ids.popitem(last=False)
        return True
