"""Issuing API keys. Callers own the transaction."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.keys.key_format import generate_key
from hangar.keys.models import ApiKey
from hangar.kit.errors import Unprocessable, invalid
from hangar.kit.rows import insert_new
from hangar.kit.scopes import SCOPES


@dataclass(frozen=True)
class IssuedKey:
    id: uuid.UUID
    key: str  # the full key: shown this once
    prefix: str
    scopes: list[str]


def checked_scopes(scopes: Iterable[str]) -> list[str]:
    """The scopes in a stable order, or the spec's 422 for none or an unknown one."""
    wanted = list(dict.fromkeys(scopes))
    if not wanted:
        raise Unprocessable("API_KEY_SCOPES_REQUIRED", "An API key needs at least one scope")
    unknown = [s for s in wanted if s not in SCOPES]
    if unknown:
        raise Unprocessable(
            "UNKNOWN_SCOPE",
            f"Unknown scope {unknown[0]}; known scopes are {', '.join(SCOPES)}",
        )
    return [s for s in SCOPES if s in wanted]


async def issue_key(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    *,
    name: str,
    scopes: Iterable[str],
    now: datetime,
    created_by: uuid.UUID | None = None,
) -> IssuedKey:
    granted = checked_scopes(scopes)
    name = name.strip()
    if not name:
        raise invalid("name", "an API key needs a name")
    new = generate_key()
    key_id = await insert_new(
        conn,
        ApiKey,
        org_id=org_id,
        name=name,
        key_hash=new.key_hash,
        prefix=new.prefix,
        scopes=granted,
        created_at=now,
        created_by=created_by,
    )
    return IssuedKey(id=key_id, key=new.key, prefix=new.prefix, scopes=granted)
