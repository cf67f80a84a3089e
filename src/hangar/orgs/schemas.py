"""A member, as the public API shows it: the schema and its row types, without and with the
contact fields (hangar.kit.schemas says how the two go together)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, TypedDict

from pydantic import Field

from hangar.kit.schemas import REQUIRED_SCOPE, Open
from hangar.kit.scopes import MEMBERS_FULL

FULL_SCOPE = MEMBERS_FULL


def _contact() -> Any:
    # Absent, not null, without the scope: typed as the value it has when present. The scope
    # is said for machines too (the description says it for people): /docs reads it.
    return Field(
        None,
        description=f"Only when the key also carries {FULL_SCOPE}; otherwise the key is omitted",
        json_schema_extra={REQUIRED_SCOPE: FULL_SCOPE},
    )


class Member(Open):
    user_id: str
    role_id: str | None
    role_name: str | None
    status: str
    is_discovery: bool
    joined_at: datetime | None
    email: str = _contact()
    first_name: str = _contact()
    last_name: str = _contact()
    phone: str | None = _contact()


class MemberRow(TypedDict):
    """A member as a key without read:members.full reads it: `Member`'s first fields."""

    user_id: uuid.UUID
    role_id: uuid.UUID | None
    role_name: str | None
    status: str
    is_discovery: bool
    joined_at: datetime | None


class FullMemberRow(MemberRow):
    """A member with the contact fields, in `Member`'s order (read:members.full, and the
    answer to an invitation)."""

    email: str
    first_name: str
    last_name: str
    phone: str | None


class CallingKey(Open):
    prefix: str = Field(description="The key's first 12 characters, as Org Settings lists it")
    scopes: list[str] = Field(description="What the key may read")
    expires_at: datetime | None = Field(
        description="When a rotated-out key stops working (its grace window); null while "
        "it has no end"
    )


class KeyOrganization(Open):
    """The organization a key belongs to, and that key (GET /organization)."""

    id: str = Field(
        description="The organization's id: the `X-Service-Organization` header "
        "of its webhook deliveries"
    )
    name: str
    key: CallingKey = Field(description="The key that made this call")
