"""The row helpers every feature's commands use: organization-scoped lookups and writes.

Each lookup names the actor's organization and skips soft-deleted rows, so an id of another
organization reads exactly like an unknown one. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Insert, Select, Update, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.kit.errors import Conflict, NotFound, invalid
from hangar.kit.schemas import field_names
from hangar.kit.scoping import OrgOwned


def public(row: Mapping[str, Any], schema: type[BaseModel]) -> dict[str, Any]:
    """The row in the public API's shape: exactly the schema's fields, nothing private."""
    return {name: row[name] for name in field_names(schema)}


async def written(conn: AsyncConnection, stmt: Insert | Update) -> dict[str, Any] | None:
    """Runs an INSERT or UPDATE and returns the row as the database holds it, or None.

    Payloads are built from this row, not from the request: timestamps come back in UTC
    whatever offset the client sent.
    """
    row = (await conn.execute(stmt.returning(*stmt.table.c))).first()
    return None if row is None else row._asdict()


async def inserted(conn: AsyncConnection, stmt: Insert) -> dict[str, Any]:
    row = await written(conn, stmt)
    assert row is not None
    return row


def _live(model: type[OrgOwned], org_id: uuid.UUID, row_id: uuid.UUID) -> Select[Any]:
    return select(model.__table__).where(
        model.id == row_id, model.org_id == org_id, model.deleted_at.is_(None)
    )


async def locked(
    conn: AsyncConnection, model: type[OrgOwned], org_id: uuid.UUID, row_id: uuid.UUID, what: str
) -> dict[str, Any]:
    """The live row, locked until the transaction ends (PostgreSQL), or 404.

    SQLite ignores FOR UPDATE; its writers are serialized, and `moved` re-checks the state.
    """
    row = (await conn.execute(_live(model, org_id, row_id).with_for_update())).first()
    if row is None:
        raise NotFound(what)
    return dict(row._mapping)


async def moved(conn: AsyncConnection, stmt: Update, lost: str) -> dict[str, Any]:
    """Runs an UPDATE whose WHERE restates the expected state; the row as written, or 409.

    No row back means a concurrent move changed the state first.
    """
    row = await written(conn, stmt)
    if row is None:
        raise Conflict(lost)
    return row


async def soft_delete(
    conn: AsyncConnection,
    model: type[OrgOwned],
    org_id: uuid.UUID,
    row_id: uuid.UUID,
    what: str,
    now: datetime,
) -> None:
    await locked(conn, model, org_id, row_id, what)
    await moved(
        conn,
        update(model).where(model.id == row_id, model.deleted_at.is_(None)).values(deleted_at=now),
        f"The {what} was deleted meanwhile",
    )


async def referenced(
    conn: AsyncConnection,
    model: type[OrgOwned],
    org_id: uuid.UUID,
    row_id: uuid.UUID,
    field: str,
) -> dict[str, Any]:
    """A live row of this organization named in a body, or 422 naming the field."""
    row = (await conn.execute(_live(model, org_id, row_id))).first()
    if row is None:
        raise invalid(field, "no such record here")
    return dict(row._mapping)
