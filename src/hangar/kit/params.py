"""Query parameter types of the public API, strict where the spec is."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator

# An unencoded "+" in a query string arrives as a space: "...T10:00:00 02:00".
_SPACE_FOR_PLUS = re.compile(r" (\d\d(:?\d\d)?)$")


def _aware_datetime(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = _SPACE_FOR_PLUS.sub(r"+\1", value.strip())
    if "\x00" in text:  # fromisoformat reads up to a NUL and ignores the rest
        raise ValueError("not an ISO 8601 date-time; use a form such as 2026-05-01T09:00:00Z")
    if "T" not in text.upper() and " " not in text:
        raise ValueError(
            "a date-time with a UTC offset is required, such as 2026-05-01T09:00:00Z; "
            "a date alone is not enough"
        )
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            "not an ISO 8601 date-time; use a form such as 2026-05-01T09:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise ValueError("a UTC offset is required (Z or +HH:MM), such as 2026-05-01T09:00:00Z")
    try:
        # 9999-12-31T23:59:59-01:00 parses, but has no UTC equivalent.
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("the date-time is out of range once converted to UTC") from None


def parse_aware_datetime(text: str) -> datetime:
    """AwareDateTime's reading of a text, in UTC, for a value that is not a declared
    parameter; ValueError says what is wrong in words."""
    parsed: datetime = _aware_datetime(text)
    return parsed


def _strict_bool(value: Any) -> Any:
    # Exactly `true` or `false` (interfaces.md §3): not True, 1, yes or on.
    if isinstance(value, str):
        if value in ("true", "false"):
            return value == "true"
        raise ValueError("must be true or false")
    return value


def _digits(value: Any) -> Any:
    # int() also reads "5_0", " 50", "+50" and the digits of other scripts (Arabic-Indic,
    # fullwidth): a query integer is ASCII digits and nothing else.
    if isinstance(value, str) and not (value.isascii() and value.isdigit()):
        raise ValueError("must be a whole number written in digits 0-9")
    return value


AwareDateTime = Annotated[datetime, BeforeValidator(_aware_datetime)]
# Metadata for a query integer, after its Query(...): Annotated[int, Query(ge=1), Digits].
# Before the Query, or in an Annotated alias of its own, it turns ge/le in the OpenAPI schema
# into unknown keywords instead of minimum/maximum.
Digits = BeforeValidator(_digits)
StrictBool = Annotated[bool, BeforeValidator(_strict_bool)]
