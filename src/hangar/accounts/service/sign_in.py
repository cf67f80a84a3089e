"""Signing in, and out.

The same for POST /api/session and the /login form, so every door counts the same budgets
(the session cookie they set: hangar.http.access).

Failed sign-ins are counted per client address (hangar.http.client_address) and per email from
that address (OWASP's Authentication and Credential Stuffing cheat sheets). Either budget,
once spent, refuses with 429 and `Retry-After` before the password is hashed, so a flood
from one address costs it a limiter lookup per try. Neither is a lock an attacker can put
on someone else: guessing a person's password from one address does not stop that person
signing in from their own.
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import challenges, sessions, two_factor
from hangar.kit import ratelimit
from hangar.kit.container import Services
from hangar.kit.errors import RateLimited, Unauthorized
from hangar.kit.ratelimit import Budget, Limit
from hangar.orgs.actors import Started, started

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
                new = await signed_in_or_challenged(conn, account, now)
    finally:
        if new is not None:
            await ratelimit.give_back(services.limiter, budgets, now)
    if new is None:
        raise Unauthorized("Wrong email or password", "INVALID_CREDENTIALS")
    return new


async def signed_in_or_challenged(
    conn: AsyncConnection, account: tuple[uuid.UUID, str], now: datetime
) -> Started | Challenged:
    """A session for the account whose password (or recovery link) was right, or, with
    two-factor sign-in, a challenge waiting for its code."""
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
