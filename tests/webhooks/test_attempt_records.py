"""What an attempt keeps of the answer, and attempts that cannot even be made."""

from __future__ import annotations

import gzip

from sqlalchemy import select

from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import RESPONSE_KEPT_BYTES, Sender
from hangar.webhooks.models import Attempt, Delivery
from tests.fixtures.factories import Org
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import attempt_errors, deliveries, dispatcher, fire, subscribe


async def kept_bodies(services: Services, sub_id: object) -> list[str | None]:
    async with services.engine.connect() as conn:
        rows = await conn.scalars(
            select(Attempt.response_body)
            .join(Delivery, Delivery.id == Attempt.delivery_id)
            .where(Delivery.subscription_id == sub_id)
        )
        return list(rows)


async def test_exactly_the_first_2_kb_of_a_long_answer_is_kept(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.body = b"".join(b"%07d\n" % n for n in range(4000))  # 32 KB
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)
    await dispatcher(services, sender).run_once()
    assert await kept_bodies(services, sub_id) == [receiver.body[:RESPONSE_KEPT_BYTES].decode()]


async def test_binary_answers_with_nul_bytes_are_kept_as_text(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    # PostgreSQL text refuses NUL: recording this attempt must not fail (and so loop forever).
    receiver.body = gzip.compress(b'{"ok": true}') + b"\x00tail"
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)
    await dispatcher(services, sender).run_once()
    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)]
    [kept] = await kept_bodies(services, sub_id)
    assert kept is not None
    assert "\x00" not in kept
    assert kept.endswith("\ufffdtail")
    # We never ask for a compressed answer in the first place.
    assert receiver.requests[0].headers["Accept-Encoding"] == "identity"


async def test_a_damaged_secret_sends_nothing_and_is_no_attempt(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    # Held, not failed (issue 40; tests/webhooks/test_held_deliveries.py for a wrong key).
    sub_id = await subscribe(services, org, receiver.url(), secret_encrypted="not-a-fernet-token")
    await fire(services, org)
    assert await dispatcher(services, sender).run_once() == 1
    assert receiver.requests == []  # nothing unsigned ever leaves
    assert await deliveries(services.engine, sub_id) == [("pending", 0)]
    assert await attempt_errors(services.engine, sub_id) == []
