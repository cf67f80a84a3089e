"""What the audit log records and shows: its actions, its actors, its entries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypedDict, get_args

# Every action an entry can name: `<what it concerns>.<what happened>`, as GitHub's and
# Stripe's logs name theirs. A fixed set, so the filter can refuse a misspelt one (422)
# instead of answering an empty page.
Action = Literal[
    "key.created",
    "key.rotated",
    "key.revoked",
    "webhook.created",
    "webhook.updated",
    "webhook.deleted",
    "webhook.enabled",
    "webhook.disabled",
    "webhook.secret_rotated",
    "webhook.tested",
    "webhook.redelivered",
    "webhook.recovered",
    "member.invited",
    "member.removed",
    "organization.updated",
    "user.reset_password_link",
    "user.password_reset",
    "user.reset_two_factor",
]
ACTIONS: tuple[Action, ...] = get_args(Action)

# What an entry's target is.
TargetType = Literal["api_key", "webhook", "member", "organization", "user"]

ActorKind = Literal["user", "operator", "system"]


@dataclass(frozen=True)
class Who:
    """Who acted, as an entry records them: a signed-in person (their account's id, their
    email as it is now, and the client address their request came from), the operator's
    command line, or hangar itself."""

    kind: ActorKind
    user_id: uuid.UUID | None = None
    email: str | None = None
    client_address: str | None = None

    @classmethod
    def person(cls, user_id: uuid.UUID, email: str, client_address: str | None) -> Who:
        return cls("user", user_id, email, client_address)


# The operator at the command line (`hangar key create`, `hangar user reset-2fa` ...): no
# account, no client address.
OPERATOR = Who("operator")
# hangar on its own: the worker that disables a webhook after five failures in a row.
SYSTEM = Who("system")


class ActorView(TypedDict):
    id: str | None
    email: str | None


class TargetView(TypedDict):
    type: str
    id: str


class EntryView(TypedDict):
    """An entry as the API shows it (interfaces.md §9)."""

    id: str
    at: datetime
    actor: ActorView | None  # None: the operator or hangar itself
    client_address: str | None
    action: str
    target: TargetView
    details: dict[str, Any]


class EntryPage(TypedDict):
    items: list[EntryView]
    next_cursor: str | None
