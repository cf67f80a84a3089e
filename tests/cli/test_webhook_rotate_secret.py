"""`hangar webhook rotate-secret --org ORG --id ID [--grace-hours N]` (issue 28): one JSON object
on stdout, the new secret shown once with its `whsec_` form and until when the replaced one
signs; refusals are one line on stderr, a non-zero exit, and nothing rotated."""

from __future__ import annotations

import asyncio
import base64
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from hangar.foundation.ids import new_id
from hangar.kit.container import webhook_secret_box
from hangar.webhooks.models import Subscription
from hangar.webhooks.service import NewSubscriptionView
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from tests.fixtures.cli import Cli, services_of
from tests.fixtures.secret_rotation import stored_secrets


async def subscription(cli: Cli, org_id: str | None = None) -> tuple[str, str]:
    """A subscription of the module's organization (or `org_id`'s): (id, secret)."""
    secret, sub_id, now = new_secret(), new_id(), datetime.now(UTC)
    box = webhook_secret_box(services_of(cli).settings)
    async with cli.engine.begin() as conn:
        await conn.execute(
            insert(Subscription).values(
                id=sub_id,
                org_id=uuid.UUID(org_id or cli.org_id),
                name="ops",
                url="https://hooks.example.com/in",
                events=["*"],
                secret_encrypted=box.seal(secret),
                secret_prefix=secret[:8],
                enabled=True,
                consecutive_failures=0,
                created_at=now,
                updated_at=now,
            )
        )
    return str(sub_id), secret


async def stored(cli: Cli, sub_id: str) -> tuple[str, str | None, datetime | None]:
    """(secret, previous secret, its expiry), opened."""
    box = webhook_secret_box(services_of(cli).settings)
    return await stored_secrets(cli.engine, box, uuid.UUID(sub_id))


def rotate(sub_id: str, org_id: str, *more: str) -> list[str]:
    return ["webhook", "rotate-secret", "--org", org_id, "--id", sub_id, *more]


async def test_rotate_secret_prints_the_new_secret_once_and_the_old_one_signs_on(
    cli: Cli,
) -> None:
    sub_id, old = await subscription(cli)
    before = datetime.now(UTC)
    answer: dict[str, Any] = (
        await cli.run(*rotate(sub_id, cli.org_id, "--grace-hours", "72"))
    ).json()
    after = datetime.now(UTC)

    secret = answer["secret"]
    assert re.fullmatch(r"[0-9a-f]{64}", secret)
    assert answer["id"] == sub_id
    assert answer["secret_prefix"] == secret[:8]
    assert base64.b64decode(answer["secret_whsec"].removeprefix("whsec_")) == secret.encode()
    expires = datetime.fromisoformat(answer["previous_secret_expires_at"])
    assert before + timedelta(hours=72) <= expires <= after + timedelta(hours=72)
    assert await stored(cli, sub_id) == (secret, old, expires)
    # The management API's answer, field for field.
    assert set(answer) == NewSubscriptionView.__required_keys__
    assert old not in str(answer)


async def test_the_grace_is_24_hours_by_default_and_0_stops_the_old_secret(cli: Cli) -> None:
    sub_id, _ = await subscription(cli)
    before = datetime.now(UTC)
    default = (await cli.run(*rotate(sub_id, cli.org_id))).json()
    expires = datetime.fromisoformat(default["previous_secret_expires_at"])
    assert timedelta(hours=24) <= expires - before < timedelta(hours=24, minutes=5)

    none = (await cli.run(*rotate(sub_id, cli.org_id, "--grace-hours", "0"))).json()
    assert none["previous_secret_expires_at"] is None
    assert await stored(cli, sub_id) == (none["secret"], None, None)


async def test_refusals_are_one_line_and_rotate_nothing(cli: Cli) -> None:
    sub_id, _ = await subscription(cli)
    other = (await cli.run("org", "create", "--name", "Other Aero Club")).json()
    theirs, _ = await subscription(cli, str(other["id"]))
    before = await stored(cli, sub_id), await stored(cli, theirs)
    nowhere = str(uuid.uuid4())
    cases = {
        "another organization's": rotate(theirs, cli.org_id),
        "unknown subscription": rotate(nowhere, cli.org_id),
        "unknown organization": rotate(sub_id, nowhere),
        "not an id": rotate("sub-1", cli.org_id),
        "not an org id": rotate(sub_id, "acme"),
        "too long a grace": rotate(sub_id, cli.org_id, "--grace-hours", "73"),
        "a negative grace": rotate(sub_id, cli.org_id, "--grace-hours", "-1"),
        "not a number": rotate(sub_id, cli.org_id, "--grace-hours", "soon"),
    }

    ran = await asyncio.gather(*(cli.run(*args) for args in cases.values()))

    reasons = {case: result.refused() for case, result in zip(cases, ran, strict=True)}
    assert reasons["another organization's"] == "hangar: No such webhook subscription"
    assert reasons["unknown subscription"] == "hangar: No such webhook subscription"
    assert nowhere in reasons["unknown organization"]
    assert "--id" in reasons["not an id"]
    assert "--org" in reasons["not an org id"]
    for case in ("too long a grace", "a negative grace", "not a number"):
        assert "--grace-hours" in reasons[case], reasons[case]
        assert "(see `hangar webhook rotate-secret --help`)" in reasons[case]
    assert "72" in reasons["too long a grace"]
    assert (await stored(cli, sub_id), await stored(cli, theirs)) == before


async def test_the_help_says_the_grace_and_what_is_printed(cli: Cli) -> None:
    ran = await cli.run("webhook", "rotate-secret", "--help")
    assert ran.code == 0, ran.stderr
    text = " ".join(ran.stdout.split())
    assert "--org ORG_ID" in text
    assert "--id SUBSCRIPTION_ID" in text
    assert "--grace-hours HOURS" in text
    assert "0 to 72, default 24; 0 stops it at once" in text
    assert "X-Service-Signature-Previous" in text
    top = await cli.run("--help")
    assert "webhook" in top.stdout
