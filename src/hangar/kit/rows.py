"""The row helpers every feature's commands use: organization-scoped lookups and writes.

Each lookup names the actor's organization and skips soft-deleted rows, so an id of another
organization reads exactly like an unknown one. Callers own the transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeAlias, TypeVar, cast

from sqlalchemy import Insert, Select, Update, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.db.base import Base
from hangar.foundation.ids import new_id
from hangar.kit.errors import Conflict, NotFound, invalid
from hangar.kit.scoping import OrgOwned

# A whole row of the table the caller named, by column name, as the database holds it. Its
# shape is that table's, which the kit cannot name: the commands read the few columns they
# decide on, and hand the row to `public` and to the event builders.
Record: TypeAlias = Mapping[str, Any]

# A TypedDict of the public fields of a resource (`ReservationRow`, ...), in the schema's order.
Public = TypeVar("Public", bound=Mapping[str, Any])


def public(row: Record, shape: type[Public]) -> Public:
    """The row in the public API's shape: exactly `shape`'s keys, in its order (the order of
    the JSON), nothing private."""
    return cast(Public, {name: row[name] for name in shape.__annotations__})


async def written(conn: AsyncConnection, stmt: Insert | Update) -> Record | None:
    """Runs an INSERT or UPDATE and returns the row as the database holds it, or None.

    Payloads are built from this row, not from the request: timestamps come back in UTC
    whatever offset the client sent.
    """
    row = (await conn.execute(stmt.returning(*stmt.table.c))).first()
    return None if row is None else row._asdict()


async def inserted(conn: AsyncConnection, stmt: Insert) -> Record:
    row = await written(conn, stmt)
    assert row is not None
    return row


async def insert_new(conn: AsyncConnection, model: type[Base], **values: Any) -> uuid.UUID:
    """Inserts one row of `model`, `values` under a new id; returns the id."""
    row_id = new_id()
    await conn.execute(insert(model).values(id=row_id, **values))
    return row_id


async def created(
    conn: AsyncConnection,
    model: type[Base],
    org_id: uuid.UUID,
    values: Mapping[str, Any],
    now: datetime,
) -> Record:
    """A new row of `model` for this organization: `values` (a body's fields and what the
    command decides), under a new id, created now."""
    row = {**values, "id": new_id(), "org_id": org_id, "created_at": now}
    return await inserted(conn, insert(model).values(row))


def _live(model: type[OrgOwned], org_id: uuid.UUID, row_id: uuid.UUID) -> Select[Any]:
    return select(model.__table__).where(
        model.id == row_id, model.org_id == org_id, model.deleted_at.is_(None)
    )


async def locked(
    conn: AsyncConnection, model: type[OrgOwned], org_id: uuid.UUID, row_id: uuid.UUID, what: str
) -> Record:
    """The live row, locked until the transaction ends (PostgreSQL), or 404.

    SQLite ignores FOR UPDATE; its writers are serialized, and `moved` re-checks the state.
    """
    row = (await conn.execute(_live(model, org_id, row_id).with_for_update())).first()
    if row is None:
        raise NotFound(what)
    return dict(row._mapping)


async def moved(conn: AsyncConnection, stmt: Update, lost: str) -> Record:
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
) -> None:
    """A live row of this organization is named in a body, or 422 naming the field."""
    row = (await conn.execute(_live(model, org_id, row_id))).first()
    if row is None:
        raise invalid(field, "no such record here")
