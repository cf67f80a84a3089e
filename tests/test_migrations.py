"""Migration 0005 on a database that holds data: names and phone move from each account to
each of its memberships, and every membership keeps its status (today's members stay
active). Runs on SQLite, and on PostgreSQL when the run uses it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import command

from hangar.db.base import UTCDateTime
from hangar.db.engine import make_engine
from hangar.db.migrate import alembic_config, upgrade_async
from hangar.ids import new_id

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
# The tables as revision 0004 has them: names and phone on the account.
USERS = sa.table(
    "users",
    sa.column("id", sa.Uuid()),
    sa.column("email", sa.String()),
    sa.column("password_hash", sa.String()),
    sa.column("first_name", sa.String()),
    sa.column("last_name", sa.String()),
    sa.column("phone", sa.String()),
    sa.column("created_at", UTCDateTime()),
)
ORGS = sa.table(
    "organizations",
    sa.column("id", sa.Uuid()),
    sa.column("name", sa.String()),
    sa.column("created_at", UTCDateTime()),
)
ROLES = sa.table(
    "roles", sa.column("id", sa.Uuid()), sa.column("org_id", sa.Uuid()), sa.column("name")
)
MEMBERSHIPS = sa.table(
    "memberships",
    sa.column("id", sa.Uuid()),
    sa.column("org_id", sa.Uuid()),
    sa.column("user_id", sa.Uuid()),
    sa.column("role_id", sa.Uuid()),
    sa.column("status", sa.String()),
    sa.column("is_discovery", sa.Boolean()),
    sa.column("joined_at", UTCDateTime()),
    sa.column("deleted_at", UTCDateTime()),
)

# And as 0005 has them: the account holds no names; the membership holds its organization's.
CONTACT = ("first_name", "last_name", "phone")
ACCOUNTS = sa.table("users", *(sa.column(c.name, c.type) for c in USERS.c if c.name not in CONTACT))
RECORDS = sa.table(
    "memberships",
    *(sa.column(c.name, c.type) for c in MEMBERSHIPS.c),
    *(sa.column(n, sa.String()) for n in CONTACT),
)


def _membership(org: uuid.UUID, user: uuid.UUID, role: uuid.UUID, **values: Any) -> dict[str, Any]:
    row = {
        "id": new_id(),
        "org_id": org,
        "user_id": user,
        "role_id": role,
        "status": "active",
        "is_discovery": False,
        "joined_at": T,
        "deleted_at": None,
    }
    return {**row, **values}


async def test_0005_copies_each_accounts_names_to_its_memberships_and_keeps_them_active(
    blank_database_url: str,
) -> None:
    url = blank_database_url
    await upgrade_async(url, "0004")
    one, two = new_id(), new_id()
    roles = {(org, name): new_id() for org in (one, two) for name in ("admin", "member")}
    alice, bob, carol = new_id(), new_id(), new_id()
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                sa.insert(ORGS),
                [{"id": o, "name": f"Org {o}", "created_at": T} for o in (one, two)],
            )
            await conn.execute(
                sa.insert(ROLES),
                [{"id": i, "org_id": o, "name": n} for (o, n), i in roles.items()],
            )
            await conn.execute(
                sa.insert(USERS),
                [
                    {"id": alice, "email": "alice@example.org", "password_hash": "h",
                     "first_name": "Alice", "last_name": "Aviator", "phone": "+15550001",
                     "created_at": T},
                    {"id": bob, "email": "bob@example.org", "password_hash": None,
                     "first_name": "Bob", "last_name": "Builder", "phone": None, "created_at": T},
                    {"id": carol, "email": "carol@example.org", "password_hash": None,
                     "first_name": "Carol", "last_name": "", "phone": "+15550003",
                     "created_at": T},
                ],
            )  # fmt: skip
            await conn.execute(
                sa.insert(MEMBERSHIPS),
                [
                    _membership(one, alice, roles[one, "admin"]),
                    _membership(two, alice, roles[two, "member"], is_discovery=True),
                    _membership(one, bob, roles[one, "member"], status="inactive"),
                    _membership(two, bob, roles[two, "member"], deleted_at=T),
                    _membership(one, carol, None, status="pending", joined_at=None),
                ],
            )

        await upgrade_async(url)

        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT org_id, user_id, status, is_discovery, joined_at, deleted_at,"
                        " first_name, last_name, phone FROM memberships"
                    )
                )
            ).all()
            user_columns = await conn.run_sync(
                lambda c: {col["name"] for col in sa.inspect(c).get_columns("users")}
            )
            invitations = await conn.scalar(sa.text("SELECT count(*) FROM invitations"))
    finally:
        await engine.dispose()

    found = {
        (uuid.UUID(str(r.org_id)), uuid.UUID(str(r.user_id))): (
            r.status,
            bool(r.is_discovery),
            r.joined_at is not None,
            r.deleted_at is not None,
            r.first_name,
            r.last_name,
            r.phone,
        )
        for r in rows
    }
    assert found == {
        (one, alice): ("active", False, True, False, "Alice", "Aviator", "+15550001"),
        (two, alice): ("active", True, True, False, "Alice", "Aviator", "+15550001"),
        (one, bob): ("inactive", False, True, False, "Bob", "Builder", None),
        (two, bob): ("active", False, True, True, "Bob", "Builder", None),
        (one, carol): ("pending", False, False, False, "Carol", "", "+15550003"),
    }
    assert user_columns == {"id", "email", "password_hash", "created_at"}
    assert invitations == 0


async def test_0005_downgrades_back_to_one_record_per_account(blank_database_url: str) -> None:
    url = blank_database_url
    await upgrade_async(url)
    org, role, user, lonely = new_id(), new_id(), new_id(), new_id()
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(ORGS).values(id=org, name="Org", created_at=T))
            await conn.execute(sa.insert(ROLES).values(id=role, org_id=org, name="member"))
            await conn.execute(
                sa.insert(ACCOUNTS),
                [
                    {"id": who, "email": email, "password_hash": None, "created_at": T}
                    for who, email in ((user, "kept@example.org"), (lonely, "lonely@example.org"))
                ],
            )
            await conn.execute(
                sa.insert(RECORDS).values(
                    **_membership(org, user, role), first_name="Kept", last_name="N", phone=None
                )
            )

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0004")

        async with engine.connect() as conn:
            rows = await conn.execute(sa.text("SELECT email, first_name FROM users"))
            names = {row.email: row.first_name for row in rows}
    finally:
        await engine.dispose()
    assert names == {"kept@example.org": "Kept", "lonely@example.org": ""}
