"""Retention erases a webhook secret that a rotation replaced once its grace has ended: it
signs nothing any more, and a secret kept is one more to leak. One whose grace still runs is
kept (the dispatcher signs with it), and so is every subscription's current secret. Both
organizations alike."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from hangar.kit.container import Services
from hangar.webhooks.delivery.pruning import PREVIOUS_SECRETS
from hangar.webhooks.subscriptions import manage as subscriptions
from tests.fixtures.factories import Org
from tests.fixtures.retention import NOW, pruned
from tests.fixtures.secret_rotation import stored_secrets
from tests.fixtures.webhooks import SECRET, subscribe

URL = "https://hooks.example.com/hangar"


async def rotated(services: Services, org: Org, at: datetime, grace_hours: int) -> uuid.UUID:
    """A subscription of `org` whose secret was rotated at `at` with `grace_hours`."""
    sub_id = await subscribe(services, org, URL)
    async with services.engine.begin() as conn:
        await subscriptions.rotate_secret(
            conn, org.id, sub_id, grace_hours=grace_hours, box=services.secret_box, now=at
        )
    return sub_id


async def secrets_of(services: Services, sub_id: uuid.UUID) -> tuple[str, str | None, object]:
    return await stored_secrets(services.engine, services.secret_box, sub_id)


async def test_a_previous_secret_is_erased_once_its_grace_has_ended(
    services: Services, org: Org, other: Org
) -> None:
    await pruned(services)  # what other tests left past its grace, gone first
    ended, at_its_end, running, never = [], [], [], []
    for owner in (org, other):
        ended.append(await rotated(services, owner, NOW - timedelta(hours=3), 2))
        at_its_end.append(await rotated(services, owner, NOW - timedelta(hours=72), 72))
        running.append(await rotated(services, owner, NOW - timedelta(hours=1), 2))
        never.append(await subscribe(services, owner, URL))
    current = {sub: (await secrets_of(services, sub))[0] for sub in ended + at_its_end + running}

    done = await pruned(services)

    assert done[PREVIOUS_SECRETS] == 4
    for sub in ended + at_its_end:
        assert await secrets_of(services, sub) == (current[sub], None, None)
    for sub in running:
        new, previous, until = await secrets_of(services, sub)
        assert (new, previous) == (current[sub], SECRET)  # signs beside the new one until
        assert until is not None
    for sub in never:
        assert await secrets_of(services, sub) == (SECRET, None, None)
    assert (await pruned(services))[PREVIOUS_SECRETS] == 0  # nothing twice
