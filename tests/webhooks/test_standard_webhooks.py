"""Standard Webhooks (issue 27): the secret's `whsec_` form where the secret is shown, and real
deliveries (a first attempt, a retry, a redelivery, a test ping) verified with that form by
the official `standardwebhooks` packages for Python and JavaScript (npm, pinned in
tests/standardwebhooks_js/package-lock.json); a tampered body, timestamp or id, or a replay
after the tolerance, is refused by both."""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gidgethub.sansio import validate_event
from standardwebhooks import Webhook, WebhookVerificationError

from tests.fixtures.clients import signed_in_client
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeResolver
from tests.fixtures.locked_tools import NPM, npm_standardwebhooks
from tests.fixtures.pages import page_csrf
from tests.fixtures.receivers import HOST, Received
from tests.fixtures.shown_once import follow
from tests.fixtures.webhooks import Hooks

NODE = shutil.which("node")
PUBLIC = ["93.184.216.34"]  # what the host resolves to when the subscription is saved
WHSEC = re.compile(r'id="secret-whsec" class="mono" readonly value="(whsec_[A-Za-z0-9+/=]+)"')
SECRET = re.compile(r'id="secret" class="mono" readonly value="([0-9a-f]{64})"')


def decoded(whsec: str) -> bytes:
    assert whsec.startswith("whsec_")
    return base64.b64decode(whsec.removeprefix("whsec_"), validate=True)


async def test_the_create_answer_shows_the_whsec_form_once(
    admin: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org
) -> None:
    hooks_url = f"/api/orgs/{org.id}/webhooks"
    body = {"name": "ops", "url": "https://hooks.example.com/in", "events": ["*"]}
    created = (await admin.post(hooks_url, json=body)).json()

    secret, whsec = created["secret"], created["secret_whsec"]
    assert decoded(whsec) == secret.encode()
    assert whsec == "whsec_" + base64.b64encode(secret.encode()).decode()
    shown_later = (await admin.get(hooks_url)).text + (
        await admin.get(f"{hooks_url}/{created['id']}")
    ).text
    assert whsec not in shown_later
    assert secret not in shown_later
    assert (await outsider.get(f"{hooks_url}/{created['id']}")).status_code == 404


async def test_the_screen_shows_the_whsec_form_labelled_for_standard_webhooks(
    admin: httpx.AsyncClient, org: Org
) -> None:
    new = f"/settings/{org.id}/webhooks/new"
    token = await page_csrf(admin, new)
    form = {
        "csrf_token": token,
        "name": "ops",
        "url": "https://hooks.example.com/in",
        "events": ["*"],
    }
    page = await follow(admin, await admin.post(new, data=form))

    secret, whsec = SECRET.search(page.text), WHSEC.search(page.text)
    assert secret is not None
    assert whsec is not None
    assert decoded(whsec.group(1)) == secret.group(1).encode()
    label = re.search(r'<label for="secret-whsec">([^<]*)</label>', page.text)
    assert label is not None
    assert "Standard Webhooks" in html.unescape(label.group(1))


# --- the official verifiers on real deliveries ---------------------------------------------


@pytest.fixture(scope="session")
def js_verifier() -> Path:
    if NPM is None or NODE is None:
        pytest.skip(
            "needs node and npm (node 20) to run the verifier pinned in tests/standardwebhooks_js"
        )
    return npm_standardwebhooks()


async def verify_in_js(folder: Path, cases: list[tuple[bytes, dict[str, str], str]]) -> list[Any]:
    """Each (body, headers, secret) through npm standardwebhooks' Webhook.verify."""
    assert NODE is not None
    given = [
        {"body_base64": base64.b64encode(body).decode(), "headers": headers, "secret": secret}
        for body, headers, secret in cases
    ]
    process = await asyncio.create_subprocess_exec(
        NODE,
        "verify.js",
        cwd=folder,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(json.dumps(given).encode()), 60)
    assert process.returncode == 0, err.decode()
    answers: list[Any] = json.loads(out)
    return answers


def verify_in_python(body: bytes, headers: dict[str, str], secret: str) -> Any:
    return Webhook(secret).verify(body, headers)


def tampered(got: Received) -> list[tuple[bytes, dict[str, str]]]:
    """The delivery with one thing changed each: the body, the timestamp, the id."""
    headers = got.headers
    stamp = int(headers["webhook-timestamp"])
    return [
        (got.body.replace(b'"data":{', b'"data":{"x":1,'), headers),
        (got.body, {**headers, "webhook-timestamp": str(stamp + 1)}),
        (got.body, {**headers, "webhook-id": headers["X-Service-Event-Id"]}),
    ]


async def real_deliveries(
    hooks: Hooks, resolver: FakeResolver, sent_at: datetime
) -> tuple[dict[str, Any], list[Received]]:
    """A subscription made through the API (its create answer) and what its receiver got from
    `sent_at` on: a first attempt that failed, its retry, a redelivery and a test ping."""
    org, receiver, clock = hooks.org, hooks.receiver, hooks.clock
    # Signed in at `sent_at`: a session from the fixtures' clock would have expired by then.
    clock.set(sent_at)
    async with signed_in_client(hooks.services, org, "admin") as admin:
        hooks_url = f"/api/orgs/{org.id}/webhooks"
        resolver.answers[HOST] = PUBLIC
        body = {"name": "ops", "url": receiver.url(), "events": ["squawk.created"]}
        answer = await admin.post(hooks_url, json=body)
        assert answer.status_code == 201, answer.text
        created: dict[str, Any] = answer.json()
        resolver.answers[HOST] = ["127.0.0.1"]  # and loopback by the time it is delivered to
        receiver.statuses = [500, 200]
        work = hooks.dispatcher()
        await hooks.fire()
        assert await work.run_once() == 1
        clock.advance(seconds=2)
        assert await work.run_once() == 1
        [entry] = (await admin.get(f"{hooks_url}/{created['id']}/deliveries")).json()
        redeliver = f"{hooks_url}/{created['id']}/deliveries/{entry['id']}/redeliver"
        assert (await admin.post(redeliver)).status_code == 202
        assert await work.run_once() == 1
        assert (await admin.post(f"{hooks_url}/{created['id']}/test")).status_code == 202
        assert await work.run_once() == 1
    received = receiver.heard("/hook")
    events = [r.headers["X-Service-Event"] for r in received]
    assert events == ["squawk.created"] * 3 + ["test.ping"]
    return created, received


async def test_the_official_verifiers_accept_real_deliveries_and_refuse_tampered_ones(
    hooks: Hooks, resolver: FakeResolver, js_verifier: Path
) -> None:
    # The verifiers compare the timestamp with the real time (5 minutes either way): the
    # test's clock starts from it.
    created, received = await real_deliveries(hooks, resolver, datetime.now(UTC))
    whsec = created["secret_whsec"]

    for got in received:
        validate_event(
            got.body, signature=got.headers["X-Service-Signature"], secret=created["secret"]
        )
        assert verify_in_python(got.body, got.headers, whsec) == orjson.loads(got.body)
        for body, headers in tampered(got):
            with pytest.raises(WebhookVerificationError, match="No matching signature"):
                verify_in_python(body, headers, whsec)
    answers = await verify_in_js(js_verifier, [(got.body, got.headers, whsec) for got in received])
    assert answers == [{"ok": True, "payload": orjson.loads(got.body)} for got in received]
    refused = await verify_in_js(
        js_verifier, [(body, headers, whsec) for got in received for body, headers in tampered(got)]
    )
    assert refused == [{"ok": False, "error": "No matching signature found"}] * (3 * len(received))


async def test_a_delivery_replayed_after_the_tolerance_is_refused(
    hooks: Hooks, resolver: FakeResolver, js_verifier: Path
) -> None:
    # Sent ten minutes before the verifiers' real now: what an attacker who captured it would
    # replay. The contract's body-only signature cannot tell; webhook-timestamp can.
    sent_at = datetime.now(UTC) - timedelta(minutes=10)
    created, received = await real_deliveries(hooks, resolver, sent_at)
    whsec = created["secret_whsec"]

    for got in received:
        with pytest.raises(WebhookVerificationError, match="too old"):
            verify_in_python(got.body, got.headers, whsec)
    answers = await verify_in_js(js_verifier, [(got.body, got.headers, whsec) for got in received])
    assert answers == [{"ok": False, "error": "Message timestamp too old"}] * len(received)
