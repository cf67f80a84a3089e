"""The base of every JSON request body of the session API and the product actions.

What no body may carry, decided once: unknown keys (a typo must not pass silently),
NaN and Infinity (Python's JSON parser accepts them; the spec's numbers are finite),
NUL characters (PostgreSQL text cannot hold them, and no field of ours has a use for one),
and a value of the wrong JSON type: bodies are strict, so `"2"` is not a number, `2` not a
string and `"true"` not a boolean. Ids and dates, which JSON can only carry as strings, are
parsed from strings and from nothing else (`BodyId`, `BodyDate`).
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Strict, field_validator


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple):
        return any(_has_nul(item) for item in value)
    return False


def _string_form(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


# Strict(False) lets the string be parsed (strict mode takes only a UUID or date object, which
# JSON never holds); the validator before it refuses every other JSON type.
BodyId = Annotated[uuid.UUID, Strict(False), BeforeValidator(_string_form)]
BodyDate = Annotated[date, Strict(False), BeforeValidator(_string_form)]


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if _has_nul(value):
            raise ValueError("must not contain NUL characters")
        return value
