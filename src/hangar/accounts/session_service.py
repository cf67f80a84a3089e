"""Signing in and out, and the session cookie: the same for POST /api/session, the /login
form and the invitation page, so every door counts the same budgets and sets the same cookie.

Failed sign-ins are counted per client address (hangar.http.client_address) and per email from
that address (OWASP's Authentication and Credential Stuffing cheat sheets). Either budget,
once spent, refuses with 429 and `Retry-After` before the password is hashed, so a flood
from one address costs it a limiter lookup per try. Neither is a lock an attacker can put
on someone else: guessing a person's password from one address does not stop that person
signing in from their own.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from hangar.auth import sessions
from hangar.kit.container import Services
from hangar.kit.errors import RateLimited, Unauthorized
from hangar.kit.ratelimit import Limit
from hangar.kit.routing import before_body, client_of, services_of
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


Budget = tuple[str, tuple[Limit, ...]]


def _address_budget(address: str) -> Budget:
    return f"sign-in:address:{address}", ADDRESS_LIMITS


async def _refuse_if_spent(services: Services, budgets: tuple[Budget, ...], now: datetime) -> None:
    for subject, limits in budgets:
        refused = await services.limiter.exceeded(subject, limits, now)
        if refused is not None:
            raise RateLimited(
                f"Too many failed sign-ins: {refused.label}", retry_after=refused.resets_in(now)
            )


@before_body
async def address_budget_left(request: Request) -> None:
    """429 for a client address whose failed sign-ins are spent, before its body is read or
    parsed: the flood it refuses costs a limiter lookup per request (bench G12c). Looked up
    once: FastAPI's own call of it, after the body, finds it done."""
    if getattr(request.state, "sign_in_address_checked", False):
        return
    services = services_of(request)
    budget = _address_budget(client_of(request))
    await _refuse_if_spent(services, (budget,), services.clock.now())
    request.state.sign_in_address_checked = True


async def sign_in_or_refuse(services: Services, email: str, password: str, address: str) -> Started:
    """A new session, or 401 INVALID_CREDENTIALS, or 429 once the failures allowed to this
    client `address` (or to this email from it) are spent.

    The budgets are checked before the password, so a spent one gives a guesser nothing and
    costs no hash. The transaction is its own, not the request's (`Tx`): the budgets, like
    the body's validation, come before any database work.
    """
    now = services.clock.now()
    budgets = (
        _address_budget(address),
        (f"sign-in:email:{address}:{email.strip().lower()}", ACCOUNT_LIMITS),
    )
    await _refuse_if_spent(services, budgets, now)
    async with services.engine.begin() as conn:
        result = await sessions.sign_in(conn, email, password, now)
        new = None if result is None else await started(conn, result)
    if new is None:
        for subject, limits in budgets:
            await services.limiter.hit(subject, limits, now)
        raise Unauthorized("Wrong email or password", "INVALID_CREDENTIALS")
    return new


async def sign_out(conn: AsyncConnection, session_id: uuid.UUID) -> None:
    await sessions.sign_out(conn, session_id)
