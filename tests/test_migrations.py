"""Migrations on a database that holds data. Runs on SQLite, and on PostgreSQL when the run
uses it.

- 0005: names and phone move from each account to each of its memberships, and every
  membership keeps its status (today's members stay active).
- 0006: each membership and invitation gets the email (copied from the account), and
  `users.email` becomes nullable for invitations' placeholders, still unique where set.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.base import UTCDateTime
from hangar.db.engine import make_engine
from hangar.db.migrate import alembic_config, code_revisions, upgrade_async
from hangar.foundation.ids import new_id
from hangar.webhooks.egress.url_parsing import parse_webhook_url

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


@asynccontextmanager
async def at_revision(url: str, revision: str = "head") -> AsyncIterator[AsyncEngine]:
    """The database of `url` migrated up to `revision`, and an engine on it (disposed after)."""
    await upgrade_async(url, revision)
    engine = make_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


def _account(
    user: uuid.UUID, email: str | None, password_hash: str | None = None
) -> dict[str, Any]:
    """An account as 0005 and 0006 have it (no names: they are the memberships')."""
    return {"id": user, "email": email, "password_hash": password_hash, "created_at": T}


def _membership(
    org: uuid.UUID, user: uuid.UUID, role: uuid.UUID | None, **values: Any
) -> dict[str, Any]:
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


def _table(table_name: str, /, *columns: str, **types: Any) -> sa.TableClause:
    """`table_name` with `columns`, each a UUID unless `types` names its type."""
    return sa.table(table_name, *(sa.column(c, types.get(c, sa.Uuid())) for c in columns))


def _a_delivery(
    delivery: uuid.UUID,
    org: uuid.UUID | None = None,
    sub: uuid.UUID | None = None,
    event: uuid.UUID | None = None,
    *,
    enabled: bool = True,
) -> list[tuple[sa.TableClause, dict[str, Any]]]:
    """The rows of one failed delivery as every revision since 0007 can hold them: its
    organization, subscription (disabled after 5 failures unless `enabled`) and event."""
    org, sub, event = org or new_id(), sub or new_id(), event or new_id()
    failures = 0 if enabled else 5
    return [
        (ORGS, {"id": org, "name": "O", "created_at": T}),
        (
            _table("webhook_subscriptions", "id", "org_id", "name", "url", "events",
                   "secret_encrypted", "secret_prefix", "enabled", "consecutive_failures",
                   "created_at", "updated_at", name=sa.String(), url=sa.String(),
                   events=sa.JSON(), secret_encrypted=sa.String(), secret_prefix=sa.String(),
                   enabled=sa.Boolean(), consecutive_failures=sa.Integer(),
                   created_at=UTCDateTime(), updated_at=UTCDateTime()),
            {"id": sub, "org_id": org, "name": "S", "url": "https://h.example.com/",
             "events": ["*"], "secret_encrypted": "x", "secret_prefix": "abcdabcd",
             "enabled": enabled, "consecutive_failures": failures, "created_at": T,
             "updated_at": T},
        ),
        (
            _table("events", "id", "org_id", "name", "data", "created_at", name=sa.String(),
                   data=sa.String(), created_at=UTCDateTime()),
            {"id": event, "org_id": org, "name": "squawk.created", "data": "{}",
             "created_at": T},
        ),
        (
            _table("webhook_deliveries", "id", "org_id", "subscription_id", "event_id",
                   "event_name", "status", "attempts_made", "next_attempt_at", "created_at",
                   "completed_at", event_name=sa.String(), status=sa.String(),
                   attempts_made=sa.Integer(), next_attempt_at=UTCDateTime(),
                   created_at=UTCDateTime(), completed_at=UTCDateTime()),
            {"id": delivery, "org_id": org, "subscription_id": sub, "event_id": event,
             "event_name": "squawk.created", "status": "failed", "attempts_made": 3,
             "next_attempt_at": T, "created_at": T, "completed_at": T},
        ),
    ]  # fmt: skip


async def test_0005_copies_each_accounts_names_to_its_memberships_and_keeps_them_active(
    blank_database_url: str,
) -> None:
    url = blank_database_url
    one, two = new_id(), new_id()
    roles = {(org, name): new_id() for org in (one, two) for name in ("admin", "member")}
    alice, bob, carol = new_id(), new_id(), new_id()
    async with at_revision(url, "0004") as engine:
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
    org, role, user, lonely = new_id(), new_id(), new_id(), new_id()
    async with at_revision(url, "0005") as engine:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(ORGS).values(id=org, name="Org", created_at=T))
            await conn.execute(sa.insert(ROLES).values(id=role, org_id=org, name="member"))
            await conn.execute(
                sa.insert(ACCOUNTS),
                [_account(user, "kept@example.org"), _account(lonely, "lonely@example.org")],
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
    assert names == {"kept@example.org": "Kept", "lonely@example.org": ""}


INVITES = sa.table(
    "invitations",
    sa.column("id", sa.Uuid()),
    sa.column("membership_id", sa.Uuid()),
    sa.column("org_id", sa.Uuid()),
    sa.column("token_hash", sa.String()),
    sa.column("created_at", UTCDateTime()),
    sa.column("expires_at", UTCDateTime()),
)
# And as 0006 has them: the membership and the invitation name the email.
MEMBERS_0006 = sa.table(
    "memberships", *(sa.column(c.name, c.type) for c in RECORDS.c), sa.column("email", sa.String())
)


def _record(
    org: uuid.UUID, user: uuid.UUID, role: uuid.UUID, email: str, **values: Any
) -> dict[str, Any]:
    """A membership as 0006 has it: the organization's record, email included."""
    return {**_membership(org, user, role, **values), **dict.fromkeys(CONTACT, "N"), "email": email}


async def _two_orgs_with_a_member_role(conn: Any) -> dict[uuid.UUID, uuid.UUID]:
    """Two new organizations, each with a `member` role: {organization id: its role's id}."""
    roles = {new_id(): new_id() for _ in range(2)}
    await conn.execute(
        sa.insert(ORGS), [{"id": o, "name": f"Org {o}", "created_at": T} for o in roles]
    )
    await conn.execute(
        sa.insert(ROLES), [{"id": i, "org_id": o, "name": "member"} for o, i in roles.items()]
    )
    return roles


async def test_0006_gives_every_membership_and_invitation_its_email(
    blank_database_url: str,
) -> None:
    url = blank_database_url
    alice, bob = new_id(), new_id()
    bobs_invited = new_id()
    async with at_revision(url, "0005") as engine:
        async with engine.begin() as conn:
            roles = await _two_orgs_with_a_member_role(conn)
            one, two = roles
            await conn.execute(
                sa.insert(ACCOUNTS),
                [_account(alice, "alice@example.org", "h"), _account(bob, "bob@example.org")],
            )
            await conn.execute(
                sa.insert(RECORDS),
                [
                    {**_membership(one, alice, roles[one]), **dict.fromkeys(CONTACT, "A")},
                    {**_membership(two, alice, roles[two]), **dict.fromkeys(CONTACT, "A2")},
                    {
                        **_membership(one, bob, roles[one], status="pending", joined_at=None),
                        "id": bobs_invited,
                        **dict.fromkeys(CONTACT, "B"),
                    },
                ],
            )
            await conn.execute(
                sa.insert(INVITES).values(
                    id=new_id(),
                    membership_id=bobs_invited,
                    org_id=one,
                    token_hash="0" * 64,
                    created_at=T,
                    expires_at=T,
                )
            )

        await upgrade_async(url)

        async with engine.connect() as conn:
            emails = {
                (uuid.UUID(str(r.org_id)), uuid.UUID(str(r.user_id))): r.email
                for r in await conn.execute(
                    sa.text("SELECT org_id, user_id, email FROM memberships")
                )
            }
            invited = (await conn.execute(sa.text("SELECT email FROM invitations"))).scalars().all()

            def shape(c: sa.Connection) -> tuple[dict[str, bool], set[str]]:
                inspector = sa.inspect(c)
                nullable = {
                    f"{table}.email": next(
                        col["nullable"]
                        for col in inspector.get_columns(table)
                        if col["name"] == "email"
                    )
                    for table in ("users", "memberships", "invitations")
                }
                indexes = {i["name"] or "" for i in inspector.get_indexes("memberships")}
                return nullable, indexes

            nullable, indexes = await conn.run_sync(shape)
        # Placeholders (no email) may be many; an email is still one account's.
        async with engine.begin() as conn:
            await conn.execute(
                sa.insert(ACCOUNTS),
                [_account(new_id(), None) for _ in range(2)],
            )
        with pytest.raises(sa.exc.IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(ACCOUNTS).values(**_account(new_id(), "alice@example.org"))
                )

    assert emails == {
        (one, alice): "alice@example.org",
        (two, alice): "alice@example.org",
        (one, bob): "bob@example.org",
    }
    assert invited == ["bob@example.org"]
    assert nullable == {"users.email": True, "memberships.email": False, "invitations.email": False}
    assert "ix_memberships_org_id_email" in indexes


async def test_0006_downgrades_placeholders_to_the_accounts_of_their_emails(
    blank_database_url: str,
) -> None:
    url = blank_database_url
    account, for_account = new_id(), new_id()
    first_new, second_new = sorted([new_id(), new_id()])  # ids made in one millisecond
    async with at_revision(url) as engine:
        async with engine.begin() as conn:
            roles = await _two_orgs_with_a_member_role(conn)
            one, two = roles
            await conn.execute(
                sa.insert(ACCOUNTS),
                [
                    _account(account, "has@example.org", "h"),
                    *(_account(p, None) for p in (for_account, first_new, second_new)),
                ],
            )
            pending = {"status": "pending", "joined_at": None}
            await conn.execute(
                sa.insert(MEMBERS_0006),
                [
                    _record(one, account, roles[one], "has@example.org"),
                    _record(two, for_account, roles[two], "has@example.org", **pending),
                    _record(one, first_new, roles[one], "new@example.org", **pending),
                    _record(two, second_new, roles[two], "new@example.org", **pending),
                ],
            )

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0005")

        async with engine.connect() as conn:
            users = {
                uuid.UUID(str(r.id)): r.email
                for r in await conn.execute(sa.text("SELECT id, email FROM users"))
            }
            held = {
                (uuid.UUID(str(r.org_id)), uuid.UUID(str(r.user_id))): r.status
                for r in await conn.execute(
                    sa.text("SELECT org_id, user_id, status FROM memberships")
                )
            }

    # The first new-email placeholder (by id) became the account; the rest moved to accounts.
    assert users == {account: "has@example.org", first_new: "new@example.org"}
    assert held == {
        (one, account): "active",
        (two, account): "pending",
        (one, first_new): "pending",
        (two, first_new): "pending",
    }


async def test_0008_keeps_existing_deliveries_and_attempts_and_goes_back(
    blank_database_url: str,
) -> None:
    """0008 (the explaining log, Redeliver): a delivery and an attempt from before read
    unchanged, the delivery's current series begins at its first attempt, and the way back
    drops only what 0008 added."""
    url = blank_database_url
    delivery = new_id()
    rows = [
        *_a_delivery(delivery),
        (
            _table("webhook_attempts", "id", "delivery_id", "number", "started_at",
                   "status_code", number=sa.Integer(), started_at=UTCDateTime(),
                   status_code=sa.Integer()),
            {"id": new_id(), "delivery_id": delivery, "number": 1, "started_at": T,
             "status_code": 503},
        ),
    ]  # fmt: skip
    async with at_revision(url, "0007") as engine:
        async with engine.begin() as conn:
            for target, values in rows:
                await conn.execute(sa.insert(target).values(**values))
        await upgrade_async(url)
        async with engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.text("SELECT status, attempts_made, series_from FROM webhook_deliveries")
                )
            ).one()
            assert tuple(row) == ("failed", 3, 0)
            attempt = (
                await conn.execute(
                    sa.text("SELECT status_code, outcome, request_headers FROM webhook_attempts")
                )
            ).one()
            assert tuple(attempt) == (503, None, None)
            assert await conn.scalar(sa.text("SELECT count(*) FROM webhook_redeliveries")) == 0

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0007")

        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("webhook_attempts")}
            )
            assert "outcome" not in columns
            assert "response_body" in columns
            tables = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
            assert "webhook_redeliveries" not in tables


async def test_0012_places_the_events_recorded_before_it_per_organization_and_goes_back(
    blank_database_url: str,
) -> None:
    """0012 (the events API's log): each organization's existing events take positions 1, 2,
    ... in the order they were made, its end is set after them, and the way back drops what
    0012 added."""
    url = blank_database_url
    first, second = new_id(), new_id()
    events = sa.table(
        "events",
        *(sa.column(c, sa.Uuid()) for c in ("id", "org_id")),
        sa.column("name", sa.String()),
        sa.column("data", sa.String()),
        sa.column("created_at", UTCDateTime()),
    )
    later = T.replace(hour=9)
    made = [  # (org, created_at): inserted out of order, with ids out of time order
        (first, later),
        (second, T),
        (first, T),
        (first, T.replace(hour=5)),
    ]
    ids = [new_id() for _ in made]
    async with at_revision(url, "0011") as engine:
        async with engine.begin() as conn:
            for org in (first, second):
                await conn.execute(sa.insert(ORGS).values(id=org, name=str(org), created_at=T))
            for event_id, (org, at) in zip(reversed(ids), made, strict=True):
                await conn.execute(
                    sa.insert(events).values(
                        id=event_id, org_id=org, name="squawk.created", data="{}", created_at=at
                    )
                )
        await upgrade_async(url)
        async with engine.connect() as conn:
            placed = (
                await conn.execute(
                    sa.select(events.c.id, events.c.org_id, sa.column("position", sa.BigInteger))
                    .select_from(events)
                    .order_by(sa.column("position"))
                )
            ).all()
            ending = sa.select(
                sa.column("org_id", sa.Uuid()), sa.column("last_position", sa.BigInteger)
            ).select_from(sa.table("event_log_ends"))
            ends = {row.org_id: row.last_position for row in (await conn.execute(ending)).all()}
        by_made = {event_id: made[n] for n, event_id in enumerate(reversed(ids))}
        expected = sorted((e for e in ids if by_made[e][0] == first), key=lambda e: by_made[e][1])
        assert [(r.id, r.position) for r in placed if r.org_id == first] == list(
            zip(expected, [1, 2, 3], strict=True)
        )
        assert [r.position for r in placed if r.org_id == second] == [1]
        assert ends == {first: 3, second: 1}

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0011")

        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("events")}
            )
            assert "position" not in columns
            tables = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
            assert "event_log_ends" not in tables


async def test_0013_gives_subscriptions_an_empty_previous_secret_and_goes_back(
    blank_database_url: str,
) -> None:
    """0013 (secret rotation with overlap): an existing subscription reads as never rotated (no
    previous secret, no expiry), a rotated one keeps both, and the way back drops only the two
    columns 0013 added."""
    url = blank_database_url
    org, sub = new_id(), new_id()
    subscriptions = sa.table(
        "webhook_subscriptions",
        *(sa.column(c, sa.Uuid()) for c in ("id", "org_id")),
        *(sa.column(c, sa.String()) for c in ("name", "url", "secret_encrypted", "secret_prefix")),
        sa.column("events", sa.JSON()),
        sa.column("enabled", sa.Boolean()),
        sa.column("consecutive_failures", sa.Integer()),
        *(sa.column(c, UTCDateTime()) for c in ("created_at", "updated_at")),
    )
    previous = (
        sa.column("previous_secret_encrypted", sa.String()),
        sa.column("previous_secret_expires_at", UTCDateTime()),
    )
    rotated = sa.table(
        subscriptions.name, *(sa.column(c.name, c.type) for c in subscriptions.c), *previous
    )
    async with at_revision(url, "0012") as engine:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(ORGS).values(id=org, name="O", created_at=T))
            await conn.execute(
                sa.insert(subscriptions).values(
                    id=sub, org_id=org, name="S", url="https://h.example.com/", events=["*"],
                    secret_encrypted="sealed", secret_prefix="abcdabcd", enabled=True,
                    consecutive_failures=0, created_at=T, updated_at=T,
                )
            )  # fmt: skip
        await upgrade_async(url, "0013")
        async with engine.begin() as conn:
            row = (await conn.execute(sa.select(rotated).where(rotated.c.id == sub))).one()
            assert (row.secret_encrypted, *row[-2:]) == ("sealed", None, None)
            second = new_id()
            await conn.execute(
                sa.insert(rotated).values(
                    {**row._asdict(), "id": second, "previous_secret_encrypted": "was",
                     "previous_secret_expires_at": T}
                )
            )  # fmt: skip
            kept = (await conn.execute(sa.select(*previous).where(rotated.c.id == second))).one()
            assert tuple(kept) == ("was", T)

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0012")

        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {
                    c["name"] for c in sa.inspect(sync).get_columns("webhook_subscriptions")
                }
            )
            assert not {"previous_secret_encrypted", "previous_secret_expires_at"} & columns
            assert {"secret_encrypted", "secret_prefix", "deleted_at"} <= columns
            names = await conn.scalars(
                sa.select(subscriptions.c.secret_encrypted).order_by(subscriptions.c.id)
            )
            assert sorted(names) == ["sealed", "sealed"]


async def test_0014_brings_a_disabled_subscriptions_overcount_to_five(
    blank_database_url: str,
) -> None:
    """0014: a subscription disabled before 1.5.0 with deliveries still failing in flight could
    read 7; after the upgrade it reads the rule's 5, and no other counter moves."""
    url = blank_database_url
    org = new_id()
    subscriptions = sa.table(
        "webhook_subscriptions",
        *(sa.column(c, sa.Uuid()) for c in ("id", "org_id")),
        *(sa.column(c, sa.String()) for c in ("name", "url", "secret_encrypted", "secret_prefix")),
        sa.column("events", sa.JSON()),
        sa.column("enabled", sa.Boolean()),
        sa.column("consecutive_failures", sa.Integer()),
        *(sa.column(c, UTCDateTime()) for c in ("created_at", "updated_at")),
    )
    rows = {new_id(): (False, 7), new_id(): (False, 5), new_id(): (True, 3), new_id(): (True, 0)}
    async with at_revision(url, "0013") as engine:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(ORGS).values(id=org, name="O", created_at=T))
            for sub, (enabled, failures) in rows.items():
                await conn.execute(
                    sa.insert(subscriptions).values(
                        id=sub, org_id=org, name="S", url="https://h.example.com/",
                        events=["*"], secret_encrypted="sealed", secret_prefix="abcdabcd",
                        enabled=enabled, consecutive_failures=failures, created_at=T,
                        updated_at=T,
                    )
                )  # fmt: skip
        await upgrade_async(url, "0014")
        async with engine.connect() as conn:
            result = await conn.execute(
                sa.select(subscriptions.c.id, subscriptions.c.consecutive_failures)
            )
            counts = dict(result.tuples().all())
    assert counts == {sub: min(failures, 5) for sub, (_, failures) in rows.items()}


async def test_0015_gives_each_subscription_its_destination_as_new_ones_get_it_and_goes_back(
    blank_database_url: str,
) -> None:
    """0015 (issue 39): each existing subscription's destination is its URL's host and port,
    written exactly as url_parsing writes a new one's (the claim's share per destination
    must count old and new subscriptions to one host together); none reads as timing out;
    the way back drops only the two columns."""
    url = blank_database_url
    org = new_id()
    subscriptions = sa.table(
        "webhook_subscriptions",
        *(sa.column(c, sa.Uuid()) for c in ("id", "org_id")),
        *(sa.column(c, sa.String()) for c in ("name", "url", "secret_encrypted", "secret_prefix")),
        sa.column("events", sa.JSON()),
        sa.column("enabled", sa.Boolean()),
        sa.column("consecutive_failures", sa.Integer()),
        *(sa.column(c, UTCDateTime()) for c in ("created_at", "updated_at")),
    )
    added = sa.table(
        subscriptions.name,
        sa.column("id", sa.Uuid()),
        sa.column("destination", sa.String()),
        sa.column("timing_out_since", UTCDateTime()),
    )
    urls = {
        new_id(): "https://Hooks.Example.com/a?b=c",
        new_id(): "https://hooks.example.com:443/other",
        new_id(): "https://hooks.example.com:8443/",
        new_id(): "https://[2606:4700::1111]:9443/x",
        new_id(): "https://b\u00fccher.de/",
        new_id(): "https://93.184.216.34/",
    }
    async with at_revision(url, "0014") as engine:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(ORGS).values(id=org, name="O", created_at=T))
            for sub, address in urls.items():
                await conn.execute(
                    sa.insert(subscriptions).values(
                        id=sub, org_id=org, name="S", url=address, events=["*"],
                        secret_encrypted="sealed", secret_prefix="abcdabcd", enabled=True,
                        consecutive_failures=0, created_at=T, updated_at=T,
                    )
                )  # fmt: skip
        await upgrade_async(url, "0015")
        async with engine.connect() as conn:
            rows = (await conn.execute(sa.select(added))).all()
        got = {row.id: (row.destination, row.timing_out_since) for row in rows}
        assert got == {
            sub: (parse_webhook_url(address).destination, None) for sub, address in urls.items()
        }
        assert len({destination for destination, _ in got.values()}) == len(urls) - 1
        assert got[next(iter(urls))][0] == "hooks.example.com:443"

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0014")
        async with engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: {
                    c["name"] for c in sa.inspect(sync).get_columns("webhook_subscriptions")
                }
            )
            assert not {"destination", "timing_out_since"} & columns
            kept = await conn.scalars(sa.select(subscriptions.c.url))
            assert sorted(kept) == sorted(urls.values())


async def test_0016_adds_recover_and_the_disabled_notices_and_goes_back(
    blank_database_url: str,
) -> None:
    """0016 (issue 39): an existing delivery reads as queued by no recovery, recoveries and
    disabled notices can be written, and the way back drops only what 0016 added, keeping
    the deliveries (a recovered one as an ordinary delivery)."""
    url = blank_database_url
    org, user, sub, event, delivery = (new_id() for _ in range(5))

    table = _table
    deliveries = table("webhook_deliveries", "id", "status", status=sa.String())
    rows = [
        *_a_delivery(delivery, org, sub, event, enabled=False),
        (ACCOUNTS, _account(user, "admin@example.org")),
    ]
    recovered = table("webhook_deliveries", "id", "recovery_id")
    recoveries = table(
        "webhook_recoveries", "id", "org_id", "subscription_id", "requested_by",
        "requested_at", "since", "deliveries", requested_at=UTCDateTime(), since=UTCDateTime(),
        deliveries=sa.Integer(),
    )  # fmt: skip
    notices = table(
        "webhook_disabled_notices", "subscription_id", "disabled_at", "due_at", "failures",
        disabled_at=UTCDateTime(), due_at=UTCDateTime(), failures=sa.Integer(),
    )  # fmt: skip

    def names(sync: Any, kind: str, of: str | None = None) -> set[str]:
        inspector = sa.inspect(sync)
        if kind == "tables":
            return set(inspector.get_table_names())
        if kind == "columns":
            return {c["name"] for c in inspector.get_columns(of)}
        return {i["name"] for i in inspector.get_indexes(of)}

    async with at_revision(url, "0015") as engine:
        async with engine.begin() as conn:
            for target, values in rows:
                await conn.execute(sa.insert(target).values(**values))
        await upgrade_async(url, "0016")
        async with engine.begin() as conn:
            assert await conn.scalar(sa.select(recovered.c.recovery_id)) is None
            recovery = new_id()
            await conn.execute(
                sa.insert(recoveries).values(
                    id=recovery, org_id=org, subscription_id=sub, requested_by=user,
                    requested_at=T, since=T, deliveries=1,
                )
            )  # fmt: skip
            await conn.execute(
                sa.update(recovered).where(recovered.c.id == delivery).values(recovery_id=recovery)
            )
            await conn.execute(
                sa.insert(notices).values(subscription_id=sub, disabled_at=T, due_at=T)
            )
            assert await conn.scalar(sa.select(notices.c.failures)) == 0  # the server's default
            tables = await conn.run_sync(names, "tables")
            assert {"webhook_recoveries", "webhook_disabled_notices"} <= tables
            assert "ix_webhook_deliveries_recovering" in await conn.run_sync(
                names, "indexes", "webhook_deliveries"
            )
            assert "ix_events_org_created_at" in await conn.run_sync(names, "indexes", "events")

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0015")

        async with engine.connect() as conn:
            tables = await conn.run_sync(names, "tables")
            assert not {"webhook_recoveries", "webhook_disabled_notices"} & tables
            assert "recovery_id" not in await conn.run_sync(names, "columns", "webhook_deliveries")
            assert "ix_webhook_deliveries_recovering" not in await conn.run_sync(
                names, "indexes", "webhook_deliveries"
            )
            assert "ix_events_org_created_at" not in await conn.run_sync(names, "indexes", "events")
            kept = (await conn.execute(sa.select(deliveries.c.id, deliveries.c.status))).one()
            assert tuple(kept) == (delivery, "failed")


async def test_0017_adds_the_secret_key_check_empty_and_goes_back(blank_database_url: str) -> None:
    """0017 (issue 40): two new tables, the key check empty (the first process to start
    fills it); the way back drops both. (The compatibility an upgrade to the head writes:
    0018's test.)"""
    url = blank_database_url
    checks = sa.table(
        "secret_key_checks",
        sa.column("id", sa.Integer()),
        sa.column("fingerprint", sa.String()),
        sa.column("set_at", UTCDateTime()),
    )

    def tables(sync: Any) -> set[str]:
        return set(sa.inspect(sync).get_table_names())

    async with at_revision(url, "0016") as engine:
        await upgrade_async(url, "0017")
        async with engine.begin() as conn:
            assert await conn.scalar(sa.select(sa.func.count()).select_from(checks)) == 0
            await conn.execute(sa.insert(checks).values(id=1, fingerprint="f" * 64, set_at=T))
        await asyncio.to_thread(command.downgrade, alembic_config(url), "0016")
        async with engine.connect() as conn:
            assert not {"secret_key_checks", "schema_compatibility"} & await conn.run_sync(tables)


async def test_0018_keeps_each_signature_headers_name_but_not_its_value(
    blank_database_url: str,
) -> None:
    """0018 (issue 41): a stored attempt's signature headers keep their names and places, in
    whatever case they were sent, with the note in place of each value; every other header,
    an attempt that sent nothing and one with no headers are as they were. 0016's code still
    works on the schema, as the upgrade to the head records."""
    url = blank_database_url
    delivery = new_id()
    attempts = _table(
        "webhook_attempts", "id", "delivery_id", "number", "started_at", "status_code",
        "request_headers", number=sa.Integer(), started_at=UTCDateTime(),
        status_code=sa.Integer(), request_headers=sa.JSON(),
    )  # fmt: skip
    sent = [
        ["Content-Type", "application/json"],
        ["X-Service-Signature", "sha256=" + "ab" * 32],
        ["x-service-signature-previous", "sha256=" + "cd" * 32],
        ["webhook-id", "d-1"],
        ["Webhook-Signature", "v1,AAAA v1,BBBB"],
        ["X-Service-Event", "squawk.created — é"],
    ]
    kept = [
        ["Content-Type", "application/json"],
        ["X-Service-Signature", "(computed when sent; not kept)"],
        ["x-service-signature-previous", "(computed when sent; not kept)"],
        ["webhook-id", "d-1"],
        ["Webhook-Signature", "(computed when sent; not kept)"],
        ["X-Service-Event", "squawk.created — é"],
    ]
    async with at_revision(url, "0017") as engine:
        async with engine.begin() as conn:
            for target, values in _a_delivery(delivery):
                await conn.execute(sa.insert(target).values(**values))
            for number, headers in enumerate((sent, None, []), start=1):
                await conn.execute(
                    sa.insert(attempts).values(
                        id=new_id(), delivery_id=delivery, number=number, started_at=T,
                        status_code=204, request_headers=headers,
                    )
                )  # fmt: skip
        await upgrade_async(url)
        async with engine.connect() as conn:
            stored = await conn.execute(
                sa.select(attempts.c.request_headers).order_by(attempts.c.number)
            )
            assert [row[0] for row in stored] == [kept, None, []]
            if code_revisions().heads == {"0018"}:
                compatibility = sa.table("schema_compatibility", sa.column("oldest_head"))
                oldest = await conn.scalars(sa.select(compatibility.c.oldest_head))
                assert list(oldest) == ["0016"]


async def test_0019_adds_two_factor_off_for_everyone_and_goes_back(
    blank_database_url: str,
) -> None:
    """0019 (issue 41): an existing organization requires no second factor, an existing
    account has none (it signs in with its password, as before), the new tables take rows,
    and the way back drops them and the setting, keeping the organization and the account."""
    url = blank_database_url
    org, user = new_id(), new_id()
    orgs = _table("organizations", "id", "name", "require_two_factor", name=sa.String(),
                  require_two_factor=sa.Boolean())  # fmt: skip
    two_factor = _table("two_factor", "user_id", "secret_encrypted", "created_at",
                        secret_encrypted=sa.String(), created_at=UTCDateTime())  # fmt: skip
    codes = _table("recovery_codes", "id", "user_id", "code_hash", "created_at",
                   code_hash=sa.String(), created_at=UTCDateTime())  # fmt: skip

    def tables(sync: Any) -> set[str]:
        return set(sa.inspect(sync).get_table_names())

    async with at_revision(url, "0018") as engine:
        async with engine.begin() as conn:
            await conn.execute(sa.insert(ORGS).values(id=org, name="O", created_at=T))
            await conn.execute(sa.insert(ACCOUNTS).values(**_account(user, "pilot@example.org")))
        await upgrade_async(url, "0019")
        async with engine.begin() as conn:
            assert await conn.scalar(sa.select(orgs.c.require_two_factor)) is False
            assert await conn.scalar(sa.select(sa.func.count()).select_from(two_factor)) == 0
            await conn.execute(
                sa.insert(two_factor).values(user_id=user, secret_encrypted="s", created_at=T)
            )
            await conn.execute(
                sa.insert(codes).values(id=new_id(), user_id=user, code_hash="h" * 64, created_at=T)
            )
            await conn.execute(sa.update(orgs).values(require_two_factor=True))
        await asyncio.to_thread(command.downgrade, alembic_config(url), "0018")
        async with engine.connect() as conn:
            gone = {"two_factor", "recovery_codes", "sign_in_challenges"}
            assert not gone & await conn.run_sync(tables)
            columns = await conn.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("organizations")}
            )
            assert "require_two_factor" not in columns
            assert await conn.scalar(sa.select(ORGS.c.name)) == "O"


async def test_0020_gives_events_and_their_deliveries_their_resource_and_goes_back(
    blank_database_url: str,
) -> None:
    """0020 (issue 42, the delivery log's search): an existing event whose data has a UUID
    `id` gets it as its resource, and each of its deliveries the same; a test.ping, an id
    that is no UUID and data that is no object get none (and fail nothing). The way back
    drops both columns and the search's indexes, keeping the rows."""
    url = blank_database_url
    org, sub = new_id(), new_id()
    squawk = uuid.uuid4()
    datas = {
        "squawk": f'{{"id":"{squawk}","aircraft_id":"{uuid.uuid4()}"}}',
        "ping": '{"message":"Test delivery"}',
        "not a uuid": '{"id":"abc"}',
        "a number": '{"id":42}',
        "an array": "[1,2]",
    }
    events = {name: new_id() for name in datas}
    deliveries = {name: new_id() for name in datas}
    event_table = _table("events", "id", "resource_id")
    delivery_table = _table("webhook_deliveries", "id", "resource_id")
    async with at_revision(url, "0019") as engine:
        async with engine.begin() as conn:
            for n, name in enumerate(datas):
                for target, values in _a_delivery(deliveries[name], org, sub, events[name]):
                    if target.name == "events":
                        values = {**values, "data": datas[name]}
                    if target.name in ("organizations", "webhook_subscriptions") and n:
                        continue
                    await conn.execute(sa.insert(target).values(**values))
        await upgrade_async(url, "0020")
        async with engine.connect() as conn:
            resources: dict[Any, Any] = dict((await conn.execute(sa.select(event_table))).all())
            copied: dict[Any, Any] = dict((await conn.execute(sa.select(delivery_table))).all())
            indexes = await conn.run_sync(
                lambda sync: {i["name"] for i in sa.inspect(sync).get_indexes("webhook_deliveries")}
            )
        assert resources == {events[name]: (squawk if name == "squawk" else None) for name in datas}
        assert copied == {
            deliveries[name]: (squawk if name == "squawk" else None) for name in datas
        }
        assert {
            "ix_webhook_deliveries_resource",
            "ix_webhook_deliveries_subscription_event",
        } <= indexes

        await asyncio.to_thread(command.downgrade, alembic_config(url), "0019")

        def columns(sync: Any, table: str) -> set[str]:
            return {c["name"] for c in sa.inspect(sync).get_columns(table)}

        async with engine.connect() as conn:
            for table in ("events", "webhook_deliveries"):
                assert "resource_id" not in await conn.run_sync(columns, table)
            kept = await conn.scalar(sa.select(sa.func.count()).select_from(delivery_table))
            assert kept == len(datas)
