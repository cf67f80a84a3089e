"""Every table, imported in one place so the metadata (and Alembic) sees them all."""

from hangar.accounts.models import PasswordReset
from hangar.audit.models import AuditEntry
from hangar.auth.models import User, UserSession
from hangar.db.base import Base
from hangar.db.key_check import SecretKeyCheck
from hangar.db.migrate import SchemaCompatibility
from hangar.fleet.models import Aircraft, MelItem
from hangar.idempotency.models import IdempotencyKey
from hangar.jobs.models import JobTick
from hangar.keys.models import ApiKey
from hangar.maintenance.models import MaintenanceLog, WorkOrder
from hangar.orgs.models import Invitation, Membership, Organization, Role
from hangar.reservations.models import Reservation, ReservationChanges
from hangar.squawks.models import Squawk
from hangar.webhooks.models import (
    Attempt,
    Delivery,
    DisabledNotice,
    Event,
    Recovery,
    Redelivery,
    Subscription,
)

__all__ = [
    "Aircraft",
    "ApiKey",
    "Attempt",
    "AuditEntry",
    "Base",
    "Delivery",
    "DisabledNotice",
    "Event",
    "IdempotencyKey",
    "Invitation",
    "JobTick",
    "MaintenanceLog",
    "MelItem",
    "Membership",
    "Organization",
    "PasswordReset",
    "Recovery",
    "Redelivery",
    "Reservation",
    "ReservationChanges",
    "Role",
    "SchemaCompatibility",
    "SecretKeyCheck",
    "Squawk",
    "Subscription",
    "User",
    "UserSession",
    "WorkOrder",
]
