"""The demo organization: created once with seeded data, an admin login and a key; on every
later run the same organization with a fresh password and key."""

from __future__ import annotations

import random
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.auth.models import User
from hangar.auth.passwords import hash_password
from hangar.keys.issuing import issue_key
from hangar.keys.models import ApiKey
from hangar.kit.scopes import SCOPES
from hangar.orgs.commands import create_org
from hangar.orgs.members import Contact, add_member
from hangar.orgs.models import Membership, Organization, Role
from hangar.seed.seeding import Progress, Sizes, seed_org

ORG_NAME = "Demo Flight School"
ADMIN_EMAIL = "admin@demo.hangar.example"  # .example is reserved (RFC 2606): no real mailbox
KEY_NAME = "demo"
# A few seconds on SQLite, and enough rows to page through and filter.
SIZES = Sizes(
    aircraft=12, members=60, reservations=3000, squawks=120, maintenance_logs=150, work_orders=60
)


@dataclass(frozen=True)
class DemoAccess:
    org_id: uuid.UUID
    created: bool
    email: str
    password: str
    key: str


async def prepare_demo(
    conn: AsyncConnection,
    now: datetime,
    *,
    rng: random.Random | None = None,
    progress: Progress | None = None,
) -> DemoAccess:
    """The demo organization (created and seeded on the first run), with the admin's
    password reset and a new key holding every scope; earlier demo keys are revoked.

    Keys and passwords are stored only as hashes, so a rerun cannot show the old ones again:
    it replaces them.
    """
    found = await _find(conn)
    if found is None:
        org_id = await create_org(conn, ORG_NAME, now)
        person = Contact(ADMIN_EMAIL, "Avery", "Admin")
        admin = await add_member(conn, org_id, person, role="admin", now=now)
        admin_id = admin.user_id
        await seed_org(conn, org_id, SIZES, now=now, rng=rng, progress=progress)
    else:
        org_id, admin_id = found
        await conn.execute(
            update(ApiKey)
            .where(ApiKey.org_id == org_id, ApiKey.name == KEY_NAME, ApiKey.revoked_at.is_(None))
            .values(revoked_at=now)
        )
    # The operator's own demo login, on a reserved .example address: set here, as add_member
    # never sets a password.
    password = secrets.token_urlsafe(12)
    await conn.execute(
        update(User).where(User.id == admin_id).values(password_hash=hash_password(password))
    )
    issued = await issue_key(
        conn, org_id, name=KEY_NAME, scopes=list(SCOPES), now=now, created_by=admin_id
    )
    return DemoAccess(org_id, found is None, ADMIN_EMAIL, password, issued.key)


async def _find(conn: AsyncConnection) -> tuple[uuid.UUID, uuid.UUID] | None:
    """(org id, admin user id) of the demo organization, if an earlier run made it."""
    stmt = (
        select(Membership.org_id, Membership.user_id)
        .join(User, User.id == Membership.user_id)
        .join(Organization, Organization.id == Membership.org_id)
        .join(Role, Role.id == Membership.role_id)
        .where(
            User.email == ADMIN_EMAIL,
            Organization.name == ORG_NAME,
            Role.name == "admin",
            Membership.deleted_at.is_(None),
        )
        .order_by(Organization.created_at, Organization.id)
        .limit(1)
    )
    row = (await conn.execute(stmt)).first()
    return None if row is None else (row.org_id, row.user_id)


def curl_base(host: str, port: int) -> str:
    """Where a client on this machine reaches a server listening on host:port."""
    if host in ("", "0.0.0.0"):  # noqa: S104 - a listening address, not a bind
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def instructions(access: DemoAccess, public_url: str, host: str, port: int) -> str:
    verb = "Created" if access.created else "Reusing"
    curl = (
        f'curl -H "Authorization: Bearer {access.key}" '
        f"{curl_base(host, port)}/api/v1/external/aircraft"
    )
    return "\n".join(
        (
            f"{verb} {ORG_NAME} (organization {access.org_id}).",
            "",
            f"  Sign in at  {public_url}/login",
            f"  Email       {access.email}",
            f"  Password    {access.password}",
            f"  Settings    {public_url}/settings  (API keys, webhooks, Test, delivery log)",
            f"  API docs    {public_url}/docs",
            f"  API key     {access.key}",
            "",
            "The password and key are new on every run; earlier demo keys are revoked.",
            "Try the API:",
            "",
            f"  {curl}",
            "",
            "Webhooks go only to public https:// URLs: use one from a request inspector",
            "(such as webhook.site), press Test, and the attempt shows in the delivery log.",
            "",
        )
    )
