"""The one place the public API decides which rows a key may see.

Every read query of /api/v1/external starts from `visible(...)` (or `scoped(...)`, its form
built once with the organization as a bound parameter, run by `rows(...)` with the key's):
rows of the key's organization that are not soft-deleted. No route filters by organization
on its own.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import Select, bindparam, select
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.apikey import KeyContext
from hangar.db.engine import Read

ORG_PARAM = "scope_org_id"


class OrgOwned(Protocol):
    """A table of rows that belong to one organization and are soft-deleted."""

    org_id: Any
    deleted_at: Any


def visible(model: type[OrgOwned], key: KeyContext, *columns: Any) -> Select[Any]:
    return select(*columns).where(model.org_id == key.org_id, model.deleted_at.is_(None))


def as_dicts(result: CursorResult[Any]) -> list[dict[str, Any]]:
    """Rows as plain dicts keyed by their labels, ready for orjson."""
    keys = tuple(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]


def scoped(model: type[OrgOwned], *columns: Any) -> Select[Any]:
    """`visible` with the organization left as a parameter, for statements built once."""
    return select(*columns).where(
        model.org_id == bindparam(ORG_PARAM, type_=model.org_id.type),
        model.deleted_at.is_(None),
    )


async def rows(
    conn: AsyncConnection, read: Read, key: KeyContext, **params: Any
) -> list[dict[str, Any]]:
    """Runs a statement made from `scoped(...)` for the key's organization."""
    return await read.rows(conn, {**params, ORG_PARAM: key.org_id})
