"""The calendar helper's URL fetched from hangar, and the client's models held to the live
OpenAPI document's schemas (and the filters to its query parameters): a field added, renamed,
retyped or made nullable fails here."""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import date, datetime
from typing import Any

import httpx
import pytest

from hangar.reservations.models import Reservation
from hangar_client import AsyncClient, calendar_url, models
from tests.fixtures.factories import Org
from tests.fixtures.python_client import BASE


async def test_the_calendar_url_is_the_feed(
    api: AsyncClient, client: httpx.AsyncClient, org: Org, other: Org
) -> None:
    mine = await org.add(Reservation)
    theirs = await other.add(Reservation)
    url = calendar_url(BASE, org.key)
    assert url.startswith(f"{BASE}/api/v1/external/reservations.ics?token=svc_pk_")
    response = await client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/calendar")
    assert f"svc-resv-{mine['id']}@" in response.text
    assert str(theirs["id"]) not in response.text
    assert await api.calendar() == response.text


@pytest.mark.parametrize(
    ("base", "webcal", "expected"),
    [
        ("https://h.example/", False, "https://h.example/api/v1/external/reservations.ics?token="),
        ("https://h.example/sub", False, "https://h.example/sub/api/v1/external/reservations.ics"),
        ("https://h.example", True, "webcal://h.example/api/v1/external/reservations.ics?token="),
    ],
)
def test_calendar_url_forms(base: str, webcal: bool, expected: str) -> None:
    url = calendar_url(base, "svc_pk_a+b/c", webcal=webcal)
    assert url.startswith(expected)
    assert url.endswith("token=svc_pk_a%2Bb%2Fc")


# Each component schema of the OpenAPI document and the client model that reads it; the error
# bodies are read by the client's exceptions, not by a model.
MODELS: dict[str, list[type[Any]]] = {
    "Reservation": [models.Reservation],
    "ReservationPage": [models.ReservationPage],
    "Aircraft": [models.Aircraft],
    "Squawk": [models.Squawk],
    "Member": [models.Member, models.Contact],
    "MaintenanceLog": [models.MaintenanceLog],
    "WorkOrder": [models.WorkOrder],
    "KeyOrganization": [models.KeyOrganization],
    "CallingKey": [models.CallingKey],
}
# The events API's schemas are checked against the client's models in test_events_api.py.
NOT_MODELS = {"ErrorBody", "ValidationErrorBody", "LoggedEvent", "EventPage"}
SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    float: {"type": "number"},
    datetime: {"type": "string", "format": "date-time"},
    date: {"type": "string", "format": "date"},
}


def described(hint: Any) -> dict[str, Any]:
    """A Python type as the JSON Schema fragment that should describe it."""
    if hint in SCALARS:
        return SCALARS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return {"type": "string", "enum": sorted(args)}
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in args if arg is not type(None)]
        return {**described(inner), "nullable": True}
    if origin is tuple:
        return {
            "type": "array",
            "items": described(args[0])["type"] if args[0] in SCALARS else args[0].__name__,
        }
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return {"$ref": hint.__name__}
    raise AssertionError(f"no description for {hint!r}")


def published(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI property in the same terms (titles and descriptions aside)."""
    if "$ref" in schema:
        return {"$ref": schema["$ref"].rsplit("/", 1)[-1]}
    options = schema.get("anyOf", [schema])
    found = [o for o in options if o.get("type") != "null"]
    assert len(found) == 1, schema
    (only,) = found
    shape: dict[str, Any] = {"type": only["type"]}
    for key in ("format", "enum"):
        if key in only:
            shape[key] = sorted(only[key]) if key == "enum" else only[key]
    if "items" in only:
        items = only["items"]
        shape["items"] = items["$ref"].rsplit("/", 1)[-1] if "$ref" in items else items["type"]
    return {**shape, "nullable": True} if len(options) > 1 else shape


def answered(node: Any, schemas: dict[str, Any]) -> set[str]:
    """The schemas `node` refers to, following each reference to the end."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and (name := ref.rsplit("/", 1)[-1]) not in found:
                found.add(name)
                stack.append(schemas[name])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def model_side(classes: list[type[Any]]) -> tuple[dict[str, Any], set[str]]:
    """Properties and required names as the client's models declare them. A nested model
    (Member.contact) stands for keys that may be absent."""
    props: dict[str, Any] = {}
    required: set[str] = set()
    for position, cls in enumerate(classes):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("off_wire"):
                continue
            props[f.name] = described(hints[f.name])
            if position == 0 and f.default is dataclasses.MISSING:
                required.add(f.name)
    return props, required


async def test_the_models_match_the_live_openapi_schemas(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/external/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    schemas = doc["components"]["schemas"]
    # A new resource needs a model (the webhooks' bodies are the events module's).
    assert answered(doc["paths"], schemas) == set(MODELS) | NOT_MODELS
    for name, classes in MODELS.items():
        props, required = model_side(classes)
        schema = schemas[name]
        assert props == {k: published(v) for k, v in schema["properties"].items()}, name
        assert required == set(schema.get("required", [])), name


# Each filtered operation and the TypedDict of its filters (the client methods' `**filters`),
# with the query parameters that are not filters.
FILTERS: dict[str, tuple[Any, set[str]]] = {
    "/api/v1/external/reservations": (models.ReservationFilters, {"limit", "after"}),
    "/api/v1/external/squawks": (models.SquawkFilters, set()),
}


async def test_the_filters_match_the_live_openapi_parameters(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/external/openapi.json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path, (filters, paging) in FILTERS.items():
        parameters = {p["name"]: p for p in paths[path]["get"]["parameters"]}
        assert all(p["in"] == "query" and not p.get("required") for p in parameters.values())
        assert set(parameters) == set(filters.__optional_keys__) | paging, path
        for name, hint in typing.get_type_hints(filters).items():
            assert described(hint) == published(parameters[name]["schema"]), (path, name)
