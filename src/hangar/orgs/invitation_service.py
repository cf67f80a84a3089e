"""The invited person's actions: open a link, accept it, make an account through it.

Shared by /api/invitations/{token} (orgs/invitation_routes.py) and the invitation page
(web/invitations.py); every unusable link is the same 404 (invitations.not_valid). Opening
and accepting run in the caller's request transaction (`hangar.kit.routing.Tx`).
"""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth import sessions
from hangar.auth.passwords import hashed
from hangar.kit.container import Services
from hangar.orgs import invitations
from hangar.orgs.actors import Started, started


async def open_link(conn: AsyncConnection, token: str, now: datetime) -> invitations.Open:
    """What a usable link invites to; 404 for any other."""
    found = await invitations.find(conn, token, now)
    if found is None:
        raise invitations.not_valid()
    return found


async def accept(conn: AsyncConnection, token: str, user_id: uuid.UUID, now: datetime) -> None:
    await invitations.accept(conn, token, user_id, now)


async def choose_password(services: Services, token: str, password: str) -> Started:
    """Makes the invited email's account with this password through its link (only while no
    account has the email: 409 ACCOUNT_EXISTS otherwise), accepts, and starts a session.

    Its transactions are its own, not the request's: argon2 is deliberately slow and runs
    between them, outside any, and the request's body is validated before any database work.
    """
    async with services.engine.connect() as conn:
        found = await invitations.find(conn, token, services.clock.now())
    if found is None:
        raise invitations.not_valid()
    if found.account_id is not None:  # refused before the hash, which costs a core a while
        raise invitations.AccountExists()
    password_hash = await hashed(password)
    now = services.clock.now()
    async with services.engine.begin() as conn:
        # Checked again under lock: the link may have been used meanwhile.
        accepted = await invitations.set_password(conn, token, password_hash, now)
        return await started(
            conn, await sessions.start(conn, accepted.user_id, accepted.email, now)
        )
