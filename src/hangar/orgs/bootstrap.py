"""The operator's `hangar user create`: an active membership straight away, for bootstrapping
an organization with its first people.

It makes a new account, with the password the operator gives, and its membership, active
at once. It never joins an existing account to an organization: that account is its
holder's, and its holder may not be who the operator thinks (an organization's admin may
have set it up by opening their own invitation link). For an email that has an account the
command invites instead, as an admin does (orgs.members.invite_member): the membership is
pending until the account's holder opens that link signed in as themselves; someone locked
out of an account that another set up gets the operator's recovery link
(`hangar user reset-password`). A password given for an existing account is refused rather
than ignored or applied. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import users
from hangar.auth.passwords import hash_password
from hangar.kit.errors import Conflict, Unprocessable
from hangar.orgs.members import Contact, Invited, account_of, add_member, invite_member


@dataclass(frozen=True)
class Bootstrapped:
    user_id: uuid.UUID  # the new account's, or the invitation's placeholder's
    membership_id: uuid.UUID
    role: str
    account: Literal["created", "existing"]
    # For an existing account: the invitation its holder accepts (its link is to be mailed
    # or printed by the caller once this transaction commits).
    invited: Invited | None = None

    @property
    def status(self) -> Literal["active", "pending"]:
        return "active" if self.invited is None else "pending"


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
            "to its holder: omit --password, and its holder joins through the invitation "
            "this command then makes",
            "ACCOUNT_EXISTS",
        )
    if not exists and password is None:
        raise Unprocessable(
            "VALIDATION_ERROR", "--password is required: this email has no account yet"
        )
    if exists:
        invited = await invite_member(conn, org_id, person, role=role, now=now)
        member = invited.member
        return Bootstrapped(member.user_id, member.membership_id, role, "existing", invited)
    # A new account (add_member refuses, 409, one made since the check above).
    assert password is not None
    member = await add_member(conn, org_id, person, role=role, now=now, status="active")
    await users.set_password(conn, member.user_id, hash_password(password))
    return Bootstrapped(member.user_id, member.membership_id, member.role, "created")
