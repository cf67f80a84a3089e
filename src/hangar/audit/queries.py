"""Reading the log: one organization's entries, newest first, a page at a time; and the
batches retention deletes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Select, literal, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit.models import AuditEntry
from hangar.audit.schemas import ActorKind, EntryView
from hangar.kit.batches import Oldest

TABLE = AuditEntry.__tablename__


@dataclass(frozen=True)
class Filters:
    """Which entries a page lists; None: any. `actor` is an account's id, an email (as it
    was when the entry was written), or one of the actors without an account."""

    action: str | None = None
    actor_id: uuid.UUID | None = None
    actor_email: str | None = None
    actor_kind: ActorKind | None = None
    since: datetime | None = None


@dataclass(frozen=True)
class Entry:
    view: EntryView
    actor_kind: ActorKind  # the screen tells the operator and hangar apart; the API does not


async def page(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    filters: Filters,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[Entry]:
    """Up to `limit` entries of `org_id`, newest first, older than `after` (the last one a
    page showed), from the newest without it."""
    rows = (await conn.execute(_page_query(org_id, filters, after, limit))).all()
    return [_entry(row) for row in rows]


def _page_query(
    org_id: uuid.UUID,
    filters: Filters,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> Select[Any]:
    stmt = select(AuditEntry).where(AuditEntry.org_id == org_id)
    if filters.action is not None:
        stmt = stmt.where(AuditEntry.action == filters.action)
    if filters.actor_id is not None:
        stmt = stmt.where(AuditEntry.actor_user_id == filters.actor_id)
    if filters.actor_email is not None:
        stmt = stmt.where(AuditEntry.actor_email == filters.actor_email)
    if filters.actor_kind is not None:
        stmt = stmt.where(AuditEntry.actor_kind == filters.actor_kind)
    if filters.since is not None:
        stmt = stmt.where(AuditEntry.at >= filters.since)
    if after is not None:
        at, entry_id = after
        stmt = stmt.where(
            tuple_(AuditEntry.at, AuditEntry.id)
            < tuple_(literal(at, AuditEntry.at.type), literal(entry_id, AuditEntry.id.type))
        )
    return stmt.order_by(AuditEntry.at.desc(), AuditEntry.id.desc()).limit(limit)


def _entry(row: Row[Any]) -> Entry:
    actor = (
        {"id": str(row.actor_user_id) if row.actor_user_id else None, "email": row.actor_email}
        if row.actor_kind == "user"
        else None
    )
    view: EntryView = {
        "id": str(row.id),
        "at": row.at,
        "actor": actor,  # type: ignore[typeddict-item]
        "client_address": row.client_address,
        "action": row.action,
        "target": {"type": row.target_type, "id": row.target_id},
        "details": row.details or {},
    }
    return Entry(view, row.actor_kind)


def entries_of(rows: Sequence[Entry]) -> list[EntryView]:
    return [row.view for row in rows]


def expired(before: datetime, size: int) -> Oldest:
    """Retention's batches: entries written before `before`, oldest first."""
    return Oldest(AuditEntry, AuditEntry.at, before, size)
