"""The HTML side of hangar: Org Settings screens and the public integrator pages.

Screens call the same services as the JSON routes (accounts.service, orgs.service,
keys.service, webhooks.service, audit.service); nothing here validates or scopes on its own.
"""

from __future__ import annotations

from fastapi import APIRouter

from hangar.web import (
    audit_log,
    changelog,
    docs,
    event_schemas,
    invitations,
    keys,
    login,
    pages,
    password_reset,
    settings,
    two_factor,
    webhook_deliveries,
    webhooks,
)

router = APIRouter(include_in_schema=False)
for _part in (
    pages,
    login,
    invitations,
    password_reset,
    settings,
    two_factor,
    keys,
    webhooks,
    webhook_deliveries,
    audit_log,
    docs,
    event_schemas,
    changelog,
):
    router.include_router(_part.router)
