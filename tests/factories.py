"""Rows for tests, inserted directly: each call makes one row with realistic defaults."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hangar.auth.commands import issue_key
from hangar.auth.keys import SCOPES, generate_key
from hangar.auth.models import ApiKey
from hangar.auth.passwords import hash_password
from hangar.fleet.models import Aircraft
from hangar.ids import new_id
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.orgs import invitations
from hangar.orgs.commands import create_org
from hangar.orgs.members import add_member
from hangar.orgs.models import Membership, Role, User
from hangar.reservations.models import Reservation
from hangar.squawks.models import Squawk

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
_serial = itertools.count(1)


@dataclass
class Org:
    """One organization of a test, with a key holding every scope and one admin."""

    id: uuid.UUID
    key: str
    admin_id: uuid.UUID
    engine: AsyncEngine

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def key_with(self, *scopes: str) -> str:
        async with self.engine.begin() as conn:
            return (await issue_key(conn, self.id, name="k", scopes=scopes, now=T0)).key

    async def legacy_key(self) -> str:
        """A key from before scopes were required: it has none."""
        new = generate_key()
        async with self.engine.begin() as conn:
            await conn.execute(
                insert(ApiKey).values(
                    id=new_id(),
                    org_id=self.id,
                    name="legacy",
                    key_hash=new.key_hash,
                    prefix=new.prefix,
                    scopes=[],
                    created_at=T0,
                )
            )
        return new.key

    async def add(self, model: type[Any], **values: Any) -> dict[str, Any]:
        """Inserts one row of `model` for this org; returns the values written."""
        row = {**_defaults(model, self), **values, "org_id": self.id}
        row.setdefault("id", new_id())
        async with self.engine.begin() as conn:
            await conn.execute(insert(model).values(**row))
        return row

    async def member(
        self, role: str = "member", *, password: str | None = None, **values: Any
    ) -> uuid.UUID:
        """A membership (active unless `status` says otherwise), as the operator makes one.

        `password` sets the account's password when this call made the account: a test's
        stand-in for its person having chosen it.
        """
        n = next(_serial)
        async with self.engine.begin() as conn:
            created = await add_member(
                conn,
                self.id,
                email=values.pop("email", f"person{n}-{uuid.uuid4().hex[:8]}@example.org"),
                role=role,
                now=values.pop("now", T0 + timedelta(minutes=n)),
                first_name=values.pop("first_name", f"First{n}"),
                last_name=values.pop("last_name", f"Last{n}"),
                phone=values.pop("phone", f"+1555000{n:04d}"),
                **values,
            )
            if password is not None and created.account_created:
                await conn.execute(
                    update(User)
                    .where(User.id == created.user_id)
                    .values(password_hash=hash_password(password))
                )
        return created.user_id

    async def membership_row(
        self, user_id: uuid.UUID, email: str, role: str = "member", *, status: str = "active"
    ) -> uuid.UUID:
        """A membership of an existing account inserted as it stands, with no check: rows that
        the application no longer makes (a pending membership on the account itself, as
        before invitations named emails), or that only a race could."""
        membership_id = new_id()
        async with self.engine.begin() as conn:
            role_id = await conn.scalar(
                select(Role.id).where(Role.org_id == self.id, Role.name == role)
            )
            await conn.execute(
                insert(Membership).values(
                    id=membership_id,
                    org_id=self.id,
                    user_id=user_id,
                    role_id=role_id,
                    status=status,
                    is_discovery=False,
                    joined_at=None if status == "pending" else T0,
                    email=email,
                    first_name="Row",
                    last_name="Made",
                )
            )
        return membership_id

    async def legacy_invitation(self, user_id: uuid.UUID, email: str, now: datetime) -> str:
        """An invitation made before invitations named emails (migration 0006 keeps them): its
        pending membership is the account's own. The link's token."""
        membership_id = await self.membership_row(user_id, email, status="pending")
        async with self.engine.begin() as conn:
            issued = await invitations.issue(conn, self.id, membership_id, email, now)
        return issued.token


async def make_org(engine: AsyncEngine, name: str = "Org") -> Org:
    async with engine.begin() as conn:
        org_id = await create_org(conn, f"{name} {uuid.uuid4().hex[:6]}", T0)
        admin = await add_member(
            conn,
            org_id,
            email=f"admin-{uuid.uuid4().hex[:10]}@example.org",
            role="admin",
            now=T0,
            first_name="Ada",
            last_name="Admin",
        )
        issued = await issue_key(conn, org_id, name="all", scopes=list(SCOPES), now=T0)
    return Org(id=org_id, key=issued.key, admin_id=admin.user_id, engine=engine)


def _defaults(model: type[Any], org: Org) -> dict[str, Any]:
    n = next(_serial)
    if model is Aircraft:
        return {
            "tail_number": f"N{100 + n}SP",
            "aircraft_type": "Cessna 172S",
            "display_name": None,
            "is_active": True,
            "hobbs_current": 1000.0 + n,
            "tach_current": 800.0 + n,
            "annual_due_date": date(2027, 3, 1),
            "last_100hr_hobbs": 950.0,
            "created_at": T0,
        }
    if model is Reservation:
        start = T0 + timedelta(hours=n)
        return {
            "pilot_id": org.admin_id,
            "activity_type": "solo",
            "start_time": start,
            "end_time": start + timedelta(hours=2),
            "status": "confirmed",
            "created_at": T0,
        }
    if model is Squawk:
        return {
            "description": f"Squawk {n}",
            "severity": "minor",
            "status": "open",
            "is_grounding": False,
            "reported_by": org.admin_id,
            "created_at": T0 + timedelta(minutes=n),
        }
    if model is MaintenanceLog:
        return {
            "event_type": "oil_change",
            "event_date": date(2026, 1, 1) + timedelta(days=n % 300),
            "work_performed": "Changed oil and filter.",
            "created_at": T0,
        }
    if model is WorkOrder:
        return {
            "title": f"Work order {n}",
            "status": "open",
            "created_at": T0 + timedelta(minutes=n),
        }
    return {}


async def aircraft(org: Org, **values: Any) -> dict[str, Any]:
    return await org.add(Aircraft, **values)


async def write_rows(conn: AsyncConnection, model: type[Any], rows: list[dict[str, Any]]) -> None:
    await conn.execute(insert(model), rows)
