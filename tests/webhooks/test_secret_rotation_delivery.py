"""Secret rotation end to end (issue 28): real deliveries to a receiver on loopback that holds
one secret, as an integrator's does. During the grace every attempt (a first one, a retry, a
redelivery, a test ping) carries the new secret's `X-Service-Signature` and the replaced one's
`X-Service-Signature-Previous`, and `webhook-signature` both; so a receiver holding either
verifies every delivery, and one that switches mid-grace loses none. After the grace (the
injected clock moved), and with a grace of 0, only the new secret signs: decided when each
attempt is sent, not when the delivery was queued."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import orjson
import pytest
import trustme
from sqlalchemy import select
from standardwebhooks import Webhook, WebhookVerificationError

from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.signing import headers, signature, standard_signature
from hangar.webhooks.models import Delivery
from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.receivers import Received, https_endpoint
from tests.fixtures.secret_rotation import (
    PREVIOUS,
    SIGNATURE,
    HoldingReceiver,
    hooks_url,
    rotated,
    signed_by,
    subscribed,
)
from tests.fixtures.webhooks import SECRET, Hooks

# What a delivery carries besides the transport's own headers (Host, Content-Length, ...).
SIGNED = (
    "Content-Type",
    "User-Agent",
    "X-Service-Event",
    "X-Service-Signature",
    "X-Service-Delivery",
    "X-Service-Event-Id",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
)


@pytest.fixture
async def holder(ca: trustme.CA) -> AsyncIterator[HoldingReceiver]:
    async with https_endpoint(ca, HoldingReceiver(port=0)) as state:
        yield state


@pytest.fixture
def rotation(
    services: Services, org: Org, holder: HoldingReceiver, sender: Sender, clock: FakeClock
) -> Hooks:
    """The delivery tests' bundle, delivering to the receiver that holds a secret."""
    return Hooks(services, org, holder, sender, clock)


async def statuses(services: Services, sub_id: str) -> list[tuple[str, int]]:
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            select(Delivery.status, Delivery.attempts_made)
            .where(Delivery.subscription_id == uuid.UUID(sub_id))
            .order_by(Delivery.created_at, Delivery.id)
        )
        return [(r.status, r.attempts_made) for r in rows]


def v1_signatures(got: Received) -> list[str]:
    return got.headers["webhook-signature"].split(" ")


async def deliver_one(hooks: Hooks) -> Received:
    """An event fired now and its one attempt; what the receiver got."""
    before = len(hooks.receiver.requests)
    await hooks.fire()
    assert await hooks.dispatcher().run_once() == 1
    assert len(hooks.receiver.requests) == before + 1
    return hooks.receiver.requests[-1]


async def test_receivers_holding_either_secret_verify_every_delivery_of_the_grace(
    rotation: Hooks,
    holder: HoldingReceiver,
    admin: httpx.AsyncClient,
    resolver: FakeResolver,
    clock: FakeClock,
) -> None:
    org = rotation.org
    created = await subscribed(admin, org, holder.url(), resolver=resolver)
    old = created["secret"]
    holder.secret = old
    before = await deliver_one(rotation)
    assert signed_by(before.headers, before.body, old) == SIGNATURE
    assert PREVIOUS not in before.headers

    new = (await rotated(admin, org, created["id"], grace_hours=24))["secret"]
    # The receiver still holds the old secret: it verifies by X-Service-Signature-Previous,
    # while the same delivery verifies by X-Service-Signature for one holding the new one.
    during = [await deliver_one(rotation) for _ in range(3)]
    for got in during:
        assert signed_by(got.headers, got.body, new) == SIGNATURE
        assert signed_by(got.headers, got.body, old) == PREVIOUS
        assert got.headers[SIGNATURE] == signature(new, got.body)
        assert got.headers[PREVIOUS] == signature(old, got.body)
    # It switches mid-grace: nothing it receives from then on fails either.
    clock.advance(hours=12)
    holder.secret = new
    switched = [await deliver_one(rotation) for _ in range(3)]
    for got in switched:
        assert signed_by(got.headers, got.body, new) == SIGNATURE
        assert signed_by(got.headers, got.body, old) == PREVIOUS
    assert holder.matched == [SIGNATURE] + [PREVIOUS] * 3 + [SIGNATURE] * 3
    # No delivery lost, none even retried.
    assert await statuses(rotation.services, created["id"]) == [("succeeded", 1)] * 7

    # After the grace only the new secret signs: one still holding the old one is refused.
    clock.advance(hours=12)
    after = await deliver_one(rotation)
    assert PREVIOUS not in after.headers
    assert signed_by(after.headers, after.body, new) == SIGNATURE
    assert signed_by(after.headers, after.body, old) is None
    assert len(v1_signatures(after)) == 1
    holder.secret = old
    late = await deliver_one(rotation)
    assert holder.matched[-1] is None  # 401: the old secret signs nothing any more
    assert PREVIOUS not in late.headers


async def test_a_delivery_queued_in_the_grace_and_sent_after_it_has_the_new_signature_alone(
    rotation: Hooks, holder: HoldingReceiver, admin: httpx.AsyncClient, resolver: FakeResolver
) -> None:
    org, clock = rotation.org, rotation.clock
    created = await subscribed(admin, org, holder.url(), resolver=resolver)
    new = (await rotated(admin, org, created["id"], grace_hours=1))["secret"]
    holder.secret = new
    clock.advance(minutes=59, seconds=59)
    await rotation.fire()  # queued a second before the grace ends
    clock.advance(seconds=1)  # sent the instant it ends
    assert await rotation.dispatcher().run_once() == 1

    [got] = holder.requests
    assert PREVIOUS not in got.headers
    assert len(v1_signatures(got)) == 1
    assert signed_by(got.headers, got.body, new) == SIGNATURE
    assert signed_by(got.headers, got.body, created["secret"]) is None


async def test_a_retry_after_the_grace_carries_only_the_new_signature(
    rotation: Hooks, holder: HoldingReceiver, admin: httpx.AsyncClient, resolver: FakeResolver
) -> None:
    org, clock = rotation.org, rotation.clock
    created = await subscribed(admin, org, holder.url(), resolver=resolver)
    new = (await rotated(admin, org, created["id"], grace_hours=1))["secret"]
    holder.secret = "0" * 64  # holds neither: the first attempt fails and is retried
    clock.advance(minutes=59, seconds=59)
    await rotation.fire()
    work = rotation.dispatcher()
    assert await work.run_once() == 1
    clock.advance(seconds=2)
    holder.secret = new
    assert await work.run_once() == 1

    first, retry = holder.requests
    assert first.headers["X-Service-Delivery"] == retry.headers["X-Service-Delivery"]
    assert signed_by(first.headers, first.body, created["secret"]) == PREVIOUS
    assert PREVIOUS not in retry.headers
    assert len(v1_signatures(retry)) == 1
    assert holder.matched == [None, SIGNATURE]
    assert await statuses(rotation.services, created["id"]) == [("succeeded", 2)]


async def test_a_test_ping_and_a_redelivery_are_signed_by_both_during_the_grace(
    rotation: Hooks, holder: HoldingReceiver, admin: httpx.AsyncClient, resolver: FakeResolver
) -> None:
    org = rotation.org
    created = await subscribed(admin, org, holder.url(), resolver=resolver)
    old = created["secret"]
    holder.secret = old
    fired = await deliver_one(rotation)  # before the rotation: the old secret alone
    new = (await rotated(admin, org, created["id"]))["secret"]
    sub = hooks_url(org, created["id"])

    delivery_id = fired.headers["X-Service-Delivery"]
    redeliver = await admin.post(f"{sub}/deliveries/{delivery_id}/redeliver")
    assert redeliver.status_code == 202, redeliver.text
    assert await rotation.dispatcher().run_once() == 1
    ping = await admin.post(f"{sub}/test")
    assert ping.status_code == 202, ping.text
    assert await rotation.dispatcher().run_once() == 1

    redelivered, pinged = holder.requests[-2:]
    assert redelivered.headers["X-Service-Delivery"] == delivery_id
    assert pinged.headers["X-Service-Event"] == "test.ping"
    for got in (redelivered, pinged):
        assert signed_by(got.headers, got.body, new) == SIGNATURE
        assert signed_by(got.headers, got.body, old) == PREVIOUS
        assert len(v1_signatures(got)) == 2
    assert holder.matched == [SIGNATURE, PREVIOUS, PREVIOUS]


async def test_rotating_again_in_the_grace_or_with_none_stops_the_older_secrets_at_once(
    rotation: Hooks, holder: HoldingReceiver, admin: httpx.AsyncClient, resolver: FakeResolver
) -> None:
    org = rotation.org
    created = await subscribed(admin, org, holder.url(), resolver=resolver)
    first = (await rotated(admin, org, created["id"], grace_hours=72))["secret"]
    second = (await rotated(admin, org, created["id"], grace_hours=72))["secret"]
    holder.secret = second
    got = await deliver_one(rotation)
    assert signed_by(got.headers, got.body, second) == SIGNATURE
    assert signed_by(got.headers, got.body, first) == PREVIOUS
    assert signed_by(got.headers, got.body, created["secret"]) is None  # dropped
    assert len(v1_signatures(got)) == 2

    third = (await rotated(admin, org, created["id"], grace_hours=0))["secret"]
    holder.secret = third
    now_alone = await deliver_one(rotation)
    assert PREVIOUS not in now_alone.headers
    assert len(v1_signatures(now_alone)) == 1
    assert signed_by(now_alone.headers, now_alone.body, second) is None
    assert holder.matched == [SIGNATURE, SIGNATURE]


async def test_standard_webhooks_verifiers_accept_either_secret_during_the_grace(
    rotation: Hooks, holder: HoldingReceiver, services: Services, resolver: FakeResolver
) -> None:
    # The verifier compares webhook-timestamp with the real time: the clock starts from it.
    org, clock = rotation.org, rotation.clock
    clock.set(datetime.now(UTC))
    async with signed_in_client(services, org, "admin") as admin:
        created = await subscribed(admin, org, holder.url(), resolver=resolver)
        answer = await rotated(admin, org, created["id"], grace_hours=1)
    holder.secret = answer["secret"]
    got = await deliver_one(rotation)

    payload = orjson.loads(got.body)
    for whsec in (created["secret_whsec"], answer["secret_whsec"]):
        assert Webhook(whsec).verify(got.body, got.headers) == payload
    # Each signature is its own secret's: with only one of them, each secret still verifies,
    # and a third secret verifies neither.
    new_sig, old_sig = v1_signatures(got)
    assert Webhook(answer["secret_whsec"]).verify(
        got.body, {**got.headers, "webhook-signature": new_sig}
    )
    assert Webhook(created["secret_whsec"]).verify(
        got.body, {**got.headers, "webhook-signature": old_sig}
    )
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(created["secret_whsec"]).verify(
            got.body, {**got.headers, "webhook-signature": new_sig}
        )
    stranger = "whsec_" + "c3RyYW5nZXI="
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(stranger).verify(got.body, got.headers)

    # After the grace only the new secret's signature is there.
    clock.advance(hours=1)
    after = await deliver_one(rotation)
    stamp = int(after.headers["webhook-timestamp"])
    assert v1_signatures(after) == [
        standard_signature(answer["secret"], after.headers["webhook-id"], stamp, after.body)
    ]


async def test_another_organizations_subscription_is_not_touched_by_a_rotation(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    mine = await hooks.subscribe("/mine")
    await hooks.subscribe("/theirs", org=other)
    await rotated(admin, hooks.org, mine, grace_hours=72)
    await hooks.fire()
    await hooks.fire(org=other)
    assert await hooks.dispatcher().run_once() == 2

    [ours] = hooks.receiver.heard("/mine")
    [theirs] = hooks.receiver.heard("/theirs")
    assert signed_by(ours.headers, ours.body, SECRET) == PREVIOUS
    assert signed_by(theirs.headers, theirs.body, SECRET) == SIGNATURE
    assert PREVIOUS not in theirs.headers
    assert len(v1_signatures(theirs)) == 1


async def test_without_a_rotation_the_dispatcher_sends_what_the_bench_client_sends(
    hooks: Hooks,
) -> None:
    """bench/webhooks.py's bare client signs with signing.headers as the dispatcher does: with
    no rotation, the same headers, and no previous signature."""
    await hooks.subscribe()
    await hooks.fire()
    assert await hooks.dispatcher().run_once() == 1
    [got] = hooks.receiver.requests
    envelope = orjson.loads(got.body)
    sent_at = datetime.fromisoformat(envelope["delivered_at"])
    bench = headers(
        envelope["event"],
        got.headers["X-Service-Delivery"],
        SECRET,
        got.body,
        event_id=got.headers["X-Service-Event-Id"],
        sent_at=sent_at,
    )
    assert list(bench) == list(SIGNED)
    assert {name: got.headers[name] for name in SIGNED} == bench
    assert PREVIOUS not in got.headers
