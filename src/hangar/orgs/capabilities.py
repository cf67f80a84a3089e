"""What each of the four built-in roles may do (interfaces.md §2). Checked in one place."""

from __future__ import annotations

ORG_SETTINGS = "org.settings"
MEMBERS_MANAGE = "members.manage"
FLEET_MANAGE = "fleet.manage"
MAINTENANCE_MANAGE = "maintenance.manage"
RESERVATIONS_MANAGE = "reservations.manage"
RESERVATIONS_OWN = "reservations.own"
SQUAWKS_REPORT = "squawks.report"
SQUAWKS_MANAGE = "squawks.manage"

CAPABILITIES: dict[str, tuple[str, ...]] = {
    "admin": (
        ORG_SETTINGS,
        MEMBERS_MANAGE,
        FLEET_MANAGE,
        MAINTENANCE_MANAGE,
        RESERVATIONS_MANAGE,
        RESERVATIONS_OWN,
        SQUAWKS_REPORT,
        SQUAWKS_MANAGE,
    ),
    "instructor": (RESERVATIONS_MANAGE, RESERVATIONS_OWN, SQUAWKS_REPORT, SQUAWKS_MANAGE),
    "mechanic": (
        FLEET_MANAGE,
        MAINTENANCE_MANAGE,
        RESERVATIONS_OWN,
        SQUAWKS_REPORT,
        SQUAWKS_MANAGE,
    ),
    "member": (RESERVATIONS_OWN, SQUAWKS_REPORT),
}

# What Org Settings grants: an organization that requires two-factor sign-in withholds these
# from an admin without it (hangar.orgs.actors), until they set it up.
ORG_SETTINGS_CAPABILITIES = frozenset((ORG_SETTINGS, MEMBERS_MANAGE))

# The four built-in roles, in the order they are listed everywhere.
ROLE_NAMES = tuple(CAPABILITIES)


def capabilities_of(role_name: str | None) -> tuple[str, ...]:
    return CAPABILITIES.get(role_name or "", ())
