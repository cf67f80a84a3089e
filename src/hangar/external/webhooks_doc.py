"""The OpenAPI 3.1 `webhooks` section: one POST per event as hangar delivers it, its body the
event's schema (the same as GET /docs/events/{event}.schema.json serves, here among the
components) and the headers every delivery carries (webhooks/delivery/signing.py), so generators
make receiver types from the same document as the client's.
"""

from __future__ import annotations

from typing import Any

from hangar.external.tags import EVENTS
from hangar.webhooks.delivery.retries import MAX_ATTEMPTS, RETRY_WAITS
from hangar.webhooks.delivery.sender import TIMEOUT_SECONDS
from hangar.webhooks.delivery.signing import USER_AGENT
from hangar.webhooks.events import event_schemas as schemas

_SCHEMAS = "#/components/schemas/"
_PARAMETERS = "#/components/parameters/"


def _header(name: str, description: str, schema: dict[str, Any], *, required: bool) -> Any:
    return {
        "name": name,
        "in": "header",
        "required": required,
        "description": description,
        "schema": {"type": "string", **schema},
    }


# By their components' names. X-Service-Event is each webhook's own (its value is the name).
HEADERS: dict[str, dict[str, Any]] = {
    "UserAgent": _header(
        "User-Agent", f"`{USER_AGENT}`", {"examples": [USER_AGENT]}, required=True
    ),
    "ServiceSignature": _header(
        "X-Service-Signature",
        "`sha256=` and the lowercase hex HMAC-SHA256 of the raw body, keyed with the "
        "subscription's secret. Hash the bytes as received and compare in constant time.",
        {"pattern": "^sha256=[0-9a-f]{64}$"},
        required=True,
    ),
    "ServiceSignaturePrevious": _header(
        "X-Service-Signature-Previous",
        "The same signature made with the secret a rotation replaced; sent only while the "
        "rotation's grace lasts, so a receiver still holding the old secret keeps verifying.",
        {"pattern": "^sha256=[0-9a-f]{64}$"},
        required=False,
    ),
    "ServiceDelivery": _header(
        "X-Service-Delivery",
        "The delivery's id, the same on each of its attempts (equal to `webhook-id`): drop a "
        "retried delivery by it.",
        {},
        required=True,
    ),
    "ServiceEventId": _header(
        "X-Service-Event-Id",
        "The event's id, the same in every subscription's delivery of it and in the events "
        "API: drop duplicates by it.",
        {},
        required=True,
    ),
    "ServiceOrganization": _header(
        "X-Service-Organization",
        "The id of the organization the delivery is for: a partner serving many "
        "organizations routes by it before choosing the secret to verify with.",
        {},
        required=True,
    ),
    "ServiceTest": _header(
        "X-Service-Test",
        "`true` on a delivery of the Test action (test.ping, or a sample of a named event); "
        "absent on real deliveries.",
        {"enum": ["true"]},
        required=False,
    ),
    "WebhookId": _header(
        "webhook-id",
        "Standard Webhooks: the delivery's id (equal to `X-Service-Delivery`).",
        {},
        required=True,
    ),
    "WebhookTimestamp": _header(
        "webhook-timestamp",
        "Standard Webhooks: the attempt's unix time in whole seconds; reject a stale one.",
        {"pattern": "^[0-9]+$"},
        required=True,
    ),
    "WebhookSignature": _header(
        "webhook-signature",
        "Standard Webhooks: space-separated `v1,` and the base64 HMAC-SHA256 of "
        "`{webhook-id}.{webhook-timestamp}.{body}`, the current secret's first (during a "
        "rotation's grace the previous secret's follows).",
        {"pattern": "^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$"},
        required=True,
    ),
}

_waits = " and ".join(f"{int(wait.total_seconds())} s" for wait in RETRY_WAITS)
_ACCEPTED = (
    "Accepted: any 2xx ends the delivery. The body is not read beyond its first 2 KB, kept "
    "in the delivery log."
)
_FAILED = (
    f"Any other status, a redirect (never followed) or no answer within "
    f"{TIMEOUT_SECONDS:g} s is a failed attempt: it is retried, {MAX_ATTEMPTS} attempts in "
    f"all, after waits of {_waits}; then the delivery has failed (Redeliver sends it again). "
    "Five failed deliveries in a row disable the subscription."
)


def _webhook(event: str) -> dict[str, Any]:
    name = schemas.event_schema_name(event)
    fires_when = schemas.FIRES_WHEN[event]
    return {
        "post": {
            "operationId": "receive_" + event.replace(".", "_"),
            "summary": event,
            "description": f"{fires_when}\n\nSigned with both schemes (see the headers); "
            "deliveries are not ordered and may arrive more than once.",
            "tags": [EVENTS],
            # No scheme of the API's: the receiver authenticates hangar by the signatures.
            "security": [],
            "parameters": [
                _header(
                    "X-Service-Event",
                    "The event's name, equal to the body's `event`",
                    {"const": event},
                    required=True,
                ),
                *({"$ref": _PARAMETERS + key} for key in HEADERS),
            ],
            "requestBody": {
                "required": True,
                "description": f"The {event} envelope",
                "content": {"application/json": {"schema": {"$ref": _SCHEMAS + name}}},
            },
            "responses": {
                "2XX": {"description": _ACCEPTED},
                "default": {"description": _FAILED},
            },
        }
    }


def add_webhooks(doc: dict[str, Any]) -> None:
    """Adds the `webhooks` section, and the schemas and headers it refers to, to `doc`."""
    components = doc.setdefault("components", {})
    components.setdefault("schemas", {}).update(schemas.openapi_schemas())
    components.setdefault("parameters", {}).update(HEADERS)
    doc["webhooks"] = {event: _webhook(event) for event in schemas.SCHEMA_EVENTS}
