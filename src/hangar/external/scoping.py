"""The one place the public API decides which rows a key may see.

Every read query of /api/v1/external starts from `visible(...)`: rows of the key's
organization that are not soft-deleted. No route filters by organization on its own.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import Select, select
from sqlalchemy.engine import CursorResult

from hangar.auth.apikey import KeyContext


class OrgOwned(Protocol):
    """A table of rows that belong to one organization and are soft-deleted."""

    org_id: Any
    deleted_at: Any


def visible(model: type[OrgOwned], key: KeyContext, *columns: Any) -> Select[Any]:
    return select(*columns).where(model.org_id == key.org_id, model.deleted_at.is_(None))


def as_dicts(result: CursorResult[Any]) -> list[dict[str, Any]]:
    """Rows as plain dicts keyed by their labels, ready for orjson."""
    keys = tuple(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]
