"""The delivery log explains each attempt in a sentence and shows the exchange: the request
as sent (headers with the signature, and the body it signs) and the response (status line,
headers, the first 2 KB of the body), on the JSON API and the screen alike.

Every outcome is produced by a real attempt of the production dispatcher: loopback HTTPS
receivers with trustme certificates (expired, from an unknown CA, for another name), a closed
port, the injected resolver (a name that does not resolve, one that resolves privately).
"""

from __future__ import annotations

import hashlib
import hmac
import ssl
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import trustme
from markupsafe import escape
from scripts.scratch import free_port
from sqlalchemy import update

from hangar.kit.container import Services
from hangar.webhooks.delivery.attempt_kinds import explain
from hangar.webhooks.delivery.sender import RESPONSE_KEPT_BYTES, Sender
from hangar.webhooks.delivery.signing import NOT_KEPT
from hangar.webhooks.models import Attempt, Subscription
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeResolver
from tests.fixtures.receivers import HOST, Receiver, https_endpoint, loopback_only
from tests.fixtures.webhooks import SECRET, delivery_log, dispatcher, fire, subscribe


async def only_attempt(
    services: Services, admin: httpx.AsyncClient, org: Org, sender: Sender, url: str
) -> dict[str, Any]:
    """Subscribes `url`, fires one event and attempts it once: the attempt's JSON. The
    subscription is disabled afterwards, so the test's next event does not reach it."""
    sub_id = await subscribe(services, org, url)
    await fire(services, org)
    assert await dispatcher(services, sender).run_once() == 1
    [entry] = await delivery_log(admin, org, sub_id)
    [attempt] = entry["attempts"]
    assert isinstance(attempt, dict)
    async with services.engine.begin() as conn:  # the next event is for the next one only
        await conn.execute(
            update(Subscription).where(Subscription.id == sub_id).values(enabled=False)
        )
    return attempt


async def test_certificate_expired_not_trusted_and_wrong_host_are_told_apart(
    services: Services, admin: httpx.AsyncClient, org: Org, ca: trustme.CA, sender: Sender
) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=30)
    certificates = {
        "expired": ca.issue_cert(HOST, not_before=long_ago, not_after=long_ago + timedelta(1)),
        "untrusted": trustme.CA().issue_cert(HOST),
        "wrong host": ca.issue_cert("elsewhere.example.net"),
    }
    said = {}
    for name, cert in certificates.items():
        async with https_endpoint(ca, Receiver(port=0), cert) as endpoint:
            attempt = await only_attempt(services, admin, org, sender, endpoint.url())
            assert endpoint.requests == []  # nothing is sent over an unverified connection
        assert attempt["error"].startswith("TLS error:")  # the field as it always was
        assert (attempt["request"] is not None, attempt["response"]) == (True, None)
        said[name] = attempt["explanation"]
    assert said["expired"].startswith("Certificate expired:")
    assert said["untrusted"].startswith("Certificate not trusted:")
    assert said["wrong host"].startswith("Wrong host name:")


async def test_refused_unresolved_timeout_and_policy_refusals(
    services: Services,
    admin: httpx.AsyncClient,
    org: Org,
    ca: trustme.CA,
    resolver: FakeResolver,
    receiver: Receiver,
    sender: Sender,
    closing: Callable[[Sender], Sender],
) -> None:
    refused = await only_attempt(services, admin, org, sender, f"https://{HOST}:{free_port()}/hook")
    assert refused["explanation"].startswith("Connection refused:")

    unresolved = await only_attempt(services, admin, org, sender, "https://nowhere.example.com/")
    assert unresolved["explanation"] == "The host name did not resolve: nothing was sent."
    assert unresolved["request"] is None

    resolver.answers["inside.example.com"] = ["10.1.2.3"]
    private = await only_attempt(services, admin, org, sender, "https://inside.example.com/")
    assert private["error"] == "WEBHOOK_URL_PRIVATE_IP"
    assert private["explanation"].startswith("URL refused by the address policy: the host is")
    assert "10.1.2.3" not in private["explanation"]  # no oracle for internal DNS

    plain = await only_attempt(services, admin, org, sender, f"http://{HOST}/hook")
    assert plain["explanation"].startswith("URL refused by the address policy: only https")
    assert receiver.requests == []

    context = ssl.create_default_context()
    ca.configure_trust(context)
    impatient = closing(
        Sender(resolver, ssl_context=context, is_allowed=loopback_only, timeout=0.3)
    )
    receiver.delay = 2.0
    slow = await only_attempt(services, admin, org, impatient, receiver.url())
    assert slow["explanation"] == "No answer within 0.3 s: the attempt was abandoned."
    # The production sender waits 10 s, and says so.
    assert explain("timeout", "10", None, None, "timeout after 10 s").startswith(
        "No answer within 10 s"
    )


async def test_redirects_and_http_errors_name_the_status_and_the_location(
    services: Services, admin: httpx.AsyncClient, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.statuses = [302]
    receiver.location = "https://elsewhere.example.net/new"
    moved = await only_attempt(services, admin, org, sender, receiver.url("/a"))
    assert moved["explanation"] == (
        "Redirect refused: the receiver answered 302 Found to https://elsewhere.example.net/new;"
        " redirects are never followed."
    )
    receiver.location = None
    receiver.requests.clear()
    for status, words in (
        (503, "The receiver failed with 503 Service Unavailable."),
        (404, "The receiver refused the delivery with 404 Not Found."),
        (200, "Delivered: the receiver answered 200 OK."),
    ):
        receiver.statuses = [status]
        receiver.requests.clear()
        attempt = await only_attempt(services, admin, org, sender, receiver.url(f"/{status}"))
        assert attempt["explanation"] == words
        assert attempt["response"]["reason"] == words.split(f"{status} ")[1].rstrip(".")


async def test_the_request_is_shown_as_sent_and_the_response_cut_at_2_kb(
    services: Services, admin: httpx.AsyncClient, org: Org, receiver: Receiver, sender: Sender
) -> None:
    hostile = b"<script>alert('owned')</script>"
    receiver.body = hostile + b"x" * 5000
    receiver.statuses = [503]
    attempt = await only_attempt(services, admin, org, sender, receiver.url())
    [received] = receiver.requests

    request = attempt["request"]
    assert request["body"].encode() == received.body  # byte for byte
    shown = {name.lower(): value for name, value in request["headers"]}
    for name in ("Content-Type", "User-Agent", "X-Service-Event", "X-Service-Delivery"):
        assert shown[name.lower()] == received.headers[name]
    # The body it signed is shown; the signature itself was not kept (anyone reading the log
    # or a backup could send it again), only its name, with a note in place of its value.
    expected = hmac.new(SECRET.encode(), request["body"].encode(), hashlib.sha256).hexdigest()
    assert received.headers["X-Service-Signature"] == f"sha256={expected}"
    assert shown["x-service-signature"] == shown["webhook-signature"] == NOT_KEPT
    assert expected not in str(attempt)
    assert received.headers["webhook-signature"] not in str(attempt)
    assert SECRET not in str(attempt)

    response = attempt["response"]
    assert (response["status_code"], response["reason"]) == (503, "Service Unavailable")
    assert response["body"] == receiver.body[:RESPONSE_KEPT_BYTES].decode()
    assert ["Content-Length", str(len(receiver.body))] in response["headers"]


async def test_a_signature_an_older_release_stored_is_not_shown(
    services: Services, admin: httpx.AsyncClient, org: Org, receiver: Receiver, sender: Sender
) -> None:
    # During an upgrade, a worker of the previous release still stores the signatures it
    # sends: the log masks them when it shows the attempt, whoever wrote it.
    receiver.statuses = [204]
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)
    assert await dispatcher(services, sender).run_once() == 1
    [received] = receiver.requests
    as_sent = [[name, value] for name, value in received.headers.items()]
    async with services.engine.begin() as conn:
        await conn.execute(update(Attempt).values(request_headers=as_sent))
    [entry] = await delivery_log(admin, org, sub_id)
    shown = dict(entry["attempts"][0]["request"]["headers"])
    assert shown["X-Service-Signature"] == shown["webhook-signature"] == NOT_KEPT
    assert shown["X-Service-Delivery"] == received.headers["X-Service-Delivery"]
    assert received.headers["X-Service-Signature"] not in str(entry)


async def test_the_screen_shows_the_exchange_escaped_and_never_the_secret(
    services: Services, admin: httpx.AsyncClient, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.body = b"<script>alert('owned')</script><img src=x onerror=alert(1)>"
    receiver.statuses = [500]
    sub_id = await subscribe(services, org, receiver.url())
    await fire(services, org)
    await dispatcher(services, sender).run_once()
    [received] = receiver.requests

    page = await admin.get(f"/settings/{org.id}/webhooks/{sub_id}/deliveries")

    assert page.status_code == 200
    text = page.text
    assert "<script>alert" not in text
    assert "<img src=x" not in text
    assert str(escape(receiver.body.decode())) in text
    assert "The receiver failed with 500 Internal Server Error." in text
    assert f"X-Service-Signature: {NOT_KEPT}" in text
    assert received.headers["X-Service-Signature"] not in text
    assert str(escape(received.body.decode())) in text
    assert "<summary>Request</summary>" in text
    assert "<summary>Response</summary>" in text
    assert SECRET not in text


def test_an_attempt_recorded_before_the_log_explained_still_reads() -> None:
    # Rows from before migration 0008 have no kind: the sentence is made from what they have.
    assert explain(None, None, 502, None, None) == "The receiver failed with 502 Bad Gateway."
    assert explain(None, None, None, None, "connection failed: ClientConnectorError") == (
        "The attempt failed: connection failed: ClientConnectorError."
    )
