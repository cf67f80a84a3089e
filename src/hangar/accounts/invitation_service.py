"""The invited person's actions: open a link, accept it, choose a password through it.

Shared by /api/invitations/{token} (accounts/invitation_routes.py) and the invitation page
(web/invitations.py); every unusable link is the same 404 (invitations.not_valid)."""

from __future__ import annotations

import asyncio
import uuid

from hangar.auth import sessions
from hangar.auth.passwords import hash_password
from hangar.kit.services import Services
from hangar.orgs import invitations


async def open_link(services: Services, token: str) -> invitations.Open:
    """What a usable link invites to; 404 for any other."""
    async with services.engine.connect() as conn:
        found = await invitations.find(conn, token, services.clock.now())
    if found is None:
        raise invitations.not_valid()
    return found


async def accept(services: Services, token: str, user_id: uuid.UUID) -> None:
    async with services.engine.begin() as conn:
        await invitations.accept(conn, token, user_id, services.clock.now())


async def choose_password(
    services: Services, token: str, password: str
) -> tuple[str, sessions.SignedIn]:
    """Sets the invited email's password through its link, accepts, and starts a session (the
    cookie's value and the session)."""
    async with services.engine.connect() as conn:
        found = await invitations.find(conn, token, services.clock.now())
    if found is None or not found.needs_password:
        raise invitations.not_valid()
    # argon2 is deliberately slow: off the event loop, and outside the transaction.
    hashed = await asyncio.to_thread(hash_password, password)
    now = services.clock.now()
    async with services.engine.begin() as conn:
        # Checked again under lock: the link may have been used meanwhile.
        accepted = await invitations.set_password(conn, token, hashed, now)
        return await sessions.start(conn, accepted.user_id, accepted.email, now)
