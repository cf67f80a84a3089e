"""Creating organizations, and the organization scoping that every product action's command
goes through (people are added in orgs/members.py). Callers own the transaction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel
from sqlalchemy import Insert, Select, Update, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.errors import ApiError, invalid
from hangar.external.schemas import field_names
from hangar.ids import new_id
from hangar.orgs.models import ROLE_NAMES, Membership, Organization, Role


async def create_org(conn: AsyncConnection, name: str, now: datetime) -> uuid.UUID:
    """A new organization with its four built-in roles."""
    name = name.strip()
    if not name:
        raise invalid("name", "an organization needs a name")
    org_id = new_id()
    await conn.execute(insert(Organization).values(id=org_id, name=name, created_at=now))
    await conn.execute(
        insert(Role), [{"id": new_id(), "org_id": org_id, "name": role} for role in ROLE_NAMES]
    )
    return org_id


async def org_exists(conn: AsyncConnection, org_id: uuid.UUID) -> bool:
    found = await conn.scalar(select(Organization.id).where(Organization.id == org_id))
    return found is not None


# Organization scoping for every product action. Each lookup names the actor's organization
# and skips soft-deleted rows, so an id of another organization reads exactly like an unknown
# one. These helpers are shared by the commands of every feature.

INVALID_TRANSITION = "INVALID_TRANSITION"


class OrgOwned(Protocol):
    """A mapped table whose rows belong to one organization and are soft-deleted."""

    __table__: ClassVar[Any]
    id: Any
    org_id: Any
    deleted_at: Any


def conflict(detail: str) -> ApiError:
    return ApiError(409, INVALID_TRANSITION, detail)


# One organization's members, as adding someone and accepting an invitation both check them.


def already_member(email: str, status: str) -> ApiError:
    said = "is already invited (pending)" if status == "pending" else "is already a member"
    return ApiError(409, "ALREADY_MEMBER", f"{email} {said}")


async def refuse_if_member(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    *,
    email: str | None = None,
    user_id: uuid.UUID | None = None,
    other_than: uuid.UUID | None = None,
) -> None:
    """409 ALREADY_MEMBER if this organization has a live membership with this email (its own
    record) or of this account, besides `other_than`. About this organization only: its admin
    knows who its members are."""
    which = Membership.email == email if user_id is None else Membership.user_id == user_id
    stmt = select(Membership.status, Membership.email).where(
        Membership.org_id == org_id, Membership.deleted_at.is_(None), which
    )
    if other_than is not None:
        stmt = stmt.where(Membership.id != other_than)
    found = (await conn.execute(stmt)).all()
    if found:
        # A member (active or inactive) says so before an invitation does.
        status = "pending" if all(row.status == "pending" for row in found) else "active"
        raise already_member(email or found[0].email, status)


def public(row: Mapping[str, Any], schema: type[BaseModel]) -> dict[str, Any]:
    """The row in the public API's shape: exactly the schema's fields, nothing private."""
    return {name: row[name] for name in field_names(schema)}


async def written(conn: AsyncConnection, stmt: Insert | Update) -> dict[str, Any] | None:
    """Runs an INSERT or UPDATE and returns the row as the database holds it, or None.

    Payloads are built from this row, not from the request: timestamps come back in UTC
    whatever offset the client sent.
    """
    row = (await conn.execute(stmt.returning(*stmt.table.c))).first()
    return None if row is None else row._asdict()


async def inserted(conn: AsyncConnection, stmt: Insert) -> dict[str, Any]:
    row = await written(conn, stmt)
    assert row is not None
    return row


def _live(model: type[OrgOwned], org_id: uuid.UUID, row_id: uuid.UUID) -> Select[Any]:
    return select(model.__table__).where(
        model.id == row_id, model.org_id == org_id, model.deleted_at.is_(None)
    )


async def locked(
    conn: AsyncConnection, model: type[OrgOwned], org_id: uuid.UUID, row_id: uuid.UUID, what: str
) -> dict[str, Any]:
    """The live row, locked until the transaction ends (PostgreSQL), or 404.

    SQLite ignores FOR UPDATE; its writers are serialized, and `moved` re-checks the state.
    """
    row = (await conn.execute(_live(model, org_id, row_id).with_for_update())).first()
    if row is None:
        raise ApiError(404, "NOT_FOUND", f"No such {what}")
    return dict(row._mapping)


async def moved(conn: AsyncConnection, stmt: Update, lost: str) -> dict[str, Any]:
    """Runs an UPDATE whose WHERE restates the expected state; the row as written, or 409.

    No row back means a concurrent move changed the state first.
    """
    row = await written(conn, stmt)
    if row is None:
        raise conflict(lost)
    return row


async def soft_delete(
    conn: AsyncConnection,
    model: type[OrgOwned],
    org_id: uuid.UUID,
    row_id: uuid.UUID,
    what: str,
    now: datetime,
) -> None:
    await locked(conn, model, org_id, row_id, what)
    await moved(
        conn,
        update(model).where(model.id == row_id, model.deleted_at.is_(None)).values(deleted_at=now),
        f"The {what} was deleted meanwhile",
    )


async def referenced(
    conn: AsyncConnection,
    model: type[OrgOwned],
    org_id: uuid.UUID,
    row_id: uuid.UUID,
    field: str,
) -> dict[str, Any]:
    """A live row of this organization named in a body, or 422 naming the field."""
    row = (await conn.execute(_live(model, org_id, row_id))).first()
    if row is None:
        raise invalid(field, "no such record here")
    return dict(row._mapping)


async def require_member(
    conn: AsyncConnection, org_id: uuid.UUID, user_id: uuid.UUID, field: str
) -> None:
    """`user_id` is an active member of the organization, or 422 naming the field.

    A pending membership (an invitation not yet accepted) does not count: nobody can be put
    on a reservation or a sign-off before they have agreed to join.
    """
    found = await conn.scalar(
        select(Membership.id).where(
            Membership.org_id == org_id,
            Membership.user_id == user_id,
            Membership.deleted_at.is_(None),
            Membership.status == "active",
        )
    )
    if found is None:
        raise invalid(field, "not a member of this organization")
