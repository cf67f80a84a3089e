"""The client's webhook half against what hangar really sends: bodies built and signed by
hangar's own signer, carrying the data of events the product actions really fired."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import httpx
import orjson
import pytest

from hangar.webhooks.delivery import signing
from hangar.webhooks.events import catalogue
from hangar_client import (
    InvalidPayload,
    SeenDeliveries,
    organization_of,
    parse_event,
    verify_delivery,
    verify_signature,
)
from hangar_client.events import EVENT_TYPES, TestPing, UnknownData
from tests.fixtures.actions import raw_events
from tests.fixtures.all_events import fire_everything
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.python_client import wire

SECRET = "5e" * 32


def delivery(name: str, data: str, clock: FakeClock) -> tuple[bytes, dict[str, str]]:
    """The body and headers hangar's sender posts for one event."""
    body = signing.envelope(name, clock.now(), data)
    return body, signing.headers(
        name, "delivery-1", SECRET, body, event_id="event-1", sent_at=clock.now()
    )


def test_a_real_signature_verifies_and_anything_else_does_not(clock: FakeClock) -> None:
    body, headers = delivery("squawk.created", '{"id":"x","note":"ünï"}', clock)
    header = headers["X-Service-Signature"]
    assert verify_signature(SECRET, body, header)
    assert not verify_signature("0" * 64, body, header)
    assert not verify_signature(SECRET, body.replace(b'"x"', b'"y"'), header)
    assert not verify_signature(SECRET, orjson.dumps(orjson.loads(body)) + b" ", header)
    assert not verify_signature(SECRET, body, header.removeprefix("sha256="))
    assert not verify_signature(SECRET, body, header.upper())
    assert not verify_signature(SECRET, body, None)
    assert not verify_signature(SECRET, body, "sha256=ünïcode")  # no exception either


def test_organization_of_reads_the_header_hangar_sends(clock: FakeClock) -> None:
    body = signing.envelope("squawk.created", clock.now(), "{}")
    sent = signing.headers(
        "squawk.created", "d", SECRET, body, event_id="e", sent_at=clock.now(), org_id="org-7"
    )
    assert organization_of(sent) == "org-7"
    assert organization_of({k.lower(): v for k, v in sent.items()}) == "org-7"  # any case
    assert organization_of({"X-Service-Organization": "  "}) is None
    assert organization_of({}) is None


def test_during_a_rotation_either_secret_verifies_the_delivery(clock: FakeClock) -> None:
    """A delivery in a rotation's grace, as hangar signs it: the new secret verifies by
    X-Service-Signature, the old one by X-Service-Signature-Previous; any other does not."""
    old, new = "0a" * 32, "0b" * 32
    body = signing.envelope("squawk.created", clock.now(), '{"id":"x"}')
    sent = signing.headers(
        "squawk.created", "d-1", new, body, event_id="e-1", sent_at=clock.now(),
        previous_secret=old,
    )  # fmt: skip
    now = clock.now()
    assert verify_delivery(new, body, sent, now=now)
    assert verify_delivery(old, body, sent, now=now)
    assert verify_delivery(old, body, {k.lower(): v for k, v in sent.items()}, now=now)
    assert not verify_delivery("0c" * 32, body, sent, now=now)
    assert not verify_delivery(old, body + b" ", sent, now=now)
    # Once the grace is over only the new secret signs: the old one no longer verifies.
    after = signing.headers("squawk.created", "d-1", new, body, event_id="e-1", sent_at=now)
    assert verify_delivery(new, body, after, now=now)
    assert not verify_delivery(old, body, after, now=now)


def test_a_copy_sent_again_is_stale_or_a_repeat(clock: FakeClock) -> None:
    """Replays: a delivery verifies within 5 minutes of its signed time, either way, and not
    after; given another id or time it does not verify (webhook-signature covers both); the
    contract's signature alone is not enough; a repeat within the tolerance is seen by its
    id, in any header case."""
    body, sent = delivery("squawk.created", '{"id":"x"}', clock)
    signed_at = clock.now()
    for off in (timedelta(0), timedelta(minutes=5), timedelta(minutes=-5)):
        assert verify_delivery(SECRET, body, sent, now=signed_at + off)
    for off in (timedelta(minutes=5, seconds=1), timedelta(minutes=-5, seconds=-1)):
        assert not verify_delivery(SECRET, body, sent, now=signed_at + off)
    assert verify_delivery(
        SECRET, body, sent, now=signed_at + timedelta(minutes=9), tolerance=timedelta(minutes=10)
    )
    now = signed_at + timedelta(minutes=1)
    renamed = {**sent, "X-Service-Delivery": "delivery-2", "webhook-id": "delivery-2"}
    assert not verify_delivery(SECRET, body, renamed, now=now)
    restamped = {**sent, "webhook-timestamp": str(int(sent["webhook-timestamp"]) + 60)}
    assert not verify_delivery(SECRET, body, restamped, now=now)
    undated = {k: v for k, v in sent.items() if not k.startswith("webhook-")}
    assert not verify_delivery(SECRET, body, undated, now=now)
    for hostile in ("9" * 5000, "-60", "1e9", "١٢٣", ""):  # no exception, no slow int()
        assert not verify_delivery(SECRET, body, {**sent, "webhook-timestamp": hostile}, now=now)
    assert not verify_delivery(SECRET, body, {**sent, "webhook-signature": "v1,ünï v1,"}, now=now)
    # Without `now`, the real clock: this delivery was signed at the fake clock's time.
    assert not verify_delivery(SECRET, body, sent)

    seen = SeenDeliveries(limit=2)
    assert seen.first_time(sent)
    assert not seen.first_time({k.lower(): v for k, v in sent.items()})
    assert seen.first_time({"webhook-id": "delivery-2"})
    assert seen.first_time({"webhook-id": "delivery-3"})  # the oldest id is forgotten
    assert seen.first_time(sent)


async def test_each_of_the_13_events_parses_to_its_type(
    admin: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    await fire_everything(admin, org, clock)
    recorded = await raw_events(org.engine, org.id)
    assert {name for name, _ in recorded} == set(catalogue.EVENT_NAMES)
    for name, data in recorded:
        body, headers = delivery(name, data, clock)
        assert verify_signature(SECRET, body, headers["X-Service-Signature"])
        event = parse_event(body)
        assert event.event == name == headers["X-Service-Event"]
        assert event.delivered_at == clock.now()
        assert type(event.data) is EVENT_TYPES[name]
        parsed = {
            f.name: wire(getattr(event.data, f.name))
            for f in dataclasses.fields(event.data)
            if getattr(event.data, f.name) is not None or f.default is dataclasses.MISSING
        }
        assert parsed == orjson.loads(data), name  # every field, none lost, none invented


def test_test_ping_and_unknown_events(clock: FakeClock) -> None:
    body, _ = delivery(catalogue.TEST_PING, orjson.dumps(catalogue.ping("hi")).decode(), clock)
    assert parse_event(body).data == TestPing("hi")
    body, _ = delivery("runway.closed", '{"id":"r1","nested":{"a":[1]}}', clock)
    event = parse_event(body)
    assert event.event == "runway.closed"
    assert event.data == UnknownData({"id": "r1", "nested": {"a": [1]}})


@pytest.mark.parametrize(
    "data",
    [
        '{"id":"s1","aircraft_id":"a1","description":"d"}',  # severity missing
        '{"id":"s1","aircraft_id":"a1","description":"d","severity":3}',
        "[]",
    ],
)
def test_a_malformed_known_event_raises_invalid_payload(data: str, clock: FakeClock) -> None:
    body, _ = delivery(catalogue.SQUAWK_ESCALATED, data, clock)
    with pytest.raises(InvalidPayload):
        parse_event(body)


@pytest.mark.parametrize("body", [b"", b"not json", b"[]", b'{"event":"x"}'])
def test_a_body_that_is_no_envelope_raises_invalid_payload(body: bytes) -> None:
    with pytest.raises(InvalidPayload):
        parse_event(body)
