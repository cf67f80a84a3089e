"""What a person does with their own account: sign in and out, and recover it through the
operator's reset link. (Its second factor: hangar.accounts.second_factor.)

## Signing in

The same for POST /api/session and the /login form, so every door counts the same budgets
(the session cookie they set: hangar.http.access).

Failed sign-ins are counted per client address (hangar.http.client_address) and per email from
that address (OWASP's Authentication and Credential Stuffing cheat sheets). Either budget,
once spent, refuses with 429 and `Retry-After` before the password is hashed, so a flood
from one address costs it a limiter lookup per try. Neither is a lock an attacker can put
on someone else: guessing a person's password from one address does not stop that person
signing in from their own.

## The recovery link

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

import hashlib
import ipaddress
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.accounts.models import PasswordReset
from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.auth import challenges, sessions, two_factor, users
from hangar.auth.passwords import hashed
from hangar.foundation.ids import new_id
from hangar.foundation.mail import Mail
from hangar.kit import ratelimit
from hangar.kit.container import Services
from hangar.kit.errors import NotFound, RateLimited, Unauthorized
from hangar.kit.ratelimit import Budget, Limit
from hangar.orgs.actors import Started, memberships, started

# Failed sign-ins from one address, whatever the emails: a flood with random emails (each one
# costing a hash) is refused after 20, and a guesser working through many accounts gets 100
# tries an hour. A flying club's whole office behind one address fails far fewer.
ADDRESS_LIMITS = (
    Limit(20, 60, "20 failed sign-ins a minute from one address"),
    Limit(100, 3600, "100 failed sign-ins an hour from one address"),
)
# Failed sign-ins for one email from one address: slows guessing one person's password.
ACCOUNT_LIMITS = (Limit(10, 900, "10 failed sign-ins per 15 minutes for this email"),)


def _client(address: str) -> str:
    """Whom an address's budgets belong to: an IPv4 address, or an IPv6 address's /64 (one
    subscriber's network: its owner picks any of its 2^64 addresses at will, so counting
    per IPv6 address would be no budget at all)."""
    try:
        found = ipaddress.ip_address(address)
    except ValueError:
        return address
    if found.version == 6:
        return str(ipaddress.ip_network(f"{found}/64", strict=False))
    return str(found)


def address_budget(address: str) -> Budget:
    return f"sign-in:address:{_client(address)}", ADDRESS_LIMITS


async def _refuse_if_spent(services: Services, budgets: tuple[Budget, ...], now: datetime) -> None:
    for subject, limits in budgets:
        refused = await services.limiter.exceeded(subject, limits, now)
        if refused is not None:
            raise spent(refused, now)


def spent(refused: Limit, now: datetime) -> RateLimited:
    return RateLimited(
        f"Too many failed sign-ins: {refused.label}", retry_after=refused.resets_in(now)
    )


async def refuse_spent_address(services: Services, address: str, now: datetime) -> None:
    """429 for a client address whose failed sign-ins are spent (the sign-in route asks before
    it reads the body: the flood it refuses costs a limiter lookup per request, bench G12c)."""
    await _refuse_if_spent(services, (address_budget(address),), now)


@dataclass(frozen=True)
class Challenged:
    """The password was right, and the account has two-factor sign-in: the challenge cookie's
    value, which `verify_second_factor` takes with a code."""

    token: str


async def sign_in_or_refuse(
    services: Services, email: str, password: str, address: str
) -> Started | Challenged:
    """A new session (or, for an account with two-factor sign-in, a challenge waiting for its
    code), or 401 INVALID_CREDENTIALS, or 429 once the failures allowed to this client
    `address` (or to this email from it) are spent.

    Each try is counted in the budgets before the password is hashed, so a spent one gives a
    guesser nothing, costs no hash and cannot be raced by a burst; only a failure keeps its
    count (a success, or a try refused before its hash, gives it back). The transaction is
    its own, not the request's (`Tx`): the budgets, like the body's validation, come before
    any database work.
    """
    now = services.clock.now()
    budgets = (
        address_budget(address),
        (f"sign-in:email:{_client(address)}:{email.strip().lower()}", ACCOUNT_LIMITS),
    )
    refused = await ratelimit.take(services.limiter, budgets, now)
    if refused is not None:
        raise spent(refused, now)
    new: Started | Challenged | None = None
    try:
        async with services.engine.begin() as conn:
            account = await sessions.verify_credentials(conn, email, password)
            if account is not None:
                new = await _signed_in_or_challenged(conn, account, now)
    finally:
        if new is not None:
            await ratelimit.give_back(services.limiter, budgets, now)
    if new is None:
        raise Unauthorized("Wrong email or password", "INVALID_CREDENTIALS")
    return new


async def _signed_in_or_challenged(
    conn: AsyncConnection, account: tuple[uuid.UUID, str], now: datetime
) -> Started | Challenged:
    user_id, email = account
    if await two_factor.is_enabled(conn, user_id):
        return Challenged(await challenges.challenge(conn, user_id, now))
    return await started(conn, await sessions.start(conn, user_id, email, now))


def two_factor_required() -> Unauthorized:
    """What a right password is answered with when the account also needs its code."""
    return Unauthorized(
        "Enter the code from your authenticator app (or a recovery code)", "TWO_FACTOR_REQUIRED"
    )


sign_out = sessions.sign_out  # the session's row goes; nothing to add here


# --- the recovery link -------------------------------------------------------------------

RESET_LIFETIME = timedelta(hours=24)
# Between two reset links mailed to one account: at most 3 an hour.
RESET_MAIL_SPACING = timedelta(minutes=20)
# token_urlsafe(32) is 43 characters; anything much longer is not one of ours.
MAX_TOKEN_LENGTH = 100
RESET_PATH = "/password-reset/"


def reset_not_valid() -> NotFound:
    return NotFound(detail="This password reset link is not valid or has expired")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


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
            token_hash=token_hash(token),
            created_at=now,
            expires_at=now + RESET_LIFETIME,
        )
    )
    details = {"email": wanted, "mailed": to_be_mailed}
    await record_for_account(
        conn, account_id, audit.OPERATOR, "user.reset_password_link", now, details
    )
    return IssuedReset(account_id, wanted, token, now + RESET_LIFETIME)


async def record_for_account(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    by: Who,
    action: audit.Action,
    now: datetime,
    details: Mapping[str, object],
) -> None:
    """What was done to an account, in the audit log of each organization it is an active
    member of: their admins answer for who may reach their settings. (An account in no
    organization has no log to be shown in: the operator's own log line records it.)"""
    for membership in await memberships(conn, user_id):
        org_id = uuid.UUID(membership["org_id"])
        await audit.record(conn, org_id, by, action, ("user", user_id), now, details)


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
            ).where(PasswordReset.token_hash == token_hash(token), PasswordReset.expires_at > now)
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
        return await _signed_in_or_challenged(conn, (used.user_id, used.email), now)
