"""/docs lists, under each operation, the fields of its response body (name, type, null
rule, scope needed), read from the same schemas the API serves."""

from __future__ import annotations

import html as entities
import re
from typing import Any

import httpx

SPEC = "/api/v1/external/openapi.json"
ROW = re.compile(r'<tr data-field="([^"]+)">(.*?)</tr>', re.S)
CELL = re.compile(r'<td data-label="([^"]+)"[^>]*>(.*?)</td>', re.S)
TAG = re.compile(r"<[^>]+>")
CONTACT = {"email", "first_name", "last_name", "phone"}  # the spec's read:members.full fields


def _text(cell: str) -> str:
    return " ".join(entities.unescape(TAG.sub("", cell)).split())


def _rows(page: str) -> dict[str, dict[str, str]]:
    """Each field row of the page, by `Schema.field`: its cells' text, by column."""
    return {
        field: {label: _text(cell) for label, cell in CELL.findall(row)}
        for field, row in ROW.findall(page)
    }


def _section(page: str, operation_id: str) -> str:
    start = page.index(f'id="{operation_id}"')
    return page[start : page.index("</section>", start)]


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found: set[str] = set()
        for key, value in node.items():
            if key == "$ref":
                found.add(value.rsplit("/", 1)[-1])
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node))
    return set()


def _public_schemas(spec: dict[str, Any]) -> set[str]:
    """The schemas the operations' 200 answers are made of, following $ref to the end."""
    schemas = spec["components"]["schemas"]
    found = _refs([op["responses"]["200"] for ops in spec["paths"].values() for op in ops.values()])
    while more := _refs([schemas[name] for name in found]) - found:
        found |= more
    return found


def _base_type(prop: dict[str, Any]) -> str:
    [option] = [o for o in prop.get("anyOf", [prop]) if o.get("type") != "null"]
    if "$ref" in option:
        return str(option["$ref"]).rsplit("/", 1)[-1]
    if option.get("type") == "array":
        items = option["items"]
        return "array of " + str(items.get("$ref", items.get("type"))).rsplit("/", 1)[-1]
    return str(option["type"]) + (f" ({option['format']})" if "format" in option else "")


async def _page_and_spec(client: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    spec: dict[str, Any] = (await client.get(SPEC)).json()
    return (await client.get("/docs")).text, spec


async def test_every_field_of_every_public_schema_is_listed_with_type_and_null_rule(
    client: httpx.AsyncClient,
) -> None:
    page, spec = await _page_and_spec(client)
    rows = _rows(page)
    schemas = spec["components"]["schemas"]
    public = _public_schemas(spec)
    assert public == {
        "Reservation",
        "ReservationPage",
        "Aircraft",
        "Squawk",
        "Member",
        "MaintenanceLog",
        "WorkOrder",
        "EventPage",
        "LoggedEvent",
        "KeyOrganization",
        "CallingKey",
    }
    listed = 0
    for name in public:
        required = set(schemas[name]["required"])
        for field, prop in schemas[name]["properties"].items():
            row = rows[f"{name}.{field}"]
            assert row["Field"] == field
            assert row["Type"].startswith(_base_type(prop)), (name, field, row)
            for value in next((o["enum"] for o in prop.get("anyOf", [prop]) if "enum" in o), []):
                assert value in row["Type"]
            nullable = {"type": "null"} in prop.get("anyOf", [])
            assert row["Null rule"].startswith("may be null" if nullable else "never null")
            assert ("always present" in row["Null rule"]) == (field in required)
            listed += 1
    assert listed == len(rows) > 60


async def test_fields_sit_under_their_operation_with_its_scope(client: httpx.AsyncClient) -> None:
    page, _ = await _page_and_spec(client)
    aircraft = _rows(_section(page, "list_aircraft"))
    assert aircraft["Aircraft.hobbs_current"] == {
        "Field": "hobbs_current",
        "Type": "number",
        "Null rule": "may be null; always present",
        "Scope": "read:aircraft",
        "Notes": "",
    }
    members = _rows(_section(page, "list_members"))
    assert members["Member.role_name"]["Type"] == "string"
    assert members["Member.role_name"]["Null rule"] == "may be null; always present"
    assert members["Member.joined_at"]["Type"] == "string (date-time)"
    reservations = _rows(_section(page, "list_reservations"))
    assert reservations["ReservationPage.items"]["Type"] == "array of Reservation"
    assert reservations["ReservationPage.next_cursor"]["Null rule"].startswith("may be null")
    assert "one of confirmed, standby" in reservations["Reservation.status"]["Type"]
    assert reservations["Reservation.id"]["Scope"] == "read:reservations"
    # Each operation lists its own body only.
    assert all(field.startswith("Aircraft.") for field in aircraft)
    assert _rows(_section(page, "get_reservations_calendar")) == {}
    events = _rows(_section(page, "list_events"))
    assert set(events) == {
        "EventPage.items",
        "EventPage.next_cursor",
        "LoggedEvent.id",
        "LoggedEvent.event",
        "LoggedEvent.created_at",
        "LoggedEvent.data",
    }
    assert events["EventPage.items"]["Type"] == "array of LoggedEvent"
    # Unlike the reservations' cursor, this one is on every page, the last one too.
    assert events["EventPage.next_cursor"]["Null rule"] == "never null; always present"
    assert events["LoggedEvent.data"]["Type"] == "object"
    assert "X-Service-Event-Id" in events["LoggedEvent.id"]["Notes"]
    assert all(row["Scope"] == "read:events" for row in events.values())


async def test_contact_fields_name_read_members_full(client: httpx.AsyncClient) -> None:
    page, _ = await _page_and_spec(client)
    members = _rows(_section(page, "list_members"))
    for field, row in members.items():
        name = field.removeprefix("Member.")
        if name in CONTACT:
            assert row["Scope"] == "read:members and read:members.full"
            assert row["Null rule"].endswith(
                "omitted unless the key also carries read:members.full"
            )
        else:
            assert row["Scope"] == "read:members"
            assert row["Null rule"].endswith("always present")
    assert {f.removeprefix("Member.") for f in members} > CONTACT
