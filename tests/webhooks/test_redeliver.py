"""Redeliver: POST /api/orgs/{org_id}/webhooks/{id}/deliveries/{delivery_id}/redeliver and
the delivery log screen's button. A finished delivery is sent again with the same delivery id
and event, signed at send time, checked against the URL policy at the attempt, and shown in
the log as a redelivery; limited to 10 per hour per subscription."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import httpx
from sqlalchemy import update

from hangar.foundation.metrics import ATTEMPTS
from hangar.webhooks.models import Subscription
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeResolver
from tests.fixtures.pages import page_csrf
from tests.fixtures.receivers import HOST
from tests.fixtures.webhooks import SECRET, Hooks, delivery_log

NEW_SECRET = "cd" * 32


def redeliver_url(org: Org, sub_id: uuid.UUID | str, delivery_id: str) -> str:
    return f"/api/orgs/{org.id}/webhooks/{sub_id}/deliveries/{delivery_id}/redeliver"


def signed_with(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def test_a_redelivery_is_the_same_delivery_and_event_signed_at_send_time(
    hooks: Hooks, admin: httpx.AsyncClient, other: Org
) -> None:
    services, org, receiver = hooks.services, hooks.org, hooks.receiver
    await hooks.subscribe("/other", org=other)  # never redelivered to
    sub_id, delivery_id = await hooks.delivered_once()
    [first] = [r for r in receiver.requests if r.path == "/hook"]
    hooks.clock.advance(minutes=5)

    answer = await admin.post(redeliver_url(org, sub_id, delivery_id))

    assert answer.status_code == 202, answer.text
    assert answer.json()["delivery_id"] == delivery_id
    redelivery_id = answer.json()["redelivery_id"]
    [entry] = await delivery_log(admin, org, sub_id)
    assert (entry["status"], len(entry["attempts"])) == ("pending", 1)
    # Signed when sent, with the secret the subscription has then.
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == sub_id)
            .values(secret_encrypted=services.secret_box.seal(NEW_SECRET))
        )
    attempts_before = ATTEMPTS.labels("squawk.created", "succeeded")._value.get()
    # The request is a row: a dispatcher started after it (a restart) finds it due.
    assert await hooks.dispatcher().run_once() == 1
    # Counted like any attempt.
    assert ATTEMPTS.labels("squawk.created", "succeeded")._value.get() == attempts_before + 1

    second = receiver.requests[-1]
    assert [r.path for r in receiver.requests] == ["/hook", "/hook"]  # twice in total
    assert second.headers["X-Service-Delivery"] == first.headers["X-Service-Delivery"]
    assert second.headers["X-Service-Delivery"] == delivery_id
    assert second.headers["X-Service-Event"] == first.headers["X-Service-Event"]
    assert json.loads(second.body)["data"] == json.loads(first.body)["data"]
    assert second.headers["X-Service-Signature"] == signed_with(NEW_SECRET, second.body)
    assert first.headers["X-Service-Signature"] == signed_with(SECRET, first.body)

    [entry] = await delivery_log(admin, org, sub_id)
    assert entry["status"] == "succeeded"
    assert [(a["number"], a["redelivery_id"]) for a in entry["attempts"]] == [
        (1, None),
        (2, redelivery_id),
    ]
    [redelivery] = entry["redeliveries"]
    assert redelivery["id"] == redelivery_id
    assert redelivery["first_attempt"] == 2
    assert redelivery["requested_by"]["email"].startswith("admin-")
    assert redelivery["requested_at"].startswith(hooks.clock.now().strftime("%Y-%m-%dT%H:%M"))


async def test_a_failing_redelivery_has_its_own_three_attempts(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    org, receiver, clock = hooks.org, hooks.receiver, hooks.clock
    sub_id, delivery_id = await hooks.delivered_once()
    receiver.statuses = [200, 500]  # the first was delivered; everything after fails
    assert (await admin.post(redeliver_url(org, sub_id, delivery_id))).status_code == 202
    work = hooks.dispatcher()
    for wait in (2, 8):
        assert await work.run_once() == 1
        clock.advance(seconds=wait - 1)
        assert await work.run_once() == 0  # the normal waits: not due yet
        clock.advance(seconds=1)
    assert await work.run_once() == 1
    clock.advance(minutes=1)
    assert await work.run_once() == 0

    [entry] = await delivery_log(admin, org, sub_id)
    assert entry["status"] == "failed"
    assert [a["status_code"] for a in entry["attempts"]] == [200, 500, 500, 500]
    assert len(receiver.requests) == 4
    # A failed delivery may be redelivered in turn.
    assert (await admin.post(redeliver_url(org, sub_id, delivery_id))).status_code == 202


async def test_the_url_policy_is_applied_at_the_redelivered_attempt(
    hooks: Hooks, admin: httpx.AsyncClient, resolver: FakeResolver
) -> None:
    sub_id, delivery_id = await hooks.delivered_once()
    resolver.answers[HOST] = ["10.0.0.7"]  # the host now resolves to a private address

    assert (await admin.post(redeliver_url(hooks.org, sub_id, delivery_id))).status_code == 202
    assert await hooks.dispatcher().run_once() == 1

    assert len(hooks.receiver.requests) == 1  # nothing more reached anyone
    [entry] = await delivery_log(admin, hooks.org, sub_id)
    refused = entry["attempts"][-1]
    assert refused["error"] == "WEBHOOK_URL_PRIVATE_IP"
    assert refused["explanation"].startswith("URL refused by the address policy")
    assert refused["redelivery_id"] is not None


async def test_refusals_pending_disabled_other_org_non_admin_and_the_limit(
    hooks: Hooks,
    admin: httpx.AsyncClient,
    member: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    other: Org,
) -> None:
    org = hooks.org
    sub_id, delivery_id = await hooks.delivered_once()
    theirs = await hooks.subscribe("/theirs", org=other)

    # Not an admin: 403. Another organization's admin: 404, by our path or theirs.
    forbidden = await member.post(redeliver_url(org, sub_id, delivery_id))
    assert (forbidden.status_code, forbidden.json()["code"]) == (403, "FORBIDDEN")
    for path in (
        redeliver_url(org, sub_id, delivery_id),
        redeliver_url(other, theirs, delivery_id),
    ):
        hidden = await outsider.post(path)
        assert (hidden.status_code, hidden.json()["code"]) == (404, "NOT_FOUND")
    # Our admin, with another subscription's or an unknown delivery id: 404.
    for path in (
        redeliver_url(org, theirs, delivery_id),
        redeliver_url(org, sub_id, str(uuid.uuid4())),
        redeliver_url(org, sub_id, "not-an-id"),
    ):
        assert (await admin.post(path)).status_code == 404, path

    # Pending (queued again and not yet sent): 409.
    assert (await admin.post(redeliver_url(org, sub_id, delivery_id))).status_code == 202
    pending = await admin.post(redeliver_url(org, sub_id, delivery_id))
    assert (pending.status_code, pending.json()["code"]) == (409, "DELIVERY_NOT_FINISHED")
    work = hooks.dispatcher()
    assert await work.run_once() == 1

    # 10 per hour per subscription; the 11th is refused.
    for _ in range(9):
        assert (await admin.post(redeliver_url(org, sub_id, delivery_id))).status_code == 202
        assert await work.run_once() == 1
    limited = await admin.post(redeliver_url(org, sub_id, delivery_id))
    assert (limited.status_code, limited.json()["code"]) == (429, "RATE_LIMITED")
    assert "10 redeliveries per hour" in limited.json()["detail"]
    assert len(hooks.receiver.requests) == 11
    # Test keeps its own budget.
    assert (await admin.post(f"/api/orgs/{org.id}/webhooks/{sub_id}/test")).status_code == 202

    # Disabled: 409, and nothing is queued.
    async with hooks.services.engine.begin() as conn:
        await conn.execute(
            update(Subscription).where(Subscription.id == sub_id).values(enabled=False)
        )
    disabled = await admin.post(redeliver_url(org, sub_id, delivery_id))
    assert (disabled.status_code, disabled.json()["code"]) == (409, "WEBHOOK_DISABLED")
    # Deleted: as unknown as on every other route.
    assert (await admin.delete(f"/api/orgs/{org.id}/webhooks/{sub_id}")).status_code == 204
    assert (await admin.post(redeliver_url(org, sub_id, delivery_id))).status_code == 404


async def test_the_screen_redelivers_with_its_form_and_shows_who_and_when(
    hooks: Hooks, admin: httpx.AsyncClient
) -> None:
    sub_id, delivery_id = await hooks.delivered_once()
    page_path = f"/settings/{hooks.org.id}/webhooks/{sub_id}/deliveries"
    action = f"{page_path}/{delivery_id}/redeliver"
    page = await admin.get(page_path)
    assert f'action="{action}"' in page.text
    assert "10 redeliveries per hour" in page.text
    csrf = await page_csrf(admin, page_path)
    del admin.headers["X-CSRF-Token"]  # the form's hidden field only

    forged = await admin.post(action, data={"csrf_token": "wrong"})
    assert forged.status_code == 403
    done = await admin.post(action, data={"csrf_token": csrf})
    assert done.status_code == 303
    assert done.headers["location"] == f"{page_path}?done=redelivered"

    shown = await admin.get(done.headers["location"])
    assert "The delivery is queued again" in shown.text
    assert "Redelivered at the request of admin-" in shown.text
    # Pending now: no button, and a second post is refused with a page.
    assert f'action="{action}"' not in shown.text
    refused = await admin.post(action, data={"csrf_token": csrf})
    assert refused.status_code == 409
    assert "Only a finished delivery" in refused.text

    work = hooks.dispatcher()
    assert await work.run_once() == 1
    shown = await admin.get(page_path)
    assert "2 (redelivery)" in shown.text
    for _ in range(9):
        assert (await admin.post(action, data={"csrf_token": csrf})).status_code == 303
        assert await work.run_once() == 1
    hooks.clock.advance(seconds=1)
    slow_down = await admin.post(action, data={"csrf_token": csrf})
    assert slow_down.status_code == 429
    assert "10 redeliveries per hour" in slow_down.text


async def test_the_docs_describe_redeliver_its_limit_and_the_explanations(
    client: httpx.AsyncClient,
) -> None:
    docs = (await client.get("/docs")).text
    assert "<strong>Redeliver</strong>" in docs
    assert "10 redeliveries per hour per subscription" in docs
    assert "the same <code>X-Service-Delivery</code> and <code>webhook-id</code>" in docs
    assert "no answer within 10 seconds" in docs
