"""Two-factor sign-in, as its owner meets it: the code after the password, turning it on
(a secret to scan, then the first code, which shows the recovery codes) and off (with a
code), and the operator's reset. The codes themselves: hangar.auth.two_factor.

Every code tried is budgeted before it is checked, as passwords are (hangar.accounts.service):
per account, not only per address, since whoever tries one holds the password already.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.accounts.service import record_for_account
from hangar.accounts.service.sign_in import address_budget, spent
from hangar.audit.service import OPERATOR
from hangar.auth import challenges, sessions, two_factor, users
from hangar.kit import ratelimit
from hangar.kit.container import Services
from hangar.kit.errors import Conflict, NotFound, RateLimited, Unauthorized, Unprocessable
from hangar.kit.ratelimit import Limit
from hangar.orgs.actors import Started, started

# Wrong second-factor codes for one account, from anywhere (whoever tries holds its password):
# 10 per 15 minutes against a million codes, three of them valid at a time, is a 1-in-33,000
# chance in those 15 minutes, and about one in 350 a day.
CODE_LIMITS = (Limit(10, 900, "10 wrong codes per 15 minutes for this account"),)


def typed_code(given: str) -> dict[str, str | None]:
    """What a person typed in the one field the screens offer, as `code` or `recovery_code`:
    six digits (spaces aside) are the app's code; anything else a recovery code."""
    digits = given.replace(" ", "")
    if len(digits) == 6 and digits.isascii() and digits.isdigit():
        return {"code": digits, "recovery_code": None}
    return {"code": None, "recovery_code": given}


async def verify_second_factor(
    services: Services,
    token: str | None,
    address: str,
    *,
    code: str | None = None,
    recovery_code: str | None = None,
) -> Started:
    """The session a challenge (`token`, from the password step) becomes with its code or a
    recovery code; 401 when there is no live challenge or the code is wrong, 429 once the
    account's (or the address's) failures are spent. Codes are budgeted as passwords are,
    counted before they are checked, and per account too, not only per address: six digits
    are guessed from many addresses otherwise."""
    now = services.clock.now()
    async with services.engine.connect() as conn:
        user_id = await challenges.challenged(conn, token, now)
    if user_id is None or token is None:
        raise Unauthorized(
            "Sign in with your password first: no sign-in is waiting for a code, or it has expired",
            "UNAUTHORIZED",
        )
    budgets = (address_budget(address), (f"sign-in:code:{user_id}", CODE_LIMITS))
    refused = await ratelimit.take(services.limiter, budgets, now)
    if refused is not None:
        raise spent(refused, now)
    new: Started | None = None
    try:
        async with services.engine.begin() as conn:
            proven = await two_factor.check(
                conn, services.settings, user_id, now, code=code, recovery_code=recovery_code
            )
            email = (await users.emails_of(conn, [user_id])).get(user_id)
            # Ended with the session's start: of two uses of one challenge, one wins.
            if proven and email and await challenges.end_challenge(conn, token):
                new = await started(conn, await sessions.start(conn, user_id, email, now))
    finally:
        if new is not None:
            await ratelimit.give_back(services.limiter, budgets, now)
    if new is None:
        raise Unauthorized("Wrong code", "INVALID_TWO_FACTOR_CODE")
    return new


# --- turning two-factor sign-in on and off (the signed-in person's own) ----------------


async def enrol(services: Services, signed_in: sessions.SignedIn) -> two_factor.Enrolment:
    """A new authenticator secret to scan, not yet required; 409 when it is on already."""
    async with services.engine.begin() as conn:
        made = await two_factor.begin(
            conn, services.settings, signed_in.user_id, signed_in.email, services.clock.now()
        )
    if made is None:
        raise Conflict(
            "Two-factor sign-in is on already: turn it off first to set up another app",
            "TWO_FACTOR_ENABLED",
        )
    return made


@dataclass(frozen=True)
class Status:
    """What the account's Two-factor sign-in page shows."""

    enabled: bool
    recovery_codes_left: int
    # Begun and not confirmed: the secret and QR code to show again.
    pending: two_factor.Enrolment | None


async def status(services: Services, signed_in: sessions.SignedIn) -> Status:
    async with services.engine.connect() as conn:
        enabled = await two_factor.is_enabled(conn, signed_in.user_id)
        left = await two_factor.recovery_codes_left(conn, signed_in.user_id) if enabled else 0
        pending = None
        if not enabled:
            pending = await two_factor.pending(
                conn, services.settings, signed_in.user_id, signed_in.email
            )
    return Status(enabled, left, pending)


def _wrong_code() -> Unprocessable:
    return Unprocessable("INVALID_TWO_FACTOR_CODE", "Wrong code")


async def confirm_enrolment(
    services: Services, signed_in: sessions.SignedIn, code: str
) -> list[str]:
    """Two-factor sign-in turned on by a first code from the app: the ten recovery codes,
    shown this once; 422 for a wrong code (or nothing begun). Codes are budgeted as when
    signing in: the person holds the secret, a stolen session does not."""
    now = services.clock.now()
    async with _code_budget(services, signed_in.user_id, now) as proven:
        async with services.engine.begin() as conn:
            codes = await two_factor.confirm(conn, services.settings, signed_in.user_id, code, now)
        proven.append(codes is not None)
    if codes is None:
        raise _wrong_code()
    return codes


async def turn_off(
    services: Services,
    signed_in: sessions.SignedIn,
    *,
    code: str | None = None,
    recovery_code: str | None = None,
) -> None:
    """Two-factor sign-in turned off by its owner, with a current code or a recovery code
    (so a session left open is not enough); 422 for a wrong one."""
    now = services.clock.now()
    async with _code_budget(services, signed_in.user_id, now) as proven:
        async with services.engine.begin() as conn:
            ok = await two_factor.check(
                conn, services.settings, signed_in.user_id, now,
                code=code, recovery_code=recovery_code,
            )  # fmt: skip
            if ok:
                await two_factor.remove(conn, signed_in.user_id)
        proven.append(ok)
    if not ok:
        raise _wrong_code()


@asynccontextmanager
async def _code_budget(
    services: Services, user_id: uuid.UUID, now: datetime
) -> AsyncIterator[list[bool]]:
    """The account's code budget, taken before the code is checked (429 once spent) and
    given back when the block appends True."""
    budgets = ((f"sign-in:code:{user_id}", CODE_LIMITS),)
    refused = await ratelimit.take(services.limiter, budgets, now)
    if refused is not None:
        raise RateLimited(
            f"Too many wrong codes: {refused.label}", retry_after=refused.resets_in(now)
        )
    proven: list[bool] = []
    try:
        yield proven
    finally:
        if not proven or proven[-1]:
            await ratelimit.give_back(services.limiter, budgets, now)


async def reset_two_factor(conn: AsyncConnection, email: str, now: datetime) -> uuid.UUID:
    """The operator's `hangar user reset-2fa`: the account signs in with its password alone
    until it sets up an app again; 404 for an email no account has. Recorded in the audit
    log of each organization the account is a member of."""
    wanted = email.strip().lower()
    account_id = await users.account_with(conn, wanted)
    if account_id is None or not wanted:
        raise NotFound(detail=f"No account has the email {wanted!r}")
    await two_factor.remove(conn, account_id)
    await record_for_account(
        conn, account_id, OPERATOR, "user.reset_two_factor", now, {"email": wanted}
    )
    return account_id


# `hangar secrets reseal`: the authenticator secrets are sealed with HANGAR_SECRET_KEY too.
Resealed = two_factor.Resealed
reseal_all = two_factor.reseal_all
