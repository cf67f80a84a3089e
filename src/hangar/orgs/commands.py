"""Creating organizations, and the checks on one organization's members that the product
actions share (people are added in orgs/members.py). Callers own the transaction."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.foundation.ids import new_id
from hangar.kit.errors import Conflict, NotFound, invalid
from hangar.kit.rows import insert_new
from hangar.orgs.capabilities import ROLE_NAMES
from hangar.orgs.models import Membership, Organization, Role


async def create_org(conn: AsyncConnection, name: str, now: datetime) -> uuid.UUID:
    """A new organization with its four built-in roles."""
    name = name.strip()
    if not name:
        raise invalid("name", "an organization needs a name")
    org_id = await insert_new(conn, Organization, name=name, created_at=now)
    await conn.execute(
        insert(Role), [{"id": new_id(), "org_id": org_id, "name": role} for role in ROLE_NAMES]
    )
    return org_id


async def require_org(conn: AsyncConnection, org_id: uuid.UUID) -> None:
    """The organization exists, or 404 naming the id: for the operator (CLI, seeding), who
    gave the id; a request's organization is decided by hangar.http.access instead."""
    found = await conn.scalar(select(Organization.id).where(Organization.id == org_id))
    if found is None:
        raise NotFound(detail=f"no organization with id {org_id}")


# One organization's members, as adding someone and accepting an invitation both check them.


def already_member(email: str, status: str) -> Conflict:
    said = "is already invited (pending)" if status == "pending" else "is already a member"
    return Conflict(f"{email} {said}", "ALREADY_MEMBER")


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
