"""An attempt that cannot be made for hangar's own reason is never the endpoint's failure
(issue 40): a worker that cannot open a subscription's secret sends nothing, counts nothing and
disables nothing; the delivery stays pending, an error line and a metric say so, and it is
delivered once a worker with the right key takes it. Likewise an attempt that fails
unexpectedly (here: recording its outcome) is left to its lease, counted as held.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select

from hangar.webhooks.delivery.attempting import HELD_FOR
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.outcomes import Recorder
from hangar.webhooks.models import Delivery
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from tests.fixtures.key_rotation import LOST_KEY, holding
from tests.fixtures.webhooks import Hooks, attempt_errors, deliveries, subscription

EVENTS = 6  # more than the five consecutive failures that would disable


def held_so_far(reason: str) -> float:
    found = REGISTRY.get_sample_value("hangar_webhook_deliveries_held_total", {"reason": reason})
    return found or 0.0


async def retries_at(hooks: Hooks, sub_id: uuid.UUID) -> set[datetime | None]:
    async with hooks.services.engine.connect() as conn:
        rows = await conn.scalars(
            select(Delivery.next_attempt_at).where(Delivery.subscription_id == sub_id)
        )
        return set(rows)


async def test_a_secret_no_key_opens_holds_its_deliveries_and_counts_nothing_against_the_endpoint(
    hooks: Hooks, caplog: pytest.LogCaptureFixture
) -> None:
    lost = holding(hooks.services, LOST_KEY)
    # One failure from being disabled: were the held attempts failures, it would be now.
    sub_id = await hooks.subscribe(
        secret_encrypted=lost.secret_box.seal(new_secret()), consecutive_failures=4
    )
    healthy = await hooks.subscribe("/healthy")
    for _ in range(EVENTS):
        await hooks.fire()
    held_before = held_so_far("secret_unreadable")

    with caplog.at_level(logging.ERROR, logger="hangar.webhooks"):
        assert await hooks.dispatcher().run_once() == 2 * EVENTS
    now = hooks.clock.now()

    assert await deliveries(hooks.services.engine, sub_id) == [("pending", 0)] * EVENTS
    assert await retries_at(hooks, sub_id) == {now + HELD_FOR}
    assert await subscription(hooks.services.engine, sub_id) == (True, 4, None)
    assert [r.path for r in hooks.receiver.requests] == ["/healthy"] * EVENTS
    assert await attempt_errors(hooks.services.engine, sub_id) == []
    assert await attempt_errors(hooks.services.engine, healthy) == [None] * EVENTS
    assert held_so_far("secret_unreadable") - held_before == EVENTS
    said = [r for r in caplog.records if "held" in r.getMessage()]
    assert len(said) == EVENTS
    assert all(r.levelno == logging.ERROR for r in said)
    assert "HANGAR_SECRET_KEY_PREVIOUS" in said[0].getMessage()
    assert await deliveries(hooks.services.engine, healthy) == [("succeeded", 1)] * EVENTS

    # Not due again before HELD_FOR: nothing is tried in a loop.
    hooks.clock.advance(seconds=HELD_FOR.total_seconds() - 1)
    assert await hooks.dispatcher().run_once() == 0

    # A worker holding the key (here, as a previous key after a rotation) delivers them all.
    hooks.clock.advance(seconds=1)
    keyed = holding(hooks.services, "a-new-current-key-" + "k" * 32, LOST_KEY)
    work = Dispatcher(keyed.engine, keyed.clock, hooks.sender, keyed.secret_box)
    assert await work.run_once() == EVENTS
    assert await deliveries(hooks.services.engine, sub_id) == [("succeeded", 1)] * EVENTS
    assert await subscription(hooks.services.engine, sub_id) == (True, 0, None)


async def test_an_outcome_the_database_refuses_is_left_to_its_lease_and_counted_as_held(
    hooks: Hooks, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub_id = await hooks.subscribe(consecutive_failures=4)
    await hooks.fire()
    held_before = held_so_far("error")

    async def refused(self: Recorder[object], outcomes: object, refill: object) -> None:
        raise RuntimeError("the database refused the batch")

    monkeypatch.setattr(Recorder, "_write", refused)
    await hooks.dispatcher().run_once()
    monkeypatch.undo()

    assert held_so_far("error") - held_before == 1
    assert await deliveries(hooks.services.engine, sub_id) == [("pending", 0)]
    assert await subscription(hooks.services.engine, sub_id) == (True, 4, None)
    assert await attempt_errors(hooks.services.engine, sub_id) == []
