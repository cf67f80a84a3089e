"""Retention of sessions and invitations: a session goes once past its absolute expiry; an
invitation, used or not, a week after it expired (its link answers the same 404 either
way; the row is kept a while for whoever asks why a link did not work). Live ones stay, and
so does a pending membership whose invitation went. Both organizations alike."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select, update

from hangar.auth import sessions
from hangar.auth.models import UserSession
from hangar.kit.container import Services
from hangar.orgs.invitations import LIFETIME
from hangar.orgs.members import Contact, invite_member
from hangar.orgs.models import Invitation, Membership
from hangar.retention.job import INVITATION_GRACE
from tests.fixtures.factories import Org
from tests.fixtures.retention import NOW, left, pruned


async def session_from(services: Services, org: Org, signed_in: datetime) -> uuid.UUID:
    async with services.engine.begin() as conn:
        _, session = await sessions.start(conn, org.admin_id, "admin@example.org", signed_in)
    return session.session_id


async def test_sessions_go_once_past_their_expiry(services: Services, org: Org, other: Org) -> None:
    expired, live = [], []
    for owner in (org, other):
        expired.append(await session_from(services, owner, NOW - timedelta(hours=12, seconds=1)))
        live.append(await session_from(services, owner, NOW - timedelta(hours=11)))
        live.append(await session_from(services, owner, NOW))

    await pruned(services)

    assert await left(services.engine, UserSession, expired + live) == set(live)


async def invitation(
    services: Services, org: Org, issued: datetime, accepted: datetime | None = None
) -> tuple[uuid.UUID, uuid.UUID]:
    """An invitation issued at `issued` (and marked used at `accepted`): (its id, its
    pending membership's)."""
    person = Contact(f"invitee-{uuid.uuid4().hex[:10]}@example.org", "In", "Vitee")
    async with services.engine.begin() as conn:
        invited = await invite_member(conn, org.id, person, role="member", now=issued)
        membership_id = invited.member.membership_id
        invitation_id = await conn.scalar(
            select(Invitation.id).where(Invitation.membership_id == membership_id)
        )
        if accepted is not None:
            await conn.execute(
                update(Invitation)
                .where(Invitation.id == invitation_id)
                .values(accepted_at=accepted)
            )
    assert invitation_id is not None
    return invitation_id, membership_id


async def test_invitations_go_a_week_after_they_expired_used_or_not(
    services: Services, org: Org, other: Org
) -> None:
    row_lives = LIFETIME + INVITATION_GRACE
    assert row_lives == timedelta(days=14)  # what the times below assume
    gone: list[uuid.UUID] = []
    stay: list[uuid.UUID] = []
    memberships: list[uuid.UUID] = []
    for owner in (org, other):
        for issued, accepted, goes in (
            (NOW - timedelta(days=14, hours=1), None, True),  # expired 7 days 1 hour ago
            (NOW - timedelta(days=20), NOW - timedelta(days=19), True),  # used long ago
            (NOW - timedelta(days=14) + timedelta(hours=1), None, False),  # in its grace
            (NOW - timedelta(days=3), NOW - timedelta(days=2), False),  # used, recent
            (NOW - timedelta(days=1), None, False),  # live
        ):
            invitation_id, membership_id = await invitation(services, owner, issued, accepted)
            (gone if goes else stay).append(invitation_id)
            memberships.append(membership_id)

    await pruned(services)

    assert await left(services.engine, Invitation, gone + stay) == set(stay)
    # Nothing refers to an invitation; its membership is another matter, and stays.
    assert await left(services.engine, Membership, memberships) == set(memberships)
