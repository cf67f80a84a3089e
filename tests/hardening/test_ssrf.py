"""SSRF: hostile webhook targets are refused on save and again at delivery, and no
connection is ever opened to them.

Every test that delivers runs with the PRODUCTION address policy (``Sender(resolver)``, no
``is_allowed``) and with a tripwire on the event loop: any connection the sender attempts,
to whatever address, is recorded and diverted to the test's loopback listener. A positive
control proves the tripwire catches a connection when the policy lets one through.
"""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import pytest
import trustme
from sqlalchemy import select

from hangar.kit.container import Services
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.retries import MAX_ATTEMPTS, RETRY_WAITS
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.events import catalogue, outbox
from hangar.webhooks.models import Attempt, Delivery
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock, FakeResolver
from tests.fixtures.network import Listener, Tripwire
from tests.fixtures.receivers import HOST, Receiver, loopback_only
from tests.fixtures.webhooks import subscribe

PARSE = "WEBHOOK_URL_PARSE_FAILED"
HTTPS = "WEBHOOK_URL_HTTPS_REQUIRED"
PRIVATE = "WEBHOOK_URL_PRIVATE_IP"
PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"


@dataclass(frozen=True)
class Literal:
    """A URL whose host is refused by the policy without DNS; {port} is the listener's."""

    url: str
    code: str


LITERALS: dict[str, Literal] = {
    # loopback, private, link-local, cloud metadata
    "loopback": Literal("https://127.0.0.1:{port}/hook", PRIVATE),
    "loopback-other": Literal("https://127.42.0.9:{port}/hook", PRIVATE),
    "loopback-v6": Literal("https://[::1]:{port}/hook", PRIVATE),
    "rfc1918-10": Literal("https://10.0.0.1:{port}/hook", PRIVATE),
    "rfc1918-172": Literal("https://172.16.5.4:{port}/hook", PRIVATE),
    "rfc1918-192": Literal("https://192.168.1.1:{port}/hook", PRIVATE),
    "link-local": Literal("https://169.254.10.20:{port}/hook", PRIVATE),
    "metadata-aws": Literal("https://169.254.169.254:{port}/latest/meta-data/", PRIVATE),
    "metadata-aws-v6": Literal("https://[fd00:ec2::254]:{port}/latest/", PRIVATE),
    "metadata-alibaba": Literal("https://100.100.100.200:{port}/latest/", PRIVATE),
    "metadata-oracle": Literal("https://192.0.0.192:{port}/latest/", PRIVATE),
    "metadata-gcp-name": Literal("https://metadata.google.internal:{port}/v1/", PRIVATE),
    "cgnat": Literal("https://100.64.0.1:{port}/hook", PRIVATE),
    "multicast": Literal("https://224.0.0.251:{port}/hook", PRIVATE),
    "multicast-v6": Literal("https://[ff02::1]:{port}/hook", PRIVATE),
    "reserved": Literal("https://240.0.0.1:{port}/hook", PRIVATE),
    "broadcast": Literal("https://255.255.255.255:{port}/hook", PRIVATE),
    "documentation": Literal("https://192.0.2.10:{port}/hook", PRIVATE),
    "this-host": Literal("https://0.0.0.0:{port}/hook", PRIVATE),
    "this-host-v6": Literal("https://[::]:{port}/hook", PRIVATE),
    "zero": Literal("https://0:{port}/hook", PRIVATE),
    # IPv4 notations
    "decimal": Literal("https://2130706433:{port}/hook", PRIVATE),
    "octal": Literal("https://0177.0.0.1:{port}/hook", PRIVATE),
    "hex": Literal("https://0x7f000001:{port}/hook", PRIVATE),
    "hex-dotted": Literal("https://0x7f.0x0.0x0.0x1:{port}/hook", PRIVATE),
    "short": Literal("https://127.1:{port}/hook", PRIVATE),
    "short-hex": Literal("https://0x7f.1:{port}/hook", PRIVATE),
    "metadata-decimal": Literal("https://2852039166:{port}/hook", PRIVATE),
    "full-width": Literal("https://\uff11\uff12\uff17.\uff10.\uff10.\uff11:{port}/hook", PRIVATE),
    "ideographic-dots": Literal("https://127\u30020\u30020\u30021:{port}/hook", PRIVATE),
    "percent-encoded": Literal("https://%31%32%37.0.0.1:{port}/hook", PRIVATE),
    "trailing-dot": Literal("https://127.0.0.1.:{port}/hook", PRIVATE),
    # IPv6 forms that carry an IPv4 address
    "v4-mapped": Literal("https://[::ffff:127.0.0.1]:{port}/hook", PRIVATE),
    "v4-mapped-hex": Literal("https://[::ffff:a9fe:a9fe]:{port}/hook", PRIVATE),
    "v4-compatible": Literal("https://[::127.0.0.1]:{port}/hook", PRIVATE),
    "v4-translated": Literal("https://[::ffff:0:127.0.0.1]:{port}/hook", PRIVATE),
    "nat64": Literal("https://[64:ff9b::7f00:1]:{port}/hook", PRIVATE),
    "nat64-local": Literal("https://[64:ff9b:1::a00:1]:{port}/hook", PRIVATE),
    "6to4": Literal("https://[2002:7f00:1::1]:{port}/hook", PRIVATE),
    "teredo": Literal("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:{port}/hook", PRIVATE),
    "site-local": Literal("https://[fec0::1]:{port}/hook", PRIVATE),
    "unique-local": Literal("https://[fc00::1]:{port}/hook", PRIVATE),
    "link-local-v6": Literal("https://[fe80::1]:{port}/hook", PRIVATE),
    "zone-id": Literal("https://[fe80::1%25lo]:{port}/hook", PRIVATE),
    "zone-id-public": Literal("https://[2606:4700::1111%25eth0]:{port}/hook", PRIVATE),
    # names that never reach DNS
    "localhost": Literal("https://localhost:{port}/hook", PRIVATE),
    "localhost-trailing-dot": Literal("https://localhost.:{port}/hook", PRIVATE),
    "single-label": Literal("https://kubernetes:{port}/hook", PRIVATE),
    # parser confusion: userinfo, fragments, backslashes, control characters
    "userinfo": Literal("https://" + HOST + "@127.0.0.1:{port}/hook", PARSE),
    "userinfo-port": Literal("https://" + HOST + ":443@127.0.0.1:{port}/hook", PARSE),
    "userinfo-encoded": Literal("https://" + HOST + "%40127.0.0.1:{port}/hook", PARSE),
    "fragment-at": Literal("https://127.0.0.1:{port}#@" + HOST + "/hook", PRIVATE),
    "backslash-at": Literal("https://127.0.0.1:{port}\\@" + HOST + "/hook", PARSE),
    # (NUL itself is refused earlier, by every request body, with VALIDATION_ERROR.)
    "control-soh": Literal("https://" + HOST + "\x01.127.0.0.1:{port}/hook", PARSE),
    "control-del": Literal("https://127.0.0.1\x7f:{port}/hook", PARSE),
    "tab": Literal("https://127.0.0.1\t:{port}/hook", PARSE),
    "newline-encoded": Literal("https://127.0.0.1%0a:{port}/hook", PARSE),
    "zero-width": Literal("https://127.0.0.1\u200b:{port}/hook", PARSE),
    "plain-http": Literal("http://127.0.0.1:{port}/hook", HTTPS),
}

# Names that answer a public address on save and these addresses at delivery (rebinding).
REBINDING: dict[str, list[str]] = {
    "to-loopback": ["127.0.0.1"],
    "to-loopback-v6": ["::1"],
    "to-rfc1918": ["10.0.0.5"],
    "to-metadata": ["169.254.169.254"],
    "to-metadata-v6": ["fd00:ec2::254"],
    "to-metadata-alibaba": ["100.100.100.200"],
    "to-metadata-oracle": ["192.0.0.192"],
    "to-cgnat": ["100.64.1.1"],
    "to-multicast": ["239.255.255.250"],
    "to-reserved": ["240.1.2.3"],
    "to-this-host": ["0.0.0.0"],  # noqa: S104
    "to-unspecified-v6": ["::"],
    "to-v4-mapped": ["::ffff:127.0.0.1"],
    "to-v4-compatible": ["::10.0.0.1"],
    "to-nat64": ["64:ff9b::a9fe:a9fe"],
    "to-6to4": ["2002:a00:1::1"],
    "to-teredo": ["2001:0:4136:e378:8000:63bf:3fff:fdd2"],
    "to-site-local": ["fec0::1"],
    "to-unique-local": ["fd12:3456::1"],
    "to-link-local-v6": ["fe80::1"],
    "public-and-private": [PUBLIC_V4, "10.0.0.1"],
    "private-and-public": ["192.168.0.10", PUBLIC_V4],
    "public-v6-and-loopback": [PUBLIC_V6, "127.0.0.1"],
    "public-and-mapped": [PUBLIC_V4, "::ffff:169.254.169.254"],
}


def hooks_url(org: Org) -> str:
    return f"/api/orgs/{org.id}/webhooks"


def delivery_sender(resolver: FakeResolver) -> Sender:
    """The production sender: production address policy, no loopback allowance."""
    return Sender(resolver, timeout=5.0)


async def fire(services: Services, org: Org) -> None:
    async with services.engine.begin() as conn:
        await outbox.record(
            conn, org.id, [catalogue.SQUAWK_CREATED], {"id": "s1"}, services.clock.now()
        )


async def attempts_of(services: Services, sub_id: uuid.UUID) -> list[tuple[int | None, str]]:
    async with services.engine.connect() as conn:
        rows = await conn.execute(
            select(Attempt.status_code, Attempt.error)
            .join(Delivery, Delivery.id == Attempt.delivery_id)
            .where(Delivery.subscription_id == sub_id)
            .order_by(Attempt.number)
        )
        return [(r.status_code, r.error or "") for r in rows]


async def deliver_all_attempts(services: Services, sender: Sender, clock: FakeClock) -> None:
    work = Dispatcher(services.engine, clock, sender, services.secret_box)
    for wait in (*RETRY_WAITS, None):
        await work.run_once()
        if wait is not None:
            clock.advance(seconds=wait.total_seconds())


async def deliver_once(services: Services, sender: Sender) -> None:
    work = Dispatcher(services.engine, services.clock, sender, services.secret_box)
    assert await work.run_once() >= 1


def assert_no_connection(tripwire: Tripwire, listener: Listener) -> None:
    assert tripwire.attempts == []
    assert listener.connections == []


# --- the positive control: the tripwire does catch a connection -------------------------


async def test_the_tripwire_catches_a_connection_the_policy_allows(
    services: Services,
    org: Org,
    resolver: FakeResolver,
    tripwire: Tripwire,
    listener: Listener,
) -> None:
    """Without this, 'zero connections' below could be a tripwire that never fires."""
    resolver.answers["public.example.com"] = [PUBLIC_V4]
    sub_id = await subscribe(services, org, f"https://public.example.com:{listener.port4}/hook")
    await fire(services, org)
    await Dispatcher(
        services.engine, services.clock, delivery_sender(resolver), services.secret_box
    ).run_once()
    assert [a[0] for a in tripwire.attempts] == [PUBLIC_V4]
    assert len(listener.connections) == 1
    [(status, error)] = await attempts_of(services, sub_id)
    assert status is None
    assert error.startswith("connection failed") or error.startswith("TLS error")


# --- literal hosts: refused on save, and refused at delivery without connecting ----------


@pytest.mark.parametrize("name", list(LITERALS))
async def test_hostile_literal_is_refused_on_save_and_at_delivery(
    name: str,
    services: Services,
    org: Org,
    admin: httpx.AsyncClient,
    resolver: FakeResolver,
    tripwire: Tripwire,
    listener: Listener,
    clock: FakeClock,
) -> None:
    case = LITERALS[name]
    target = case.url.format(port=listener.port4)
    asked_before = len(resolver.asked)

    saved = await admin.post(hooks_url(org), json={"name": name, "url": target, "events": ["*"]})
    assert saved.status_code == 422, saved.text
    assert saved.json()["code"] == case.code
    assert set(saved.json()) == {"detail", "code"}
    assert "127.0.0.1" not in saved.json()["detail"] or "127.0.0.1" in target
    assert (await admin.get(hooks_url(org))).json() == []
    # Literal addresses and internal names are judged without asking DNS.
    assert len(resolver.asked) == asked_before or case.code == PARSE

    # A row that predates the policy (or was written around it) is refused at delivery.
    sub_id = await subscribe(services, org, target)
    await fire(services, org)
    await deliver_once(services, delivery_sender(resolver))
    assert await attempts_of(services, sub_id) == [(None, case.code)]
    assert_no_connection(tripwire, listener)


# --- names whose answer changes between save and delivery -------------------------------


@pytest.mark.parametrize("name", list(REBINDING))
async def test_a_name_rebound_to_a_hostile_address_is_refused_without_connecting(
    name: str,
    services: Services,
    org: Org,
    admin: httpx.AsyncClient,
    resolver: FakeResolver,
    tripwire: Tripwire,
    listener: Listener,
    clock: FakeClock,
) -> None:
    host = f"{name}.rebind.example.com"
    hostile = REBINDING[name]
    target = f"https://{host}:{listener.port4}/hook"

    # Hostile on save: refused.
    resolver.answers[host] = hostile
    refused = await admin.post(hooks_url(org), json={"name": name, "url": target, "events": ["*"]})
    assert refused.status_code == 422, refused.text
    assert refused.json()["code"] == PRIVATE
    for address in hostile:
        assert address not in refused.json()["detail"]  # no oracle for internal DNS

    # Public on save (also in its absolute form, with a trailing dot): accepted...
    resolver.answers[host] = [PUBLIC_V4]
    resolver.answers[host + "."] = [PUBLIC_V4]
    saved = await admin.post(hooks_url(org), json={"name": name, "url": target, "events": ["*"]})
    assert saved.status_code == 201, saved.text
    dotted = target.replace(host, host + ".")
    saved_dotted = await admin.post(
        hooks_url(org), json={"name": name, "url": dotted, "events": ["*"]}
    )
    assert saved_dotted.status_code == 201, saved_dotted.text

    # ...then the name answers the hostile address at delivery time.
    resolver.answers[host] = hostile
    resolver.answers[host + "."] = hostile
    await fire(services, org)
    await deliver_once(services, delivery_sender(resolver))
    for created in (saved, saved_dotted):
        sub_id = uuid.UUID(created.json()["id"])
        assert await attempts_of(services, sub_id) == [(None, PRIVATE)]
    assert_no_connection(tripwire, listener)


# --- redirects to internal targets ------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_to_an_internal_target_is_a_failure_and_never_followed(
    status: int,
    services: Services,
    org: Org,
    receiver: Receiver,
    ca: trustme.CA,
    resolver: FakeResolver,
    listener: Listener,
    clock: FakeClock,
    closing: Callable[[Sender], Sender],
) -> None:
    # The first hop is a real loopback HTTPS receiver, reached through the loopback-only
    # rule the delivery tests inject; the Location points at a second listener.
    receiver.statuses = [status]
    receiver.location = f"http://127.0.0.1:{listener.port4}/latest/meta-data/"
    context = ssl.create_default_context()
    ca.configure_trust(context)
    resolver.answers[HOST] = ["127.0.0.1"]
    sender = closing(Sender(resolver, ssl_context=context, is_allowed=loopback_only))
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)
    await deliver_all_attempts(services, sender, clock)

    assert [r.path for r in receiver.requests] == ["/hook"] * MAX_ATTEMPTS
    assert await attempts_of(services, sub_id) == [(status, "")] * MAX_ATTEMPTS
    async with services.engine.connect() as conn:
        state = await conn.scalar(select(Delivery.status).where(Delivery.subscription_id == sub_id))
    assert state == "failed"
    assert listener.connections == []


async def test_a_redirect_to_a_name_on_the_same_receiver_is_not_followed_either(
    services: Services,
    org: Org,
    receiver: Receiver,
    ca: trustme.CA,
    resolver: FakeResolver,
    clock: FakeClock,
    closing: Callable[[Sender], Sender],
) -> None:
    receiver.statuses = [302]
    receiver.location = receiver.url("/elsewhere")  # same host, allowed address: still not
    context = ssl.create_default_context()
    ca.configure_trust(context)
    resolver.answers[HOST] = ["127.0.0.1"]
    sender = closing(Sender(resolver, ssl_context=context, is_allowed=loopback_only))
    await subscribe(services, org, receiver.url())
    await fire(services, org)
    await deliver_all_attempts(services, sender, clock)
    assert "/elsewhere" not in [r.path for r in receiver.requests]
