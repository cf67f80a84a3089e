"""The operator's `hangar user create`: an active membership straight away, for bootstrapping.

Unlike an invitation, the membership is the email's account's own (the email is recorded on
the membership too, as the organization's record). It may make the account with the password
the operator gives (a new email), but it never touches an account that exists: that password
belongs to its person, so giving one for an existing account is refused rather than silently
ignored or applied. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.models import User
from hangar.auth.passwords import hash_password
from hangar.kit.errors import Conflict, Unprocessable
from hangar.orgs.members import Contact, account_of, add_member


@dataclass(frozen=True)
class Bootstrapped:
    user_id: uuid.UUID
    membership_id: uuid.UUID
    role: str
    account: Literal["created", "existing"]


async def bootstrap_member(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    person: Contact,
    *,
    role: str,
    password: str | None,
    now: datetime,
) -> Bootstrapped:
    exists = await account_of(conn, person.email) is not None
    if exists and password is not None:
        raise Conflict(
            f"{person.email.strip().lower()} already has an account, and its password belongs "
            "to its owner: omit --password to add the membership",
            "ACCOUNT_EXISTS",
        )
    if not exists and password is None:
        raise Unprocessable(
            "VALIDATION_ERROR", "--password is required: this email has no account yet"
        )
    member = await add_member(conn, org_id, person, role=role, now=now, status="active")
    if member.account_created:
        assert password is not None
        await conn.execute(
            update(User)
            .where(User.id == member.user_id)
            .values(password_hash=hash_password(password))
        )
    return Bootstrapped(
        member.user_id,
        member.membership_id,
        member.role,
        "created" if member.account_created else "existing",
    )
