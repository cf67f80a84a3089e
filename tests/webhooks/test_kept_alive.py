"""Connections to a destination are kept alive and reused (hangar.webhooks.delivery.sender): many
deliveries to one endpoint arrive over at most its cap of connections, shared by every
subscription to the same host and port; a receiver that closes after each answer still gets
every delivery; an answer far past what is kept closes its connection; and a name that now
resolves to a private address is refused before any connection, kept or new."""

from __future__ import annotations

import pytest

from hangar.kit.container import Services
from hangar.webhooks.delivery.sender import RESPONSE_KEPT_BYTES, Sender
from hangar.webhooks.delivery.states import MAX_IN_FLIGHT
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeResolver
from tests.fixtures.receivers import HOST, Receiver
from tests.fixtures.webhooks import attempt_errors, deliveries, dispatcher, fire, subscribe


async def deliver_all(services: Services, sender: Sender) -> None:
    work = dispatcher(services, sender)
    while await work.run_once(MAX_IN_FLIGHT):
        pass


async def test_a_hundred_deliveries_arrive_over_at_most_the_caps_connections(
    services: Services, org: Org, other: Org, receiver: Receiver, sender: Sender
) -> None:
    ours = await subscribe(services, org, receiver.url("/ours"))
    theirs = await subscribe(services, other, receiver.url("/theirs"))  # the same host and port
    for _ in range(50):
        await fire(services, org)
        await fire(services, other)

    await deliver_all(services, sender)

    assert len(receiver.requests) == 100
    assert len(receiver.connections()) <= MAX_IN_FLIGHT  # one TLS handshake per POST: 100
    assert await deliveries(services.engine, ours) == [("succeeded", 1)] * 50
    assert await deliveries(services.engine, theirs) == [("succeeded", 1)] * 50


async def test_a_receiver_that_closes_after_each_answer_gets_every_delivery(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.close_each = True
    sub_id = await subscribe(services, org, receiver.url())
    for _ in range(30):
        await fire(services, org)

    await deliver_all(services, sender)

    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)] * 30
    assert len(receiver.connections()) == 30  # a new one each time, as it asked


async def test_an_answer_far_longer_than_what_is_kept_closes_its_connection(
    services: Services, org: Org, receiver: Receiver, sender: Sender
) -> None:
    # A megabyte: more than the client has read when the kept 2 KB are in (what arrived
    # already in one read, a few tens of KB, it may keep the connection for).
    receiver.body = b"x" * (RESPONSE_KEPT_BYTES * 512)
    sub_id = await subscribe(services, org, receiver.url())
    for _ in range(3):
        await fire(services, org)
        await deliver_all(services, sender)  # one at a time: each could reuse the last's

    assert await deliveries(services.engine, sub_id) == [("succeeded", 1)] * 3
    # Not read to its end to keep the connection: each delivery had a connection of its own.
    assert len(receiver.connections()) == 3


@pytest.mark.parametrize("private", ["10.0.0.7", "127.0.0.2", "169.254.169.254"])
async def test_a_name_now_private_is_refused_and_its_kept_connection_unused(
    services: Services,
    org: Org,
    receiver: Receiver,
    sender: Sender,
    resolver: FakeResolver,
    private: str,
) -> None:
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)
    await deliver_all(services, sender)  # a connection to 127.0.0.1, kept alive
    resolver.answers[HOST] = [private]

    await fire(services, org)
    await deliver_all(services, sender)

    assert len(receiver.requests) == 1  # nothing reached it over the kept connection
    assert "WEBHOOK_URL_PRIVATE_IP" in await attempt_errors(services.engine, sub_id)
