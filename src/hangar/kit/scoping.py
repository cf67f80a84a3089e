"""The one way rows are scoped to an organization.

A row belongs to one organization and is soft-deleted, never removed (`OrgOwned`). Every read
query of /api/v1/external starts from `scoped(...)`, built once with the organization as a
bound parameter, and is run by `rows(...)` with the key's organization: rows of the key's
organization that are not soft-deleted. No route filters by organization on its own. The
product actions' commands look rows up the same way (hangar/kit/rows.py), so an id of another
organization reads exactly like an unknown one.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from sqlalchemy import BindParameter, Select, bindparam, select

from hangar.db.reads import Read, ReadConnection

ORG_PARAM = "scope_org_id"

Row = TypeVar("Row", bound=Mapping[str, Any])


class OrgOwned(Protocol):
    """A mapped table whose rows belong to one organization and are soft-deleted."""

    __table__: ClassVar[Any]
    id: Any
    org_id: Any
    deleted_at: Any


class OfOrg(Protocol):
    """Whoever a read is for (an API key's context): it names one organization."""

    @property
    def org_id(self) -> uuid.UUID: ...


@dataclass(frozen=True)
class KeyContext:
    """The caller, as far as the public API is concerned: one key of one organization."""

    key_id: uuid.UUID
    org_id: uuid.UUID
    scopes: frozenset[str]


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


async def rows(conn: ReadConnection, read: Read[Row], key: OfOrg, **params: object) -> list[Row]:
    """Runs a statement made from `scoped(...)` for the key's organization."""
    return await read.rows(conn, {**params, ORG_PARAM: key.org_id})
