"""The scopes an API key may carry: the public API's vocabulary, shared by the keys that are
issued with them, the reads that check them and the schemas that document them."""

from __future__ import annotations

# The scope that adds members' contact fields.
MEMBERS_FULL = "read:members.full"

SCOPES: dict[str, str] = {
    "read:reservations": "Reservations, as JSON and as the calendar feed",
    "read:aircraft": "The active fleet with current Hobbs, tach and annual due date",
    "read:squawks": "Squawks (reported discrepancies)",
    "read:members": "Membership records without contact details: user id, role, status, join date",
    "read:members.full": "Adds email, first name, last name and phone to member records "
    "(needs read:members too)",
    "read:maintenance": "Maintenance log entries and work orders",
    "read:events": "The events of the last days (what webhooks deliver), to catch up on: "
    "each only with the scope that reads what it concerns (read:reservations, read:squawks, "
    "read:aircraft or read:maintenance)",
}

# A key may hold read:members.full without read:members (the spec allows it), and then every
# call to /members is refused. The key-creation screen says so beside the form
# (key_new.html); the CLI says it after the key, with this sentence.
FULL_WITHOUT_MEMBERS = (
    "read:members.full only adds contact fields: without read:members too, "
    "this key is refused on /members"
)


def scope_note(scopes: list[str]) -> str | None:
    """What a key with these scopes may not do that its holder would expect, or None."""
    if MEMBERS_FULL in scopes and "read:members" not in scopes:
        return FULL_WITHOUT_MEMBERS
    return None
