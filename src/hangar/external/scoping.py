"""The one place the public API decides which rows a key may see.

Every read query of /api/v1/external starts from `scoped(...)`, built once with the
organization as a bound parameter, and is run by `rows(...)` with the key's organization:
rows of the key's organization that are not soft-deleted. No route filters by organization
on its own.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import BindParameter, Select, bindparam, select

from hangar.auth.apikey import KeyContext
from hangar.db.engine import Read, ReadConnection

ORG_PARAM = "scope_org_id"


class OrgOwned(Protocol):
    """A table of rows that belong to one organization and are soft-deleted."""

    org_id: Any
    deleted_at: Any


def bound(name: str, column: Any) -> BindParameter[Any]:
    """A named parameter of `column`'s type, for a filter of a statement built once."""
    return bindparam(name, type_=column.type)


def scoped(model: type[OrgOwned], *columns: Any) -> Select[Any]:
    """The visible rows of `model`, the organization left as a parameter for `rows`.

    Build it at the first request (not at import): a foreign key column such as org_id has
    no type until the table it refers to is declared.
    """
    return select(*columns).where(
        model.org_id == bound(ORG_PARAM, model.org_id),
        model.deleted_at.is_(None),
    )


async def rows(
    conn: ReadConnection, read: Read, key: KeyContext, **params: Any
) -> list[dict[str, Any]]:
    """Runs a statement made from `scoped(...)` for the key's organization."""
    return await read.rows(conn, {**params, ORG_PARAM: key.org_id})
