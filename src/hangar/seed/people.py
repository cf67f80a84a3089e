"""Seed people: a user and a membership each, with the role mix of a flight school."""

from __future__ import annotations

import random
import secrets
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

from hangar.foundation.ids import new_id
from hangar.seed.common import DAY, Row, at, between, ms, table
from hangar.seed.vocab import AREA_CODES, EMAIL_DOMAINS, FIRST_NAMES, LAST_NAMES

USER_COLUMNS = ("id", "email", "password_hash", "created_at")
# The email, names and phone are the organization's record of the person: they live on the
# membership.
MEMBERSHIP_COLUMNS = (
    "id",
    "org_id",
    "user_id",
    "role_id",
    "status",
    "is_discovery",
    "joined_at",
    "deleted_at",
    "email",
    "first_name",
    "last_name",
    "phone",
)

_ROLES = table((("member", 80), ("instructor", 12), ("mechanic", 5), ("admin", 3)))
_STATUSES = table((("active", 85), ("inactive", 10), ("pending", 5)))


@dataclass(frozen=True)
class Shape:
    role: str
    status: str = "active"
    is_discovery: bool = False
    deleted: bool = False


# The first members take these shapes, so even a small seed has every role and status.
_FIRST = (
    Shape("member"),
    Shape("instructor"),
    Shape("mechanic"),
    Shape("admin"),
    Shape("member", status="inactive"),
    Shape("member", status="pending"),
    Shape("member", is_discovery=True),
    Shape("member", deleted=True),
)


@dataclass(frozen=True)
class Person:
    """A live member as the other generators see it."""

    user_id: uuid.UUID
    role: str | None
    status: str
    name: str


def _shape(i: int, rng: random.Random) -> Shape:
    if i < len(_FIRST):
        return _FIRST[i]
    role = rng.choice(_ROLES)
    return Shape(
        role,
        status=rng.choice(_STATUSES),
        # Discovery flights are introductory rides: members, never staff.
        is_discovery=role == "member" and rng.random() < 0.04,
        deleted=rng.random() < 0.02,
    )


def _phone(rng: random.Random) -> str:
    return f"+1{rng.choice(AREA_CODES)}5550{rng.randint(100, 199)}"


def _email(first: str, last: str, tag: str, domain: str) -> str:
    local = f"{first}.{last}".lower().replace(" ", "").replace("'", "")
    return f"{local}+{tag}@{domain}"


def member_rows(
    org_id: uuid.UUID,
    count: int,
    rng: random.Random,
    now: datetime,
    role_ids: Mapping[str, uuid.UUID],
) -> Iterator[tuple[Row, Row]]:
    """`count` (user, membership) pairs. Seeded people have no password: they cannot sign in.

    A pending member's user is a placeholder, as an invitation makes: no email, its own id.
    """
    # Emails are unique across every organization: a token per run (from the OS, so two runs
    # with the same random seed still differ) plus the member's number keeps them apart.
    run = secrets.token_hex(4)
    now_ts = now.timestamp()
    for i in range(count):
        shape = _shape(i, rng)
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        phone = None if rng.random() < 0.25 else _phone(rng)
        created_ts = now_ts - between(rng, 0, 6 * 365) * DAY
        # An invitation not yet accepted has no join date.
        joined = None if shape.status == "pending" else at(created_ts)
        deleted = at(between(rng, created_ts, now_ts)) if shape.deleted else None
        user_id = new_id(ms(created_ts))
        email = _email(first, last, f"{run}.{i:x}", rng.choice(EMAIL_DOMAINS))
        yield (
            (
                user_id,
                None if shape.status == "pending" else email,
                None,
                at(created_ts),
            ),
            (
                new_id(ms(created_ts)),
                org_id,
                user_id,
                role_ids[shape.role],
                shape.status,
                shape.is_discovery,
                joined,
                deleted,
                email,
                first,
                last,
                phone,
            ),
        )
