"""Writing an entry: in the caller's connection, so in the action's own transaction."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit.models import AuditEntry
from hangar.audit.schemas import Action, TargetType, Who
from hangar.foundation.ids import new_id_at

# The names secrets go by. A detail so named is refused (a programming error, never a
# request's): an entry says what happened, never what was issued (the key, the webhook
# secret, a link's token, a password, an authenticator's secret or code).
_SECRET_NAMES = frozenset(
    {
        "key",
        "secret",
        "token",
        "password",
        "code",
        "codes",
        "recovery_code",
        "recovery_codes",
        "otpauth_uri",
        "qr_svg",
        "url",  # a webhook's URL may carry a credential in its path or query: its host only
    }
)


def _checked(details: Mapping[str, Any]) -> dict[str, Any]:
    named = _SECRET_NAMES & set(details)
    if named:
        raise ValueError(f"an audit entry never holds a secret: {sorted(named)}")
    return dict(details)


async def record(
    conn: AsyncConnection,
    org_id: uuid.UUID,
    who: Who,
    action: Action,
    target: tuple[TargetType, uuid.UUID | str],
    at: datetime,
    details: Mapping[str, Any] | None = None,
) -> uuid.UUID:
    """One entry, written with `conn`: it commits, or rolls back, with the action."""
    entry_id = new_id_at(at)
    target_type, target_id = target
    await conn.execute(
        insert(AuditEntry).values(
            id=entry_id,
            org_id=org_id,
            at=at,
            actor_kind=who.kind,
            actor_user_id=who.user_id,
            actor_email=who.email,
            client_address=who.client_address,
            action=action,
            target_type=target_type,
            target_id=str(target_id),
            details=_checked(details or {}),
        )
    )
    return entry_id
