"""The audit log's face: recording an entry (every feature's actions call `record` with
their own connection) and reading a page of one organization's log, for the session API
(routes/audit_log.py) and the screen (web/audit_log.py) alike."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit import queries

# What the features and the callers name: the write, the actors, the actions.
from hangar.audit.commands import record as record
from hangar.audit.queries import TABLE as TABLE
from hangar.audit.queries import Entry as Entry
from hangar.audit.queries import Filters as Filters
from hangar.audit.queries import expired as expired
from hangar.audit.schemas import ACTIONS as ACTIONS
from hangar.audit.schemas import OPERATOR as OPERATOR
from hangar.audit.schemas import SYSTEM as SYSTEM
from hangar.audit.schemas import Action as Action
from hangar.audit.schemas import EntryPage as EntryPage
from hangar.audit.schemas import EntryView as EntryView
from hangar.audit.schemas import TargetType as TargetType
from hangar.audit.schemas import Who as Who
from hangar.foundation.ids import parse_id
from hangar.kit import cursor as cursors
from hangar.kit.cursor import CursorKeys, InvalidCursor
from hangar.kit.errors import ApiError

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# The actors without an account, as the `actor` filter names them.
ACTOR_WORDS = ("operator", "system")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Query:
    """A page's filters as given (text; "" is no filter) and checked (`filters`)."""

    action: str
    actor: str
    since: str
    filters: Filters

    def params(self, after: str | None = None) -> dict[str, str]:
        """The query parameters of a page under these filters."""
        given = {"action": self.action, "actor": self.actor, "since": self.since}
        given["after"] = after or ""
        return {name: value for name, value in given.items() if value}

    def context(self) -> str:
        """What a cursor is bound to besides the organization: the log and its filters as
        they were read (a changed filter refuses the cursor)."""
        f = self.filters
        since = "" if f.since is None else str(cursors.micros(f.since))
        parts = (f.action, f.actor_id, f.actor_email, f.actor_kind, since)
        return "\x00".join(("audit-log", *("" if p is None else str(p) for p in parts)))


def _since(text: str) -> datetime:
    """A date (midnight UTC that day) or an RFC 3339 date-time with its offset."""
    if _DATE.match(text):
        return datetime.combine(date.fromisoformat(text), time(), UTC)
    parsed = datetime.fromisoformat(text.replace(" ", "+", 1) if "T" in text else text)
    if "T" not in text.upper() or parsed.tzinfo is None:
        raise ValueError("no offset")
    return parsed.astimezone(UTC)


def problems(action: str, actor: str, since: str) -> tuple[dict[str, str], Filters]:
    """What is wrong with each filter given, by its name, and the filters they make."""
    found: dict[str, str] = {}
    action, actor, since = action.strip(), actor.strip(), since.strip()
    filters = Filters()
    if action and action not in ACTIONS:
        found["action"] = f"{action[:60]!r} is not an action of the audit log: choose one listed."
    actor_id = actor_email = actor_kind = None
    if actor:
        if actor in ACTOR_WORDS:
            actor_kind = actor
        elif "@" in actor and len(actor) <= 320:
            actor_email = actor.lower()
        elif (actor_id := parse_id(actor)) is None:
            found["actor"] = (
                f"Give an account's id, an email address, operator or system, not {actor[:60]!r}."
            )
    since_at = None
    if since:
        try:
            since_at = _since(since)
        except (ValueError, OverflowError):
            found["since"] = (
                f"{since[:40]!r} is not a date (2026-05-01) or a date-time with its offset "
                "(2026-05-01T09:00:00Z)."
            )
    if not found:
        filters = Filters(
            action or None,
            actor_id,
            actor_email,
            actor_kind,  # type: ignore[arg-type]
            since_at,
        )
    return found, filters


def query_of(action: str | None, actor: str | None, since: str | None) -> Query:
    """The filters as given, checked: a 422 naming each bad value otherwise."""
    action, actor, since = action or "", actor or "", since or ""
    found, filters = problems(action, actor, since)
    if found:
        raise ApiError(
            422,
            "VALIDATION_ERROR",
            " ".join(found.values()),
            [{"loc": ["query", name], "msg": msg} for name, msg in found.items()],
        )
    return Query(action.strip(), actor.strip(), since.strip(), filters)


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_cursor: str | None  # None: this page is the last

    def view(self) -> EntryPage:
        return {"items": [e.view for e in self.entries], "next_cursor": self.next_cursor}


def _position(
    keys: CursorKeys, org_id: uuid.UUID, context: str, text: str
) -> tuple[datetime, uuid.UUID]:
    values = cursors.unseal(keys, org_id, context, text)
    try:
        at, id_hex = values
        # Signed by us, so well formed; still, never let a surprise become a 500.
        return cursors.from_micros(at), uuid.UUID(hex=id_hex)
    except (ValueError, TypeError, OverflowError, AttributeError):
        raise InvalidCursor from None


async def page(
    conn: AsyncConnection,
    keys: CursorKeys,
    org_id: uuid.UUID,
    query: Query,
    after: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Up to `limit` entries of the organization's log, newest first, after the cursor
    `after` (a page's `next_cursor`): 400 INVALID_CURSOR for one made for another
    organization or other filters."""
    context = query.context()
    position = _position(keys, org_id, context, after) if after else None
    rows = await queries.page(conn, org_id, query.filters, position, limit + 1)
    shown = rows[:limit]
    next_cursor = None
    if len(rows) > limit:
        last = shown[-1].view
        values: list[object] = [cursors.micros(last["at"]), uuid.UUID(last["id"]).hex]
        next_cursor = cursors.seal(keys, org_id, context, values)
    return Page(shown, next_cursor)
