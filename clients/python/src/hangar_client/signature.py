"""Checking a webhook delivery's `X-Service-Signature` header."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Service-Signature"
EVENT_HEADER = "X-Service-Event"
DELIVERY_HEADER = "X-Service-Delivery"


def verify_signature(secret: str, raw_body: bytes, header: str | None) -> bool:
    """True when `header` is `sha256=` and the lowercase hex HMAC-SHA256 of `raw_body`,
    keyed with the subscription's secret. Pass the body bytes exactly as received (a
    re-serialised copy differs); the comparison takes constant time."""
    if header is None:
        return False
    expected = "sha256=" + hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
    # Bytes, not str: compare_digest refuses non-ASCII str, and a hostile header may hold some.
    return hmac.compare_digest(expected.encode(), header.strip().encode("utf-8", "replace"))
