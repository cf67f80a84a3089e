"""GET /api/v1/external/openapi.json"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

URL = "/api/v1/external/openapi.json"
P = "/api/v1/external"
SCOPE = {
    f"{P}/reservations": "read:reservations",
    f"{P}/reservations.ics": "read:reservations",
    f"{P}/aircraft": "read:aircraft",
    f"{P}/squawks": "read:squawks",
    f"{P}/members": "read:members",
    f"{P}/maintenance-logs": "read:maintenance",
    f"{P}/work-orders": "read:maintenance",
    f"{P}/events": "read:events",
    f"{P}/organization": None,  # any valid key
}
# The names generated clients give the operations: a rename breaks every client, so it must be
# a deliberate change to this table.
OPERATION_IDS = {
    f"{P}/reservations": "list_reservations",
    f"{P}/reservations.ics": "get_reservations_calendar",
    f"{P}/aircraft": "list_aircraft",
    f"{P}/squawks": "list_squawks",
    f"{P}/members": "list_members",
    f"{P}/maintenance-logs": "list_maintenance_logs",
    f"{P}/work-orders": "list_work_orders",
    f"{P}/events": "list_events",
    f"{P}/organization": "get_organization",
}
TAG = {
    f"{P}/reservations": "reservations",
    f"{P}/reservations.ics": "reservations",
    f"{P}/aircraft": "fleet",
    f"{P}/squawks": "squawks",
    f"{P}/members": "members",
    f"{P}/maintenance-logs": "maintenance",
    f"{P}/work-orders": "maintenance",
    f"{P}/events": "events",
    f"{P}/organization": "organization",
}
ERROR_CODES = {
    "400": "INVALID_CURSOR",
    "410": "CURSOR_EXPIRED",
    "401": "UNAUTHORIZED",
    "403": "INSUFFICIENT_SCOPE",
    "422": "VALIDATION_ERROR",
    "429": "RATE_LIMITED",
    "503": "SERVICE_UNAVAILABLE",
}
PARAMETERS = {
    f"{P}/reservations": {
        "limit",
        "after",
        "aircraft_id",
        "pilot_id",
        "status",
        "start_after",
        "start_before",
    },
    f"{P}/reservations.ics": {"token"},
    f"{P}/aircraft": set(),
    f"{P}/squawks": {"status", "aircraft_id", "is_grounding"},
    f"{P}/members": set(),
    f"{P}/maintenance-logs": {"aircraft_id"},
    f"{P}/work-orders": {"status"},
    f"{P}/events": {"limit", "after", "event", "created_after"},
    f"{P}/organization": set(),
}


@pytest.fixture
async def doc(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get(URL)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    return body


def walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def params_of(doc: dict[str, Any], path: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in doc["paths"][path]["get"].get("parameters", [])}


def enum_of(schema: dict[str, Any]) -> set[str]:
    return {v for key, value in walk(schema) if key == "enum" for v in value}


def types_of(schema: dict[str, Any]) -> set[str]:
    return {value for key, value in walk(schema) if key == "type" and isinstance(value, str)}


async def test_is_served_without_authentication(client: httpx.AsyncClient) -> None:
    assert (await client.get(URL)).status_code == 200
    bad_key = await client.get(URL, headers={"Authorization": "Bearer svc_pk_nope"})
    assert bad_key.status_code == 200


async def test_version_and_openapi_level(doc: dict[str, Any]) -> None:
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["version"] == "1.5.0"
    assert doc["info"]["title"]


async def test_exactly_the_nine_get_operations(doc: dict[str, Any]) -> None:
    assert set(doc["paths"]) == set(SCOPE)
    for path, item in doc["paths"].items():
        assert set(item) - {"summary", "description", "parameters"} == {"get"}, path


async def test_each_operation_names_its_scope(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    for path, scope in SCOPE.items():
        op = doc["paths"][path]["get"]
        assert op.get("x-required-scope") == scope, path
        [requirement] = op["security"]
        [(scheme, scopes)] = requirement.items()
        assert scheme in schemes, path
        # An empty list: any valid key meets the requirement (OpenAPI 3.1, Security
        # Requirement Object).
        assert scopes == ([] if scope is None else [scope]), path


async def test_security_schemes(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    bearer = [s for s in schemes.values() if s.get("type") == "http"]
    assert [s["scheme"].lower() for s in bearer] == ["bearer"]
    feed_scheme = next(iter(doc["paths"][f"{P}/reservations.ics"]["get"]["security"][0]))
    assert schemes[feed_scheme]["type"] == "apiKey"
    assert schemes[feed_scheme]["in"] == "query"
    assert schemes[feed_scheme]["name"] == "token"
    for path in SCOPE:
        if path != f"{P}/reservations.ics":
            scheme = next(iter(doc["paths"][path]["get"]["security"][0]))
            assert schemes[scheme]["type"] == "http"
            assert schemes[scheme]["scheme"].lower() == "bearer"


async def test_the_parameters_each_operation_accepts(doc: dict[str, Any]) -> None:
    for path, names in PARAMETERS.items():
        params = params_of(doc, path)
        assert set(params) == names, path
        assert all(p["in"] == "query" for p in params.values()), path
        required = {n for n, p in params.items() if p.get("required")}
        assert required == ({"token"} if path.endswith(".ics") else set()), path


async def test_parameter_types_and_vocabularies(doc: dict[str, Any]) -> None:
    reservations = params_of(doc, f"{P}/reservations")
    limit = reservations["limit"]["schema"]
    assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
        "integer",
        1,
        500,
        100,
    )
    assert enum_of(reservations["status"]["schema"]) == {
        "confirmed",
        "standby",
        "completed",
        "cancelled",
        "no_show",
        "expired",
    }
    for name in ("start_after", "start_before"):
        assert "date-time" in {v for k, v in walk(reservations[name]["schema"]) if k == "format"}
    squawks = params_of(doc, f"{P}/squawks")
    assert enum_of(squawks["status"]["schema"]) == {"open", "in_progress", "resolved", "deferred"}
    assert "boolean" in types_of(squawks["is_grounding"]["schema"])
    work_orders = params_of(doc, f"{P}/work-orders")
    assert enum_of(work_orders["status"]["schema"]) == {
        "open",
        "in_progress",
        "completed",
        "cancelled",
    }
    assert types_of(params_of(doc, f"{P}/reservations.ics")["token"]["schema"]) == {"string"}


async def test_no_closed_schemas_anywhere(doc: dict[str, Any]) -> None:
    closed = [value for key, value in walk(doc) if key == "additionalProperties"]
    assert False not in closed
    assert '"additionalProperties":false' not in str(doc).replace(" ", "").replace("'", '"')


async def test_describes_only_the_public_api(doc: dict[str, Any]) -> None:
    text = str(doc)
    for private in ("/api/session", "/api/orgs", "/api/health", "openapi.json"):
        assert private not in text


async def test_the_feed_returns_a_calendar(doc: dict[str, Any]) -> None:
    ok = doc["paths"][f"{P}/reservations.ics"]["get"]["responses"]["200"]
    assert set(ok["content"]) == {"text/calendar"}


async def test_error_statuses_are_declared(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        declared = set(item["get"]["responses"])
        assert {"401", "403", "422", "429", "503"} <= declared, path
        # Only the paginated operations can refuse a cursor; only the events' can expire.
        assert ("400" in declared) == path.endswith(("/reservations", "/events")), path
        assert ("410" in declared) == path.endswith("/events"), path


async def test_operation_ids_are_short_and_pinned(doc: dict[str, Any]) -> None:
    found = {path: item["get"]["operationId"] for path, item in doc["paths"].items()}
    assert found == OPERATION_IDS


async def test_each_operation_has_one_tag_described_at_the_top(doc: dict[str, Any]) -> None:
    assert {path: item["get"]["tags"] for path, item in doc["paths"].items()} == {
        path: [tag] for path, tag in TAG.items()
    }
    listed = {tag["name"]: tag.get("description") for tag in doc["tags"]}
    assert set(listed) == set(TAG.values())
    assert all(listed.values()), listed


async def test_each_operation_is_described(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        op = item["get"]
        assert op["summary"], path
        # What it returns, the scope it needs, whether it pages, the rate limit.
        scope = SCOPE[path]
        needs = "Any valid key, whatever its scopes" if scope is None else f"Scope: `{scope}`"
        assert needs in op["description"], path
        assert "paginated" in op["description"], path
        assert "60 requests per calendar minute" in op["description"], path
        ok = op["responses"]["200"]["description"]
        assert ok, path
        assert ok != "Successful Response", path


async def test_errors_are_described_with_their_code_and_body(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    for path, item in doc["paths"].items():
        for status, answer in item["get"]["responses"].items():
            if status in ("200", "304"):
                continue
            assert answer["description"].startswith(f"`{ERROR_CODES[status]}`"), (path, status)
            [(media, content)] = answer["content"].items()
            assert media == "application/json", (path, status)
            name = content["schema"]["$ref"].rpartition("/")[2]
            assert {"detail", "code"} <= set(schemas[name]["required"]), (path, status)
            assert schemas[name]["properties"]["code"]["type"] == "string"


async def test_contact_and_license(doc: dict[str, Any]) -> None:
    info = doc["info"]
    assert info["contact"] == {
        "name": "The operators of this hangar deployment",
        "url": "https://hangar.example/docs",
    }
    # OpenAPI 3.1: a license has a name and either an SPDX identifier or a url, never both.
    assert info["license"] == {"name": "Proprietary", "identifier": "LicenseRef-Proprietary"}


async def test_only_the_feed_answers_304_and_its_304_has_no_body(doc: dict[str, Any]) -> None:
    answering = {p for p, item in doc["paths"].items() if "304" in item["get"]["responses"]}
    assert answering == {"/api/v1/external/reservations.ics"}
    not_modified = doc["paths"]["/api/v1/external/reservations.ics"]["get"]["responses"]["304"]
    assert "content" not in not_modified
    assert "If-None-Match" in not_modified["description"]
