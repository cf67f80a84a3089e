"""The fields of an operation's response body, read from the OpenAPI document the API serves:
what /docs lists under each operation, so the page cannot drift from the schemas.

A body is walked from the operation's 200 schema through `$ref`s and arrays: each object
schema met (the page wrapper, then its `items`) becomes one table of fields.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from hangar.kit.schemas import REQUIRED_SCOPE

_REF = "#/components/schemas/"


@dataclass(frozen=True)
class ResponseField:
    name: str
    type: str
    nullable: bool
    presence: str  # "always present", or when the key is left out
    scopes: tuple[str, ...]  # every scope a key needs to receive the field
    notes: Markup


@dataclass(frozen=True)
class Body:
    schema: str  # the component's name, e.g. "Aircraft"
    where: Markup  # how it sits in the response, e.g. "each of <code>items</code>"
    fields: list[ResponseField]


def _name(ref: str) -> str:
    return ref.removeprefix(_REF)


def _options(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in schema.get("anyOf", [schema]) if o.get("type") != "null"]


def type_of(schema: dict[str, Any]) -> str:
    """A schema's type in words: `string (date-time)`, `array of Reservation`, joined by `or`
    where it may be one of several, leaving out null (said apart, as the null rule)."""
    kinds = []
    for option in _options(schema):
        if "$ref" in option:
            kind = _name(option["$ref"])
        elif option.get("type") == "array":
            kind = "array of " + type_of(option.get("items", {}))
        else:
            kind = str(option.get("type") or "any")
            if option.get("format"):
                kind = f"{kind} ({option['format']})"
        kinds.append(kind)
    return " or ".join(kinds) or "any"


def _field_type(schema: dict[str, Any]) -> str:
    values = [str(v) for option in _options(schema) for v in option.get("enum", [])]
    kind = type_of(schema)
    return f"{kind}, one of {', '.join(values)}" if values else kind


def _nullable(schema: dict[str, Any]) -> bool:
    return any(o.get("type") == "null" for o in schema.get("anyOf", [schema]))


def _refs(schema: dict[str, Any]) -> list[str]:
    """The component schemas a value of `schema` is, or holds in an array."""
    found = []
    for option in _options(schema):
        if "$ref" in option:
            found.append(_name(option["$ref"]))
        elif option.get("type") == "array":
            found += _refs(option.get("items", {}))
    return found


def bodies(
    components: dict[str, Any],
    response: dict[str, Any],
    scope: str,
    markdown: Callable[[str], Markup],
) -> list[Body]:
    """The object schemas of a 200 `response` in the order a reader meets them, with their
    fields; `scope` is the operation's (a field may ask for more); `markdown` renders the
    descriptions (CommonMark, as OpenAPI's are). Empty when the body is not JSON."""
    schema = response.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return []
    shape = "an array of these" if schema.get("type") == "array" else "this object"
    queue = [(name, Markup("the response is {}").format(shape)) for name in _refs(schema)]
    found: list[Body] = []
    while queue:
        name, where = queue.pop(0)
        if any(body.schema == name for body in found):
            continue
        component = components[name]
        required = set(component.get("required", []))
        fields = []
        for field, prop in component.get("properties", {}).items():
            fields.append(_field(field, prop, field in required, scope, markdown))
            queue += [(ref, Markup("each of <code>{}</code>").format(field)) for ref in _refs(prop)]
        found.append(Body(name, where, fields))
    return found


def _field(
    name: str,
    prop: dict[str, Any],
    required: bool,
    scope: str,
    markdown: Callable[[str], Markup],
) -> ResponseField:
    extra = prop.get(REQUIRED_SCOPE)
    if required:
        presence = "always present"
    elif extra:
        presence = f"omitted unless the key also carries {extra}"
    else:
        presence = "may be omitted"
    scopes = tuple(dict.fromkeys(s for s in (scope, extra) if s))
    return ResponseField(
        name=name,
        type=_field_type(prop),
        nullable=_nullable(prop),
        presence=presence,
        scopes=scopes,
        notes=markdown(prop.get("description", "")),
    )
