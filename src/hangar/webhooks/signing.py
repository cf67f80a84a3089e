"""What goes on the wire: the envelope bytes and their signature."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import orjson

USER_AGENT = "Service-Webhooks/1.0"


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


def headers(event: str, delivery_id: str, secret: str, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Service-Event": event,
        "X-Service-Signature": signature(secret, body),
        "X-Service-Delivery": delivery_id,
    }
