"""A member, as the public API shows it: the schema and its row types, without and with the
contact fields (hangar.kit.schemas says how the two go together)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TypedDict

from pydantic import Field

from hangar.kit.schemas import Open

_CONTACT = "Only when the key also carries read:members.full; otherwise the key is omitted"


class Member(Open):
    user_id: str
    role_id: str | None
    role_name: str | None
    status: str
    is_discovery: bool
    joined_at: datetime | None
    email: str = Field(None, description=_CONTACT)  # type: ignore[assignment]
    first_name: str = Field(None, description=_CONTACT)  # type: ignore[assignment]
    last_name: str = Field(None, description=_CONTACT)  # type: ignore[assignment]
    phone: str | None = Field(None, description=_CONTACT)


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
