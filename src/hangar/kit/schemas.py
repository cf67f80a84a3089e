"""The base of the public API's resource schemas, and what is true of all of them.

Resources stay open (extra keys allowed), as the spec's versioning asks; the error bodies are
the one error shape of every endpoint. The resource schemas themselves live with their
features (reservations/schemas.py, ...): they name the features' enums, which the kit may not
import.

A feature's schemas.py holds each resource twice, field for field in the same order:
- the schema (`Reservation`, a pydantic model): the JSON and its OpenAPI description, and the
  single list of the public fields that the queries select;
- its row type (`ReservationRow`, a TypedDict): what the queries and the actions return, as
  Python holds it before JSON (ids are UUIDs there). A static type only: nothing is built or
  validated per row. Its order is the JSON's; `hangar.db.reads.Read` holds every query to it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

# The OpenAPI extension naming the scope a key needs: on an operation (the scope enforced for
# it) and on a field that only some keys receive. /docs reads both.
REQUIRED_SCOPE = "x-required-scope"


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorBody(Open):
    detail: str
    code: str


class ValidationErrorBody(ErrorBody):
    # Published in the OpenAPI document as a list of open objects ({loc, msg} today); a
    # closer type would change the published description.
    errors: list[dict[str, Any]]


def field_names(model: type[BaseModel]) -> tuple[str, ...]:
    """A schema's fields in order: the names a query selects, the keys a payload carries."""
    return tuple(model.model_fields)
