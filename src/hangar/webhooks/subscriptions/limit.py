"""At most HANGAR_MAX_SUBSCRIPTIONS_PER_ORG live (not deleted) subscriptions per organization.

Every subscription is a destination the dispatcher shares its slots with, so an organization
that could subscribe hundreds of endpoints could crowd the others out (issue 39).

The bound holds under concurrency on both databases: the count is restated in the INSERT
itself (`INSERT ... SELECT ... WHERE (live count) < limit`), so a creation sees every other
committed one at the moment it writes:
- SQLite has one writer, and an INSERT takes the write lock before it reads, so two
  creations run one after the other, the second counting the first.
- PostgreSQL reads each statement as of its start (READ COMMITTED), so two INSERTs started
  together would both count 19 of 20. The organization's creations are first serialized by
  a transaction-scoped advisory lock keyed on the organization: the second waits for the
  first to commit, and its INSERT then counts it. An advisory lock rather than the
  organization's row: that row is orgs' (a feature this one does not import), and locking it
  FOR UPDATE would stall every product action of the organization (their event and delivery
  rows take KEY SHARE on it through their foreign keys) for as long as the creation runs.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import func, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.foundation.ids import new_id
from hangar.kit.errors import Unprocessable
from hangar.webhooks.models import Subscription

CODE = "SUBSCRIPTION_LIMIT"
# The advisory lock's first key: what it is about (creating subscriptions), so that it meets
# no other lock hangar may take; the second is the organization's. Two organizations whose
# second keys collide only wait for each other's creations, which take milliseconds.
_LOCK_CLASS = 0x5EB5


def limit_reached(limit: int) -> Unprocessable:
    """422 SUBSCRIPTION_LIMIT, in a sentence that names the limit."""
    many = "subscription" if limit == 1 else "subscriptions"
    return Unprocessable(
        CODE, f"An organization has at most {limit} webhook {many}; delete one to add another"
    )


def _org_key(org_id: uuid.UUID) -> int:
    # The id's last four bytes, random in a UUIDv7, as the signed int4 the lock takes.
    return int.from_bytes(org_id.bytes[-4:], "big", signed=True)


async def insert_within_limit(
    conn: AsyncConnection, org_id: uuid.UUID, limit: int, **values: Any
) -> uuid.UUID:
    """Inserts the organization's subscription with `values` under a new id, unless it
    already has `limit` live ones (then 422 SUBSCRIPTION_LIMIT, and nothing is written)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(select(func.pg_advisory_xact_lock(_LOCK_CLASS, _org_key(org_id))))
    live = (
        select(func.count())
        .select_from(Subscription)
        .where(Subscription.org_id == org_id, Subscription.deleted_at.is_(None))
        .scalar_subquery()
    )
    row = {"id": new_id(), "org_id": org_id, **values}
    columns = Subscription.__table__.c
    chosen = select(*(literal(v, columns[k].type) for k, v in row.items())).where(live < limit)
    made = await conn.scalar(
        insert(Subscription).from_select(list(row), chosen).returning(Subscription.id)
    )
    if made is None:
        raise limit_reached(limit)
    return row["id"]  # type: ignore[no-any-return]
