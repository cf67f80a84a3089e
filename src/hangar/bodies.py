"""The base of every JSON request body of the session API and the product actions.

What no body may carry, decided once: unknown keys (a typo must not pass silently),
NaN and Infinity (Python's JSON parser accepts them; the spec's numbers are finite), and
NUL characters (PostgreSQL text cannot hold them, and no field of ours has a use for one).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple):
        return any(_has_nul(item) for item in value)
    return False


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if _has_nul(value):
            raise ValueError("must not contain NUL characters")
        return value
