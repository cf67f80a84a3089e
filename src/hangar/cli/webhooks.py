"""`hangar webhook`: webhook subscriptions."""

from __future__ import annotations

import uuid
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncConnection

from hangar.audit.service import OPERATOR
from hangar.cli.common import (
    OrgOption,
    command_group,
    emit,
    fail,
    migrated_settings,
    parse_org,
    run_in_transaction,
)
from hangar.foundation.clock import SystemClock
from hangar.kit.container import webhook_secret_box
from hangar.orgs.service import require_org
from hangar.webhooks import service
from hangar.webhooks.service import NewSubscriptionView, SecretRotation

webhook_app = command_group("Webhook subscriptions.")

ROTATE_HELP = f"""Give a webhook subscription a new signing secret, printed this once.

The secret it replaces goes on signing every delivery for --grace-hours (0 to
{service.MAX_GRACE_HOURS}, default {service.DEFAULT_GRACE_HOURS}; 0 stops it at once), in
X-Service-Signature-Previous and as a second signature in webhook-signature, so the receiver
keeps verifying deliveries until it is given the new secret. Rotating again during a grace
stops the oldest secret at once: only the replaced secret and the new one sign.

Prints one JSON object: the subscription as the management API shows it, with `secret`, its
`secret_whsec` form (for Standard Webhooks libraries) and `previous_secret_expires_at` (when
the replaced secret stops signing; null with a grace of 0)."""


@webhook_app.command("rotate-secret", help=ROTATE_HELP)
def webhook_rotate_secret(
    org: OrgOption,
    sub_id: Annotated[
        str, typer.Option("--id", metavar="SUBSCRIPTION_ID", help="The subscription's id")
    ],
    grace_hours: Annotated[
        int,
        typer.Option(
            metavar="HOURS",
            min=0,
            max=service.MAX_GRACE_HOURS,
            help="How long the replaced secret also signs",
        ),
    ] = service.DEFAULT_GRACE_HOURS,
) -> None:
    org_id = parse_org(org)
    try:
        target = uuid.UUID(sub_id)
    except ValueError:
        fail(f"--id must be a webhook subscription's id, not {sub_id!r}")
    current = migrated_settings()
    box = webhook_secret_box(current)
    body = SecretRotation(grace_hours=grace_hours)

    async def work(conn: AsyncConnection) -> NewSubscriptionView:
        await require_org(conn, org_id)
        now = SystemClock().now()
        return await service.rotate_secret(conn, box, org_id, target, body, now, by=OPERATOR)

    emit(run_in_transaction(current, work))
