"""Two-factor sign-in: a TOTP authenticator (RFC 6238: SHA-1, 6 digits, 30 s, as every
authenticator app reads it) and ten one-time recovery codes, as GitHub's.

- The TOTP secret is sealed with HANGAR_SECRET_KEY (purpose `two-factor-secrets`): a copy of
  the database makes no code. It counts only once confirmed with a code from the app.
- A code is accepted for its 30-second step and the one either side (a phone's clock a little
  off), and never twice: the last step used is kept, and a code of that step or an earlier
  one is refused (RFC 6238 §5.2), by a conditional UPDATE, so two concurrent uses of one code
  cannot both pass.
- Recovery codes: 80 random bits each (16 base32 characters, shown in groups of four); only
  their SHA-256 is stored (80 bits are out of reach of a search, as a session token's are),
  each works once, and new ones replace all the old.
- Between the password and the code, the browser holds a challenge (hangar.auth.challenges);
  the code ends it and a session begins.
"""

from __future__ import annotations

import base64
import hmac
import logging
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime

import pyotp
import segno
from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.auth.models import RecoveryCode, SignInChallenge, TwoFactor
from hangar.foundation.config import Settings
from hangar.foundation.crypto import SecretBox, SecretUnreadable, token_digest
from hangar.foundation.ids import new_id

log = logging.getLogger("hangar.accounts")

ISSUER = "hangar"
STEP_SECONDS = 30
RECOVERY_CODES = 10
# The purpose the secrets are sealed under; changing it would leave every one unreadable.
SECRETS_PURPOSE = "two-factor-secrets"
_CODE_DIGITS = 6


def box(settings: Settings) -> SecretBox:
    return SecretBox(settings.secret_key, SECRETS_PURPOSE, settings.previous_secret_keys)


# --- enrolment ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Enrolment:
    secret: str  # base32, for typing into an app
    otpauth_uri: str
    qr_svg: str


async def is_enabled(conn: AsyncConnection, user_id: uuid.UUID) -> bool:
    confirmed = await conn.scalar(
        select(TwoFactor.confirmed_at).where(TwoFactor.user_id == user_id)
    )
    return confirmed is not None


async def enabled_among(conn: AsyncConnection, user_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    found = await conn.scalars(
        select(TwoFactor.user_id).where(
            TwoFactor.user_id.in_(user_ids), TwoFactor.confirmed_at.is_not(None)
        )
    )
    return set(found)


async def begin(
    conn: AsyncConnection, settings: Settings, user_id: uuid.UUID, email: str, now: datetime
) -> Enrolment | None:
    """A new, unconfirmed secret for the account (replacing an unconfirmed one), or None when
    two-factor sign-in is on already (turn it off first)."""
    if await is_enabled(conn, user_id):
        return None
    secret = pyotp.random_base32()  # 160 bits, as RFC 4226 recommends
    await conn.execute(delete(TwoFactor).where(TwoFactor.user_id == user_id))
    await conn.execute(
        insert(TwoFactor).values(
            user_id=user_id,
            secret_encrypted=box(settings).seal(secret),
            created_at=now,
            confirmed_at=None,
            last_step=None,
        )
    )
    return _enrolment(secret, email)


async def pending(
    conn: AsyncConnection, settings: Settings, user_id: uuid.UUID, email: str
) -> Enrolment | None:
    """The enrolment begun and not yet confirmed, to show again (a wrong first code, a
    reload), or None."""
    sealed = await conn.scalar(
        select(TwoFactor.secret_encrypted).where(
            TwoFactor.user_id == user_id, TwoFactor.confirmed_at.is_(None)
        )
    )
    if sealed is None:
        return None
    return _enrolment(box(settings).open(sealed), email)


def _enrolment(secret: str, email: str) -> Enrolment:
    uri = pyotp.TOTP(secret).provisioning_uri(name=email, issuer_name=ISSUER)
    return Enrolment(secret, uri, qr_svg(uri))


def qr_svg(uri: str) -> str:
    """The URI as a QR code, an inline SVG drawn on the server (no image fetched from anyone),
    titled for screen readers."""
    svg: str = segno.make(uri, error="m").svg_inline(
        scale=4,
        title="QR code of the authenticator setup key",
        dark="#000",
        light="#fff",
        omitsize=True,  # a viewBox, no fixed size: the page's style sizes it
    )
    # An image, named by its title, for assistive technology.
    return svg.replace("<svg ", '<svg role="img" ', 1)


def step_of(now: datetime) -> int:
    return int(now.timestamp()) // STEP_SECONDS


def _matching_step(secret: str, code: str, now: datetime) -> int | None:
    """The step (now's, or one either side) whose code `code` is, compared in constant time."""
    if len(code) != _CODE_DIGITS or not code.isascii() or not code.isdigit():
        return None
    totp = pyotp.TOTP(secret)
    current = step_of(now)
    found = None
    for step in (current - 1, current, current + 1):
        if hmac.compare_digest(totp.at(step * STEP_SECONDS).encode(), code.encode()):
            found = step
    return found


async def _use_code(
    conn: AsyncConnection, settings: Settings, user_id: uuid.UUID, code: str, now: datetime,
    *, confirmed: bool,
) -> bool:  # fmt: skip
    row = (
        await conn.execute(
            select(TwoFactor.secret_encrypted, TwoFactor.confirmed_at).where(
                TwoFactor.user_id == user_id
            )
        )
    ).first()
    if row is None or (row.confirmed_at is not None) != confirmed:
        return False
    try:
        secret = box(settings).open(row.secret_encrypted)
    except SecretUnreadable:
        # Sealed under a key this process does not hold: no code can match; the recovery
        # codes (hashed, not sealed) still sign in. hangar's fault, so said loudly.
        log.error(
            "two-factor secret of account %s opens with no key held (HANGAR_SECRET_KEY, "
            "HANGAR_SECRET_KEY_PREVIOUS): its codes are refused; recovery codes still work",
            user_id,
            extra={"user_id": str(user_id)},
        )
        return False
    step = _matching_step(secret, code.strip(), now)
    if step is None:
        return False
    # Used once: only a later step than the last one used moves it on.
    used = await conn.execute(
        update(TwoFactor)
        .where(
            TwoFactor.user_id == user_id,
            (TwoFactor.last_step.is_(None)) | (TwoFactor.last_step < step),
        )
        .values(last_step=step)
        .returning(TwoFactor.user_id)
    )
    return used.first() is not None


def _new_recovery_code() -> str:
    raw = base64.b32encode(secrets.token_bytes(10)).decode().lower()  # 80 bits, 16 characters
    return "-".join(raw[i : i + 4] for i in range(0, 16, 4))


def _normalized(code: str) -> str:
    return code.strip().lower().replace("-", "").replace(" ", "")


async def _new_recovery_codes(
    conn: AsyncConnection, user_id: uuid.UUID, now: datetime
) -> list[str]:
    codes = [_new_recovery_code() for _ in range(RECOVERY_CODES)]
    await conn.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))
    await conn.execute(
        insert(RecoveryCode),
        [
            {"id": new_id(), "user_id": user_id, "code_hash": token_digest(_normalized(c)),
             "created_at": now, "used_at": None}
            for c in codes
        ],
    )  # fmt: skip
    return codes


async def confirm(
    conn: AsyncConnection, settings: Settings, user_id: uuid.UUID, code: str, now: datetime
) -> list[str] | None:
    """Turns two-factor sign-in on with a first code from the app: the recovery codes (shown
    this once), or None for a wrong code (or nothing to confirm)."""
    if not await _use_code(conn, settings, user_id, code, now, confirmed=False):
        return None
    await conn.execute(
        update(TwoFactor).where(TwoFactor.user_id == user_id).values(confirmed_at=now)
    )
    return await _new_recovery_codes(conn, user_id, now)


async def check(
    conn: AsyncConnection,
    settings: Settings,
    user_id: uuid.UUID,
    now: datetime,
    *,
    code: str | None = None,
    recovery_code: str | None = None,
) -> bool:
    """Whether the account's second factor is proven: a code from the app (never one used
    before), or a recovery code, which is used up."""
    if code is not None:
        return await _use_code(conn, settings, user_id, code, now, confirmed=True)
    if recovery_code is None or not await is_enabled(conn, user_id):
        return False
    used = await conn.execute(
        update(RecoveryCode)
        .where(
            RecoveryCode.user_id == user_id,
            RecoveryCode.code_hash == token_digest(_normalized(recovery_code)),
            RecoveryCode.used_at.is_(None),
        )
        .values(used_at=now)
        .returning(RecoveryCode.id)
    )
    return used.first() is not None


async def recovery_codes_left(conn: AsyncConnection, user_id: uuid.UUID) -> int:
    found = await conn.scalars(
        select(RecoveryCode.id).where(
            RecoveryCode.user_id == user_id, RecoveryCode.used_at.is_(None)
        )
    )
    return len(list(found))


async def remove(conn: AsyncConnection, user_id: uuid.UUID) -> bool:
    """The account's second factor, its recovery codes and any challenge go; whether it had
    one (confirmed or not)."""
    await conn.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))
    await conn.execute(delete(SignInChallenge).where(SignInChallenge.user_id == user_id))
    gone = await conn.execute(
        delete(TwoFactor).where(TwoFactor.user_id == user_id).returning(TwoFactor.user_id)
    )
    return gone.first() is not None


# --- resealing under the current key (`hangar secrets reseal`) -----------------------------

RESEAL_BATCH = 100


@dataclass
class Resealed:
    resealed: int = 0
    already_current: int = 0
    # Accounts whose secret no key held opens: their codes are refused until they set up
    # their app again (or the operator resets it); the previous key cannot go while any is.
    unreadable: list[uuid.UUID] = field(default_factory=list)


async def reseal_all(engine: AsyncEngine, settings: Settings) -> Resealed:
    """Every stored authenticator secret sealed again under the current key, in batches by
    account (keyset), each row written only if its sealed value is still the one read."""
    sealer, found, after = box(settings), Resealed(), None
    while True:
        query = select(TwoFactor.user_id, TwoFactor.secret_encrypted).order_by(TwoFactor.user_id)
        if after is not None:
            query = query.where(TwoFactor.user_id > after)
        async with engine.begin() as conn:
            rows = (await conn.execute(query.limit(RESEAL_BATCH))).all()
            for row in rows:
                try:
                    again = sealer.resealed(row.secret_encrypted)
                except SecretUnreadable:
                    found.unreadable.append(row.user_id)
                    continue
                if again is None:
                    found.already_current += 1
                    continue
                await conn.execute(
                    update(TwoFactor)
                    .where(
                        TwoFactor.user_id == row.user_id,
                        TwoFactor.secret_encrypted == row.secret_encrypted,
                    )
                    .values(secret_encrypted=again)
                )
                found.resealed += 1
        if len(rows) < RESEAL_BATCH:
            return found
        after = rows[-1].user_id
