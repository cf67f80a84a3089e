"""Reading JSON values into Python ones. Every parser is strict about type, so a field
that changed type fails loudly (the drift test catches it first), and tolerant of nothing
else: unknown keys are simply never read (the spec lets the API add fields)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any, TypeGuard, TypeVar, cast

# Its home is errors (under HangarClientError); named here too for the parsers below.
from hangar_client.errors import InvalidPayload as InvalidPayload

T = TypeVar("T")
Json = Mapping[str, Any]


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidPayload(f"expected a string, got {value!r}")
    return value


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidPayload(f"expected a boolean, got {value!r}")
    return value


def number(value: Any) -> float:
    # bool is an int in Python, never a number on the wire.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidPayload(f"expected a number, got {value!r}")
    return float(value)


def timestamp(value: Any) -> datetime:
    """ISO 8601 in UTC (`Z` or `+00:00`), always returned timezone-aware."""
    moment = datetime.fromisoformat(string(value))
    if moment.tzinfo is None:
        raise InvalidPayload(f"timestamp without a timezone: {value!r}")
    return moment


def day(value: Any) -> date:
    return date.fromisoformat(string(value))


def optional(parse: Callable[[Any], T]) -> Callable[[Any], T | None]:
    def parse_optional(value: Any) -> T | None:
        return None if value is None else parse(value)

    return parse_optional


def is_list(value: object) -> TypeGuard[list[Any]]:
    """A JSON array (of values still to be read), for type checkers as for the reader."""
    return isinstance(value, list)


def array(value: Any) -> list[Any]:
    if not is_list(value):
        raise InvalidPayload(f"expected an array, got {type(value).__name__}")
    return value


def obj(value: Any) -> Json:
    if not isinstance(value, Mapping):
        raise InvalidPayload(f"expected an object, got {type(value).__name__}")
    return cast(Json, value)


def field(body: Json, name: str) -> Any:
    """A key the spec says is always present."""
    try:
        return body[name]
    except KeyError:
        raise InvalidPayload(f"missing field {name!r}") from None
