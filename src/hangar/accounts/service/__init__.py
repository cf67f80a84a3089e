"""What a person does with their own account: sign in and out (sign_in), and recover it through
the operator's reset link (password_reset). (Its second factor: hangar.accounts.second_factor.)
What is done to an account is recorded here, in the audit log of each organization it is an
active member of.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit import service as audit
from hangar.audit.service import Who
from hangar.orgs.actors import memberships


async def record_for_account(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    by: Who,
    action: audit.Action,
    now: datetime,
    details: Mapping[str, object],
) -> None:
    """What was done to an account, in the audit log of each organization it is an active
    member of: their admins answer for who may reach their settings. (An account in no
    organization has no log to be shown in: the operator's own log line records it.)"""
    for membership in await memberships(conn, user_id):
        org_id = uuid.UUID(membership["org_id"])
        await audit.record(conn, org_id, by, action, ("user", user_id), now, details)
