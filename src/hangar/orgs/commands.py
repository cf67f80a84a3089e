"""Creating organizations and their people, and the organization scoping that every product
action's command goes through. Callers own the transaction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, Field
from sqlalchemy import Insert, Select, Update, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.passwords import hash_password
from hangar.bodies import RequestBody
from hangar.errors import ApiError, invalid
from hangar.external.schemas import CONTACT_FIELDS, field_names
from hangar.external.schemas import Member as MemberOut
from hangar.ids import new_id
from hangar.orgs.access import Actor
from hangar.orgs.models import ROLE_NAMES, Membership, Organization, Role, User


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


@dataclass(frozen=True)
class NewMember:
    user_id: uuid.UUID
    membership_id: uuid.UUID
    role: str


async def add_member(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    *,
    email: str,
    role: str,
    now: datetime,
    password: str | None = None,
    first_name: str = "",
    last_name: str = "",
    phone: str | None = None,
    is_discovery: bool = False,
) -> NewMember:
    """Adds a person to an organization, creating the user if the email is new."""
    if role not in ROLE_NAMES:
        raise invalid("role", f"must be one of {', '.join(ROLE_NAMES)}")
    email = email.strip().lower()
    if "@" not in email:
        raise invalid("email", "must be an email address")
    role_id = await conn.scalar(select(Role.id).where(Role.org_id == org_id, Role.name == role))
    if role_id is None:
        raise ApiError(404, "NOT_FOUND", "No such organization")
    user_id = await conn.scalar(select(User.id).where(func.lower(User.email) == email))
    if user_id is None:
        user_id = new_id()
        await conn.execute(
            insert(User).values(
                id=user_id,
                email=email,
                password_hash=hash_password(password) if password else None,
                first_name=first_name,
                last_name=last_name,
                phone=phone,
                created_at=now,
            )
        )
    else:
        existing = await conn.scalar(
            select(Membership.id).where(
                Membership.org_id == org_id,
                Membership.user_id == user_id,
                Membership.deleted_at.is_(None),
            )
        )
        if existing is not None:
            raise ApiError(409, "ALREADY_MEMBER", f"{email} is already a member")
    membership_id = new_id()
    await conn.execute(
        insert(Membership).values(
            id=membership_id,
            org_id=org_id,
            user_id=user_id,
            role_id=role_id,
            status="active",
            is_discovery=is_discovery,
            joined_at=now,
        )
    )
    return NewMember(user_id=user_id, membership_id=membership_id, role=role)


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
    """`user_id` is a current member of the organization, or 422 naming the field."""
    found = await conn.scalar(
        select(Membership.id).where(
            Membership.org_id == org_id,
            Membership.user_id == user_id,
            Membership.deleted_at.is_(None),
        )
    )
    if found is None:
        raise invalid(field, "not a member of this organization")


# Members (members.manage).


class NewMemberBody(RequestBody):
    email: str = Field(min_length=3, max_length=320)
    first_name: str = Field(min_length=1, max_length=100)
    last_name: str = Field(min_length=1, max_length=100)
    phone: str | None = Field(None, max_length=40)
    role: Literal["admin", "instructor", "mechanic", "member"]
    password: str | None = Field(None, min_length=8, max_length=1024)
    is_discovery: bool = False


# The public Member, with every contact field: the admin who manages members sees them all.
_MEMBER_COLUMNS = [
    Role.name.label(name)
    if name == "role_name"
    else getattr(User if name in CONTACT_FIELDS else Membership, name)
    for name in field_names(MemberOut)
]


async def member_view(conn: AsyncConnection, membership_id: uuid.UUID) -> dict[str, Any]:
    stmt = (
        select(*_MEMBER_COLUMNS)
        .select_from(Membership)
        .join(User, User.id == Membership.user_id)
        .outerjoin(Role, Role.id == Membership.role_id)
        .where(Membership.id == membership_id)
    )
    return dict((await conn.execute(stmt)).mappings().one())


async def create_member(
    conn: AsyncConnection, actor: Actor, body: NewMemberBody, now: datetime
) -> dict[str, Any]:
    """A new active membership; an existing user (same email) keeps their name and password."""
    created = await add_member(
        conn,
        actor.org_id,
        email=body.email,
        role=body.role,
        now=now,
        password=body.password,
        first_name=body.first_name,
        last_name=body.last_name,
        phone=body.phone,
        is_discovery=body.is_discovery,
    )
    return await member_view(conn, created.membership_id)


async def remove_member(
    conn: AsyncConnection, actor: Actor, user_id: uuid.UUID, now: datetime
) -> None:
    """Soft-deletes the membership; the person loses access to this organization at once."""
    membership_id = await conn.scalar(
        select(Membership.id)
        .where(
            Membership.org_id == actor.org_id,
            Membership.user_id == user_id,
            Membership.deleted_at.is_(None),
        )
        .with_for_update()
    )
    if membership_id is None:
        raise ApiError(404, "NOT_FOUND", "No such member")
    if user_id == actor.user_id:
        # Otherwise the last admin could remove themselves and lock the organization out.
        raise conflict("You cannot remove your own membership")
    await moved(
        conn,
        update(Membership)
        .where(Membership.id == membership_id, Membership.deleted_at.is_(None))
        .values(deleted_at=now),
        "The member was removed meanwhile",
    )
