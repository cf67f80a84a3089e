"""Webhook signatures: checking a delivery's `X-Service-Signature` header, and making both of
hangar's signatures (that one and the Standard Webhooks `webhook-signature`), which
`hangar-client listen` puts on what it forwards."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

SIGNATURE_HEADER = "X-Service-Signature"
PREVIOUS_SIGNATURE_HEADER = "X-Service-Signature-Previous"
EVENT_HEADER = "X-Service-Event"
EVENT_ID_HEADER = "X-Service-Event-Id"
DELIVERY_HEADER = "X-Service-Delivery"
WEBHOOK_ID_HEADER = "webhook-id"
WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp"
WEBHOOK_SIGNATURE_HEADER = "webhook-signature"


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


def verify_delivery(secret: str, raw_body: bytes, headers: Mapping[str, str]) -> bool:
    """True when a delivery is signed with `secret`: by `X-Service-Signature`, or, while a
    rotation's grace runs, by `X-Service-Signature-Previous` (the previous secret's
    signature), so a receiver still holding the old secret keeps verifying until it is given
    the new one. Header names are matched in any case, as HTTP has them."""
    wanted = {SIGNATURE_HEADER.lower(), PREVIOUS_SIGNATURE_HEADER.lower()}
    return any(
        verify_signature(secret, raw_body, value)
        for name, value in headers.items()
        if name.lower() in wanted
    )
