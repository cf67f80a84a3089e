"""The recovery link.

`hangar user reset-password --email E` makes it.

For a person locked out of their account: they forgot its password, never chose one (an
account the operator or the demo made), or someone else chose it (an organization's admin who
opened the invitation link meant for them). The operator never types a password for anyone:
the command makes a one-time link, and whoever opens it chooses the account's password and is
signed in, as Django's and GitHub's password resets work.

- Issued only for an account (an email no account has is an error the operator sees; an
  invitation's placeholder has no email, so it cannot be named).
- With HANGAR_SMTP_URL and HANGAR_MAIL_FROM set, the link is mailed to the account's address
  and the operator sees only that it was sent: only whoever reads that mailbox gets in.
  Otherwise the operator is shown it to hand over, and must be sure whom they hand it to.
- The token is 256 random bits; only its SHA-256 is stored. It works for RESET_LIFETIME (24 hours:
  long enough to reach someone the same day, short enough that a link lying in a mailbox or
  a chat goes stale; Django allows 3 days, GitHub's mailed links 3 hours) and once.
- One live link per account: a new one replaces the last (which stops working).
- Using it sets the password (the one rule of hangar.auth.passwords: 8 to 1024
  characters), deletes the link, ends every session of the account (whoever held the old
  password, or set it up for someone else, is signed out everywhere) and signs the holder
  in; an account with two-factor sign-in is asked for its code first, as at sign-in.
  Memberships are untouched: the account keeps exactly the organizations it had.
- Every unusable link (unknown, expired, used, replaced) answers the same 404.

Callers own the transaction of `issue_reset`; `choose_new_password` runs its own (argon2
runs between them, outside any).
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.accounts.models import PasswordReset
from hangar.accounts.service import record_for_account
from hangar.accounts.service.sign_in import Challenged, signed_in_or_challenged
from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.auth import sessions, users
from hangar.auth.passwords import hashed
from hangar.foundation.crypto import token_digest
from hangar.foundation.ids import new_id
from hangar.foundation.mail import Mail
from hangar.kit.container import Services
from hangar.kit.errors import NotFound, RateLimited
from hangar.orgs.actors import Started

RESET_LIFETIME = timedelta(hours=24)
# Between two reset links mailed to one account: at most 3 an hour.
RESET_MAIL_SPACING = timedelta(minutes=20)
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours.
MAX_TOKEN_LENGTH = 100
RESET_PATH = "/password-reset/"


def reset_not_valid() -> NotFound:
    return NotFound(detail="This password reset link is not valid or has expired")


def reset_link(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}{RESET_PATH}{token}"


@dataclass(frozen=True)
class IssuedReset:
    user_id: uuid.UUID
    email: str
    token: str  # mailed, or shown once to the operator (never stored)
    expires_at: datetime


async def issue_reset(
    conn: AsyncConnection, email: str, now: datetime, *, to_be_mailed: bool = False
) -> IssuedReset:
    """A new recovery link for the account with `email`, replacing any earlier one; 404 if no
    account has the email. One `to_be_mailed` comes at most every RESET_MAIL_SPACING after
    the account's last link (429 until then): a loop of the command cannot flood a mailbox
    through the operator's mail server (3 an hour, as invitations to one address)."""
    wanted = email.strip().lower()
    account_id = await users.account_with(conn, wanted)
    if account_id is None or not wanted:
        raise NotFound(detail=f"No account has the email {wanted!r}")
    if to_be_mailed:
        last = await conn.scalar(
            select(PasswordReset.created_at).where(PasswordReset.user_id == account_id)
        )
        if last is not None and now < last + RESET_MAIL_SPACING:
            wait = last + RESET_MAIL_SPACING - now
            raise RateLimited(
                f"A reset link was made for {wanted} at {last:%H:%M} UTC; the next can be "
                f"mailed from {last + RESET_MAIL_SPACING:%H:%M} UTC (3 an hour at most). The "
                "link made then still works",
                retry_after=int(wait.total_seconds()) + 1,
            )
    token = secrets.token_urlsafe(32)
    # The account's earlier link stops working: only the newest one is ever live.
    await conn.execute(delete(PasswordReset).where(PasswordReset.user_id == account_id))
    await conn.execute(
        insert(PasswordReset).values(
            id=new_id(),
            user_id=account_id,
            token_hash=token_digest(token),
            created_at=now,
            expires_at=now + RESET_LIFETIME,
        )
    )
    details = {"email": wanted, "mailed": to_be_mailed}
    await record_for_account(
        conn, account_id, audit.OPERATOR, "user.reset_password_link", now, details
    )
    return IssuedReset(account_id, wanted, token, now + RESET_LIFETIME)


def reset_mail(issued: IssuedReset, url: str, now: datetime) -> Mail:
    body = (
        f"A password reset link was made for your hangar account, {issued.email}.\n"
        "\n"
        "Open this link to choose a new password:\n"
        "\n"
        f"{url}\n"
        "\n"
        f"It works once, until {issued.expires_at:%Y-%m-%d %H:%M} UTC. Choosing a password "
        "there signs out every other session of your account.\n"
        "\n"
        "If you did not ask for this, ignore this message: your password stays as it is.\n"
    )
    return Mail(issued.email, "Your hangar password reset link", body, now)


@dataclass(frozen=True)
class OpenReset:
    """A usable recovery link: whose account it resets."""

    reset_id: uuid.UUID
    user_id: uuid.UUID
    email: str
    expires_at: datetime


async def find_reset(conn: AsyncConnection, token: str, now: datetime) -> OpenReset | None:
    """The usable link behind a token, or None."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    row = (
        await conn.execute(
            select(
                PasswordReset.id.label("reset_id"),
                PasswordReset.user_id,
                PasswordReset.expires_at,
            ).where(PasswordReset.token_hash == token_digest(token), PasswordReset.expires_at > now)
        )
    ).first()
    if row is None:
        return None
    email = (await users.emails_of(conn, [row.user_id])).get(row.user_id)
    return None if email is None else OpenReset(row.reset_id, row.user_id, email, row.expires_at)


async def _use(conn: AsyncConnection, token: str, password_hash: str, now: datetime) -> OpenReset:
    """Sets the password through the link, which is used up; every session of the account
    ends."""
    found = await find_reset(conn, token, now)
    if found is None:
        raise reset_not_valid()
    # The DELETE restates "still live": of two uses of one link at once, one deletes it and
    # the other finds nothing, and its whole transaction is refused.
    used = await conn.execute(
        delete(PasswordReset)
        .where(PasswordReset.id == found.reset_id, PasswordReset.expires_at > now)
        .returning(PasswordReset.id)
    )
    if used.first() is None:
        raise reset_not_valid()
    await users.set_password(conn, found.user_id, password_hash)
    await sessions.end_all(conn, found.user_id)
    return found


async def choose_new_password(
    services: Services, token: str, password: str, client_address: str | None = None
) -> Started | Challenged:
    """Sets the account's password through its recovery link and signs the holder in (a new
    session; every earlier one has ended), or, for an account with two-factor sign-in, asks
    for its code as signing in does: a link that reached someone's mailbox is not their
    second factor. Recorded in the audit log as the account's own doing, from
    `client_address`."""
    async with services.engine.connect() as conn:
        found = await find_reset(conn, token, services.clock.now())
    if found is None:  # refused before the hash, which costs a core a while
        raise reset_not_valid()
    password_hash = await hashed(password)
    now = services.clock.now()
    async with services.engine.begin() as conn:
        # Checked again: the link may have been used (or replaced) meanwhile.
        used = await _use(conn, token, password_hash, now)
        by = Who.person(used.user_id, used.email, client_address)
        details = {"email": used.email}
        await record_for_account(conn, used.user_id, by, "user.password_reset", now, details)
        return await signed_in_or_challenged(conn, (used.user_id, used.email), now)
