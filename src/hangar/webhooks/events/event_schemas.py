"""JSON Schema (draft 2020-12) of each event's delivery body: the envelope and its `data`.

Made from the catalogue's TypedDicts (webhooks/events/catalogue.py), the types the builders are
checked against, so a field added to a payload is in its schema the moment it is sent. What a
TypedDict cannot say, the spec's Event catalogue does, and is added here: dates are
`YYYY-MM-DD`, the closed vocabularies, the constants (squawk.escalated's severity,
aircraft.reactivated's is_active). The envelope is the one signing.envelope writes.

No schema is closed: receivers must ignore keys they do not know (service-spec.md,
Versioning), so `additionalProperties` is never false, and a new field breaks no validator
or generated type.

Each event has two named schemas, `<Name>Event` (the body) and `<Name>Data` (its `data`):
the names the OpenAPI description's components carry, which generated types are named by,
so they do not change.
"""

from __future__ import annotations

import re
import types
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from hangar.webhooks.events import catalogue as c

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Where each event's schema is served, under the deployment's public URL.
INDEX_PATH = "/docs/events.json"
SCHEMA_PATH = "/docs/events/{event}.schema.json"

Schema = dict[str, Any]

# When each event fires, as the spec's Event catalogue says it (and /docs shows it).
FIRES_WHEN: dict[str, str] = {
    c.SQUAWK_CREATED: "A member or instructor reports a discrepancy against an aircraft.",
    c.SQUAWK_RESOLVED: "A squawk moves into resolved from any other status.",
    c.SQUAWK_ESCALATED: "An existing squawk is escalated to grounding severity.",
    c.RESERVATION_CREATED: "Any reservation is created, in whatever state.",
    c.RESERVATION_CONFIRMED: "A new reservation lands in confirmed; fires alongside "
    "reservation.created, with identical data.",
    c.RESERVATION_CANCELLED: "A reservation is cancelled by a member or staff. There is no "
    "status field.",
    c.RESERVATION_CHECKED_IN: "A pilot completes pre-flight check-in.",
    c.RESERVATION_COMPLETED: "A pilot completes checkout at the end of the flight.",
    c.FLIGHT_SESSION_COMPLETED: "The same checkout, fired right after reservation.completed; "
    "its data is byte-identical.",
    c.AIRCRAFT_GROUNDED: "An admin deactivates an aircraft (reason admin_deactivate), or the "
    "MEL-expiry job grounds it (reason mel_expired: only id, tail_number and reason). Only id "
    "and reason are always present: branch on reason.",
    c.AIRCRAFT_REACTIVATED: "An aircraft is returned to service. There is no reason field.",
    c.MEL_CREATED: "A maintenance item is deferred onto the Minimum Equipment List.",
    c.MEL_EXPIRED: "A scheduled job finds a deferred MEL item past its due date; when it grounds "
    "the aircraft, aircraft.grounded with reason mel_expired follows.",
    c.TEST_PING: "The Test action of a subscription: sent to it whatever its event list, "
    "signed like a real delivery, with the header X-Service-Test: true.",
}

# Each event's `data`, as its builder in the catalogue is typed; a union is one schema per
# member (oneOf), told apart by a Literal field.
DATA_TYPES: dict[str, Any] = {
    c.SQUAWK_CREATED: c.SquawkCreated,
    c.SQUAWK_RESOLVED: c.SquawkResolved,
    c.SQUAWK_ESCALATED: c.SquawkData,
    c.RESERVATION_CREATED: c.ReservationCreated,
    c.RESERVATION_CONFIRMED: c.ReservationCreated,
    c.RESERVATION_CANCELLED: c.ReservationCancelled,
    c.RESERVATION_CHECKED_IN: c.ReservationCheckedIn,
    c.RESERVATION_COMPLETED: c.ReservationCompleted,
    c.FLIGHT_SESSION_COMPLETED: c.ReservationCompleted,
    c.AIRCRAFT_GROUNDED: c.AircraftGrounded | c.AircraftGroundedByJob,
    c.AIRCRAFT_REACTIVATED: c.AircraftState,
    c.MEL_CREATED: c.MelCreated,
    c.MEL_EXPIRED: c.MelExpired,
    c.TEST_PING: c.Ping,
}
# The 13 events and the Test action's own.
SCHEMA_EVENTS: tuple[str, ...] = (*c.EVENT_NAMES, c.TEST_PING)

# The spec's closed vocabularies, by field name (the features' Literals; a test keeps them
# equal, as this layer cannot import those features).
VOCABULARIES: dict[str, tuple[str, ...]] = {
    "severity": ("minor", "major", "grounding"),
    "status": ("confirmed", "standby", "completed", "cancelled", "no_show", "expired"),
    "activity_type": ("dual_training", "solo", "ground", "checkride", "flight_review", "checkout"),
    "mel_category": ("a", "b", "c", "d"),
}
DATES = frozenset(("deferral_date", "due_date"))
# Values one event always sends.
CONSTANTS: dict[str, dict[str, Any]] = {
    c.SQUAWK_ESCALATED: {"severity": "grounding"},
    c.AIRCRAFT_GROUNDED: {"is_active": False},
    c.AIRCRAFT_REACTIVATED: {"is_active": True},
}

# What each field holds, for people and for the comments of generated types.
FIELDS: dict[str, str] = {
    "id": "The id of the record the event concerns (the squawk, reservation, aircraft or MEL item)",
    "aircraft_id": "The aircraft's id",
    "pilot_id": "The pilot's user id",
    "instructor_id": "The instructor's user id; null when the reservation has no instructor",
    "description": "What was reported",
    "severity": "minor, major or grounding",
    "is_grounding": "Whether the squawk grounds the aircraft",
    "reported_by": "The id of the user who reported it",
    "created_at": "When it was reported",
    "resolved_by": "The id of the user who resolved it",
    "resolved_at": "When it was resolved",
    "start_time": "When the reservation starts",
    "end_time": "When the reservation ends",
    "activity_type": "What the aircraft is booked for",
    "status": "The reservation's status when it was created",
    "is_backup": "Whether the reservation is a backup (standby) booking",
    "cancellation_reason": "Why it was cancelled, as given (may be empty)",
    "checked_in_at": "When the pilot checked in",
    "forced": "True when the check-in overrode a blocking issue",
    "checkout_completed_at": "When checkout was completed",
    "hobbs_out": "Hobbs meter reading at the start of the flight, in hours",
    "hobbs_in": "Hobbs meter reading at the end of the flight, in hours",
    "tail_number": "The aircraft's registration",
    "aircraft_type": "The aircraft's make and model",
    "is_active": "Whether the aircraft is in service",
    "reason": "Why the aircraft was grounded: admin_deactivate or mel_expired",
    "item_description": "The deferred item",
    "mel_category": "The MEL category: a, b, c or d",
    "deferral_date": "When the item was deferred (YYYY-MM-DD)",
    "due_date": "When the deferral runs out (YYYY-MM-DD)",
    "auto_grounded": "Whether the expiry grounded the aircraft",
    "message": "A human sentence; nothing to act on",
}
_TIMESTAMP = "ISO 8601 in UTC, ending in Z"


def schema_name(event: str) -> str:
    """`reservation.checked_in` → `ReservationCheckedIn`: the stem of its schemas' names."""
    return "".join(part.capitalize() for part in re.split(r"[._]", event))


def event_schema_name(event: str) -> str:
    return schema_name(event) + "Event"


def data_schema_name(event: str) -> str:
    return schema_name(event) + "Data"


def schema_url(public_url: str, event: str) -> str:
    return public_url.rstrip("/") + SCHEMA_PATH.format(event=event)


def _nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _type_schema(annotation: Any, field: str) -> Schema:
    """The JSON Schema of one TypedDict field's type. Only the types the catalogue uses are
    known: a new one fails here (and in the tests), not silently as `{}`."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(get_args(annotation)) == 2:
            return _nullable(_type_schema(members[0], field))
    if origin is Literal:
        values = get_args(annotation)
        return {"type": "string", "const": values[0]} if len(values) == 1 else {"enum": values}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is float:
        return {"type": "number"}
    if annotation is datetime:
        return {"type": "string", "format": "date-time"}
    if annotation is str:
        if field in DATES:
            return {"type": "string", "format": "date"}
        if field in VOCABULARIES:
            return {"type": "string", "enum": list(VOCABULARIES[field])}
        return {"type": "string"}
    raise TypeError(f"no JSON Schema for {field}: {annotation!r}")


def _describe(schema: Schema, field: str) -> Schema:
    text = FIELDS.get(field, "")
    if "date-time" in (s.get("format") for s in [schema, *schema.get("anyOf", [])]):
        text = f"{text} ({_TIMESTAMP})" if text else _TIMESTAMP
    return {**schema, "description": text} if text else schema


def _object_schema(typed: Any, event: str, title: str, description: str) -> Schema:
    hints = get_type_hints(typed)
    constants = CONSTANTS.get(event, {})
    properties: Schema = {}
    for field, annotation in hints.items():
        if field in constants:
            value = constants[field]
            kind = "boolean" if isinstance(value, bool) else "string"
            prop: Schema = {"type": kind, "const": value}
        else:
            prop = _type_schema(annotation, field)
        properties[field] = _describe(prop, field)
    return {
        "title": title,
        "description": description,
        "type": "object",
        "properties": properties,
        "required": [f for f in hints if f in typed.__required_keys__],
    }


def _literal(typed: Any) -> str:
    """The value of the Literal field that tells a union's member apart (aircraft.grounded's
    `reason`)."""
    for annotation in get_type_hints(typed).values():
        if get_origin(annotation) is Literal:
            return str(get_args(annotation)[0])
    raise TypeError(f"{typed!r} has no Literal field to tell it apart by")


def _variant_name(event: str, typed: Any) -> str:
    return schema_name(event) + schema_name(_literal(typed)) + "Data"


def named_schemas(event: str, ref_prefix: str) -> dict[str, Schema]:
    """Every named schema of `event`'s body, the body's first, each `$ref` starting with
    `ref_prefix` (`#/$defs/` in the served file, `#/components/schemas/` in OpenAPI)."""
    typed = DATA_TYPES[event]
    data_name = data_schema_name(event)
    data_doc = f"The data of {event}"
    found: dict[str, Schema] = {}
    variants = list(get_args(typed)) if get_origin(typed) is types.UnionType else []
    if variants:
        names = [_variant_name(event, t) for t in variants]
        data: Schema = {
            "title": data_name,
            "description": f"{data_doc}: one shape per reason",
            "oneOf": [{"$ref": ref_prefix + name} for name in names],
        }
        members = {
            name: _object_schema(t, event, name, f"{data_doc} when reason is {_literal(t)}")
            for name, t in zip(names, variants, strict=True)
        }
    else:
        data, members = _object_schema(typed, event, data_name, data_doc), {}
    body_name = event_schema_name(event)
    found[body_name] = {
        "title": body_name,
        "description": FIRES_WHEN[event],
        "type": "object",
        "properties": {
            "event": {"type": "string", "const": event, "description": "The event's name"},
            "delivered_at": {
                "type": "string",
                "format": "date-time",
                "description": "When this attempt was sent, with microseconds ("
                + _TIMESTAMP
                + "); the same second as the webhook-timestamp header",
            },
            "data": {"$ref": ref_prefix + data_name},
        },
        "required": ["event", "delivered_at", "data"],
    }
    found[data_name] = data
    found.update(members)
    return found


def event_schema(event: str, public_url: str) -> Schema:
    """The document served at SCHEMA_PATH: the body's schema, the rest under `$defs`."""
    body_name, *_ = named = named_schemas(event, "#/$defs/")
    body = named.pop(body_name)
    return {
        "$schema": DIALECT,
        "$id": schema_url(public_url, event),
        **body,
        "$defs": named,
    }


def openapi_schemas() -> dict[str, Schema]:
    """Every event's named schemas, for the OpenAPI description's components."""
    found: dict[str, Schema] = {}
    for event in SCHEMA_EVENTS:
        found.update(named_schemas(event, "#/components/schemas/"))
    return found


def index(public_url: str) -> Schema:
    """What INDEX_PATH serves: each event's name, when it fires and its schema's URL."""

    def entry(event: str) -> Schema:
        return {
            "name": event,
            "description": FIRES_WHEN[event],
            "schema_url": schema_url(public_url, event),
        }

    return {
        "events": [entry(event) for event in c.EVENT_NAMES],
        "test_events": [entry(c.TEST_PING)],
    }
