"""Each organization's event log, as the events API pages it: oldest first, every event once.

Why a position given after the commit, rather than the id or the time. An event gets its id
and time when its transaction records it, but transactions commit in another order: one
that recorded event A, then took a while, commits after one that recorded B later. A reader
who paged by id would read B, keep B's id as its cursor, and never see A once it committed.
So an event takes its place in the log only after it committed. Whoever reads the log next
and finds one unplaced (`page` probes for that in the page's own statement; `place`) locks
the organization's end row, reads the
events committed and still unplaced, and gives them the positions after the end, in the
order of their ids (`ascending_id`: those of one transaction in the order they were fired).
An event that commits later is placed later, after every position already given: a reader
past position P has seen every event placed at P or before, and will see each later one
after P. Placers of one organization take turns on its end row; other organizations' never
wait for them, and the writers of events never wait for a placer.

A cursor holds the last position returned, and how old the oldest event it has not yet
returned may be (`Cursor.horizon`): the time of the page when the page held all there was,
the next event's creation otherwise. Once the horizon falls out of the retention window
(`HANGAR_DELIVERY_RETENTION_DAYS`, less `HORIZON_MARGIN`) events it has not returned may be
gone, and the cursor is refused with 410 rather than quietly skipping them.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypedDict

from sqlalchemy import ColumnElement, Select, bindparam, exists, func, select, union_all, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.expression import Executable

from hangar.db.reads import Read, ReadConnection
from hangar.kit import cursor as cursors
from hangar.kit.cursor import CursorKeys, InvalidCursor
from hangar.kit.errors import ApiError
from hangar.kit.scoping import ORG_PARAM, OfOrg, bound
from hangar.webhooks.events.catalogue import TEST_PING
from hangar.webhooks.models import Event, EventLogEnd

# Events placed per transaction: each placing transaction stays short, however many wait.
PLACE_BATCH = 1000

# A transaction may commit its events a while after it stamped their creation time, and the
# servers' clocks may differ a little: a cursor is refused this long before its horizon
# leaves the window, so no event it has not returned can have been pruned already.
HORIZON_MARGIN = timedelta(hours=1)


# --- placing -------------------------------------------------------------------------------


def _take_end(dialect: str, org_id: uuid.UUID) -> Executable:
    """The organization's end row, made at 0 if it has none, locked until the commit."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(EventLogEnd).values(org_id=org_id, last_position=0)
    return stmt.on_conflict_do_update(
        index_elements=[EventLogEnd.org_id],
        set_={"last_position": EventLogEnd.last_position},  # a write: it takes the row lock
    ).returning(EventLogEnd.last_position)


def _place_after(org_id: uuid.UUID, end: int) -> Executable:
    """Gives the next committed, unplaced events the positions after `end`, by id."""
    waiting = (
        select(Event.id)
        .where(Event.org_id == org_id, Event.position.is_(None))
        .order_by(Event.id)
        .limit(PLACE_BATCH)
        # Only retention's delete may hold one of these rows (an old event going): skip it
        # rather than wait, so a placer never waits on anything but its own end row.
        .with_for_update(skip_locked=True)
        .subquery()
    )
    numbered = select(
        waiting.c.id, func.row_number().over(order_by=waiting.c.id).label("n")
    ).subquery()
    return (
        update(Event)
        .where(Event.id == numbered.c.id)
        .values(position=end + numbered.c.n)
        .returning(Event.position)
    )


async def _place_batch(conn: AsyncConnection, org_id: uuid.UUID) -> int:
    end = int((await conn.execute(_take_end(conn.dialect.name, org_id))).scalar_one())
    placed = len((await conn.execute(_place_after(org_id, end))).all())
    if placed:
        await conn.execute(
            update(EventLogEnd)
            .where(EventLogEnd.org_id == org_id)
            .values(last_position=end + placed)
        )
    return placed


async def place(engine: AsyncEngine, org_id: uuid.UUID) -> int:
    """Places the organization's committed events that have no position yet; returns how
    many."""
    total = 0
    while True:
        async with engine.begin() as write:
            placed = await _place_batch(write, org_id)
        total += placed
        if placed < PLACE_BATCH:
            return total


# --- reading -------------------------------------------------------------------------------


def log_end(org_id: ColumnElement[uuid.UUID]) -> list[ColumnElement[Any]]:
    """Where the log of the organization `org_id` names ends, as columns another statement
    can carry (the key's: hangar.keys.authentication.KeyLookup): its last position, and
    whether a committed event still awaits its place."""
    return [
        select(EventLogEnd.last_position)
        .where(EventLogEnd.org_id == org_id)
        .scalar_subquery()
        .label("log_end"),
        exists().where(Event.org_id == org_id, Event.position.is_(None)).label("log_unplaced"),
    ]


@dataclass(frozen=True)
class LogEnd:
    """Where an organization's log ended when a statement read `log_end`'s columns."""

    position: int  # the last position given (0: none yet)
    unplaced: bool  # a committed event awaited its place

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> LogEnd | None:
        """The end `row` holds, if it was read with `log_end`'s columns."""
        if "log_unplaced" not in row:
            return None
        return cls(int(row["log_end"] or 0), bool(row["log_unplaced"]))

    def nothing_after(self, position: int) -> bool:
        """Whether the log held no event past `position`: every event is placed, none
        after it."""
        return not self.unplaced and self.position <= position


class EventRow(TypedDict):
    id: uuid.UUID
    event: str
    created_at: datetime
    data: str  # the `data` object as serialized once, for every delivery
    position: int | None  # None: the probe's row, an event still to be placed


def _columns() -> Select[uuid.UUID, str, datetime, str, int | None]:
    return select(
        Event.id, Event.name.label("event"), Event.created_at, Event.data, Event.position
    ).where(Event.org_id == bound(ORG_PARAM, Event.org_id))


@functools.cache
def _page(names: int, created_after: bool) -> Read[EventRow]:
    """A page after a position, for one shape of filters (`names` event names; 0: all),
    and in the same statement a probe for one event still to be placed (the partial index):
    a poll that finds nothing new is one statement."""
    found = _columns().where(
        Event.position > bound("after", Event.position),
        Event.created_at >= bound("window_start", Event.created_at),
        Event.name != TEST_PING,  # the Test action's, not something that happened
    )
    if names:
        found = found.where(
            Event.name.in_([bound(f"wanted_{i}", Event.name) for i in range(names)])
        )
    if created_after:
        found = found.where(Event.created_at >= bound("created_after", Event.created_at))
    page = found.order_by(Event.position).limit(bindparam("limit")).subquery()
    probe = _columns().where(Event.position.is_(None)).limit(1).subquery()
    both = union_all(select(page), select(probe)).subquery()
    return Read(select(both), EventRow)


@dataclass(frozen=True)
class Filters:
    names: tuple[str, ...] = ()  # sorted, each once; none: every event
    created_after: datetime | None = None  # inclusive
    # The events the key may read (its scopes'), when not all: not part of a cursor's
    # context, so a cursor stays valid whatever scopes its key is given or loses.
    readable: tuple[str, ...] | None = None

    @property
    def wanted(self) -> tuple[str, ...] | None:
        """The names a page may hold (none: every event), or None when it can hold none."""
        if self.readable is None:
            return self.names
        if self.names:
            return tuple(n for n in self.names if n in self.readable) or None
        return self.readable or None

    def context(self) -> str:
        """What a cursor is bound to: these filters, and that it is an events cursor."""
        after = "" if self.created_after is None else self.created_after.isoformat()
        return "events\x00" + ",".join(self.names) + "\x00" + after


@dataclass(frozen=True)
class Cursor:
    position: int  # the last position returned (0: none yet)
    horizon: datetime  # no event this cursor has not returned was created before this


class CursorExpired(ApiError):
    """410: events the cursor has not returned may have been pruned already."""

    def __init__(self, days: int) -> None:
        super().__init__(
            410,
            "CURSOR_EXPIRED",
            f"This cursor points before the retention window ({days} days): events it has "
            "not returned may be gone. Start again without after (with created_after if "
            "you know when you stopped)",
        )


def read_cursor(keys: CursorKeys, of: OfOrg, filters: Filters, text: str) -> Cursor:
    values = cursors.unseal(keys, of.org_id, filters.context(), text)
    try:
        position, horizon = values
        if not isinstance(position, int) or isinstance(position, bool) or position < 0:
            raise ValueError("not a position")
        return Cursor(position, cursors.from_micros(horizon))
    except (ValueError, TypeError, OverflowError):
        raise InvalidCursor from None


def write_cursor(keys: CursorKeys, of: OfOrg, filters: Filters, at: Cursor) -> str:
    return cursors.seal(
        keys, of.org_id, filters.context(), [at.position, cursors.micros(at.horizon)]
    )


@dataclass(frozen=True)
class Page:
    items: Sequence[EventRow]
    next_cursor: Cursor


async def page(
    engine: AsyncEngine,
    conn: ReadConnection,
    of: OfOrg,
    filters: Filters,
    after: Cursor | None,
    limit: int,
    *,
    now: datetime,
    retention_days: int,
    end: LogEnd | None = None,
) -> Page:
    """The events after `after` (from the window's start without it), oldest first; events
    committed since the last reader are placed first (on `engine`: a write of its own).

    `end`, where the log ended as this request's key statement read it (`log_end`): when no
    event lay past the cursor then, the page is empty without a statement of its own. The
    answer is the one the page's statement would have given in that statement's snapshot:
    a poll that finds nothing new costs the key's round trip alone."""
    window_start = now - timedelta(days=retention_days)
    if after is not None and after.horizon < window_start + HORIZON_MARGIN:
        raise CursorExpired(retention_days)
    position = 0 if after is None else after.position
    wanted = filters.wanted
    if wanted is None or (end is not None and end.nothing_after(position)):
        return Page((), Cursor(position, now))
    params: dict[str, object] = {
        ORG_PARAM: of.org_id,
        "after": position,
        "window_start": window_start,
        "limit": limit + 1,  # one more: how old the next one is makes the cursor's horizon
        **{f"wanted_{i}": name for i, name in enumerate(wanted)},
    }
    if filters.created_after is not None:
        params["created_after"] = filters.created_after
    read = _page(len(wanted), filters.created_after is not None)
    rows = await read.rows(conn, params)
    if any(row["position"] is None for row in rows):
        await place(engine, of.org_id)
        rows = await read.rows(conn, params)
    # The page's rows in order (a union keeps no order of its own), without the probe's.
    listed = sorted((row for row in rows if row["position"] is not None), key=_position)
    items, following = listed[:limit], listed[limit:]
    if items:
        position = _position(items[-1])
    horizon = following[0]["created_at"] if following else now
    return Page(items, Cursor(position, horizon))


def _position(row: EventRow) -> int:
    position = row["position"]
    assert position is not None  # the probe's rows are left out before
    return position
