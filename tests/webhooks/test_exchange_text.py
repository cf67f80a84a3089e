"""The delivery log shows each attempt's request and response as `curl -i` would: the request
line or the status line, each header on a line of its own, a blank line, then the body; never
run together ("HTTP 500 Internal Server ErrorServer: ...", the bug this guards against).

Real attempts of the production dispatcher against the loopback receiver; the screen's HTML
is read as a person reads it (the text of each <pre>, unescaped).
"""

from __future__ import annotations

import html
import json
import re

import httpx
from sqlalchemy import update

from hangar.kit.container import Services
from hangar.web.http_text import request_target, response_text, url_changed
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.delivery.signing import NOT_KEPT
from hangar.webhooks.inspection.delivery_log import RequestView
from hangar.webhooks.models import Subscription
from tests.fixtures.factories import Org
from tests.fixtures.receivers import Receiver
from tests.fixtures.webhooks import dispatcher, fire, subscribe

HEADER = re.compile(r"^[A-Za-z0-9-]+: .*$")


def pre_texts(page: str, kind: str) -> list[str]:
    """The text of each <pre class="kind"> of the page, as the browser shows it."""
    found = re.findall(rf'<pre class="{kind}"><code>(.*?)</code></pre>', page, re.DOTALL)
    return [html.unescape(text) for text in found]


def split_message(text: str) -> tuple[str, list[str], str]:
    """(first line, header lines, body) of an HTTP message shown as curl -i shows it."""
    head, blank, body = text.partition("\n\n")
    assert blank, f"no blank line before the body: {text!r}"
    first, *headers = head.split("\n")
    for line in headers:
        assert HEADER.match(line), f"not a header line of its own: {line!r}"
    return first, headers, body


async def test_the_screen_shows_request_and_response_as_curl_does(
    services: Services, admin: httpx.AsyncClient, org: Org, receiver: Receiver, sender: Sender
) -> None:
    receiver.statuses = [500]
    receiver.body = b"<html><body>Internal error\nrequest id 42</body></html>"
    sub_id = await subscribe(services, org, receiver.url("/hooks/hangar?tenant=acme"))
    await fire(services, org)
    assert await dispatcher(services, sender).run_once() == 1
    [received] = receiver.requests

    page = await admin.get(f"/settings/{org.id}/webhooks/{sub_id}/deliveries")

    assert page.status_code == 200
    [request] = pre_texts(page.text, "request")
    first, headers, body = split_message(request)
    assert first == "POST /hooks/hangar?tenant=acme HTTP/1.1"
    assert f"X-Service-Signature: {NOT_KEPT}" in headers  # by name: its value is not kept
    assert f"X-Service-Delivery: {received.headers['X-Service-Delivery']}" in headers
    assert "Content-Type: application/json" in headers
    assert body.encode() == received.body  # the bytes signed, after exactly one blank line
    json.loads(body)

    [response] = pre_texts(page.text, "response")
    first, headers, body = split_message(response)
    assert first == "HTTP/1.1 500 Internal Server Error"
    assert f"Content-Length: {len(receiver.body)}" in headers
    assert any(line.startswith("Server: ") for line in headers)
    assert body == receiver.body.decode()  # its own line break kept
    assert "ErrorServer" not in page.text


async def test_the_request_line_follows_the_url_and_says_when_it_changed(
    services: Services, admin: httpx.AsyncClient, org: Org, receiver: Receiver, sender: Sender
) -> None:
    sub_id = await subscribe(services, org, receiver.url("/first"))
    await fire(services, org)
    assert await dispatcher(services, sender).run_once() == 1
    url = f"/settings/{org.id}/webhooks/{sub_id}/deliveries"
    assert "the request line shows today" not in (await admin.get(url)).text

    async with services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id)
            .values(url="https://elsewhere.example.net/second")
        )
    page = (await admin.get(url)).text

    [request] = pre_texts(page, "request")
    assert request.startswith("POST /second HTTP/1.1\n")
    assert "This webhook's URL has changed since this attempt" in page


def test_a_response_recorded_without_its_reason_gets_the_standard_phrase() -> None:
    shown = response_text({"status_code": 502, "reason": None, "headers": [], "body": None})
    assert shown == "HTTP/1.1 502 Bad Gateway\n\n"
    unusual = response_text(
        {"status_code": 599, "reason": None, "headers": [["X-A", "1"]], "body": "b"}
    )
    assert unusual == "HTTP/1.1 599\nX-A: 1\n\nb"


def test_request_targets_and_hosts() -> None:
    assert request_target("https://h.example.com") == "/"
    assert request_target("https://h.example.com/a/b?x=1&y=2#frag") == "/a/b?x=1&y=2"
    sent = RequestView(headers=[["Host", "h.example.com:8443"]], body="")
    assert not url_changed(sent, "https://H.example.com:8443/hook")
    assert url_changed(sent, "https://h.example.com/hook")
    default_port = RequestView(headers=[["host", "h.example.com"]], body="")
    assert not url_changed(default_port, "https://h.example.com:443/")
    assert not url_changed(RequestView(headers=[], body=""), "https://anything.example/")
