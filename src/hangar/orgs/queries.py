"""Reads of memberships for the public API; contact fields only when the key may see them.

Everything comes from this organization's memberships (and its roles), never from an account:
the email, names and phone are this organization's own record of the person, and another
organization's record never shows up here. A pending member's `user_id` is its invitation's
placeholder until the person accepts.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from sqlalchemy import ColumnElement, select

from hangar.db.reads import Read, ReadConnection
from hangar.kit.scoping import KeyContext, rows, scoped
from hangar.orgs.models import Membership, Organization, Role
from hangar.orgs.schemas import FULL_SCOPE, FullMemberRow, MemberRow

_COLUMNS = [
    Membership.user_id,
    Membership.role_id,
    Role.name.label("role_name"),
    Membership.status,
    Membership.is_discovery,
    Membership.joined_at,
]
_CONTACT_COLUMNS = [Membership.email, Membership.first_name, Membership.last_name, Membership.phone]


@functools.cache
def _members(full: bool) -> Read[MemberRow]:
    # Built at the first request, once every model (and so every column type) is declared.
    stmt = scoped(Membership, *_COLUMNS, *(_CONTACT_COLUMNS if full else ()))
    stmt = stmt.outerjoin(Role, Role.id == Membership.role_id)
    stmt = stmt.order_by(Membership.joined_at.asc().nulls_last(), Membership.id)
    return Read(stmt, FullMemberRow if full else MemberRow)


async def members(conn: ReadConnection, key: KeyContext) -> list[MemberRow]:
    return await rows(conn, _members(FULL_SCOPE in key.scopes), key)


ORG_NAME = "org_name"


def org_name(org_id: ColumnElement[uuid.UUID]) -> list[ColumnElement[Any]]:
    """The name of the organization `org_id` names, as a column another statement can carry
    (the key's: hangar.keys.authentication.KeyLookup, for GET /organization)."""
    return [
        select(Organization.name).where(Organization.id == org_id).scalar_subquery().label(ORG_NAME)
    ]
