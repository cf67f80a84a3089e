"""Every admin action writes one audit entry: who (the account and its email, or the
operator, or hangar itself), from where (the client address hangar settled on), what, and
to which target; and no secret any action issued is ever in one (issue 42)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import httpx
import pyotp
from sqlalchemy import update

from hangar.accounts import second_factor
from hangar.accounts.service import password_reset
from hangar.audit.service import OPERATOR
from hangar.keys import service as keys
from hangar.kit.container import Services
from hangar.webhooks import service as webhooks
from hangar.webhooks.models import Subscription
from hangar.webhooks.service import SecretRotation
from tests.fixtures.audit import CLIENT, FROM_CLIENT, entries, stored
from tests.fixtures.environment import PASSWORD
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.invites import browser
from tests.fixtures.pages import password_form
from tests.fixtures.webhooks import Hooks

HOOK = {"name": "books", "url": "https://receiver.example.org/hangar", "events": ["*"]}
# A receiver's token in its URL: the log names the host alone.
URL_TOKEN = "tok-in-the-path-9f2c"


def one(found: list[dict[str, Any]], action: str) -> dict[str, Any]:
    matching = [e for e in found if e["action"] == action]
    assert len(matching) == 1, (action, [e["action"] for e in found])
    return matching[0]


async def test_each_admin_action_says_who_from_where_what_and_to_which_target(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    services: Services,
    clock: FakeClock,
    hooks: Hooks,
) -> None:
    admin.headers.update(FROM_CLIENT)
    me = (await admin.get("/api/session")).json()["user"]
    base = f"/api/orgs/{org.id}"
    issued: list[str] = [PASSWORD, URL_TOKEN]  # every secret the actions hand out

    # Two-factor for the admin (not an admin action, but its secret and codes are secrets),
    # so the organization may require it.
    made = (await admin.post("/api/session/two-factor")).json()
    issued.append(made["secret"])
    totp = pyotp.TOTP(made["secret"])
    code = totp.at(clock.now())
    confirmed = await admin.post("/api/session/two-factor/confirm", json={"code": code})
    assert confirmed.status_code == 200, confirmed.text
    issued += [code, *confirmed.json()["recovery_codes"]]

    # API keys: created, rotated, revoked.
    key = (
        await admin.post(f"{base}/api-keys", json={"name": "ledger", "scopes": ["read:aircraft"]})
    ).json()
    issued.append(key["key"])
    rotated = (
        await admin.post(f"{base}/api-keys/{key['id']}/rotate", json={"grace_hours": 2})
    ).json()
    issued.append(rotated["new"]["key"])
    assert (await admin.post(f"{base}/api-keys/{rotated['new']['id']}/revoke")).status_code == 200

    # Webhooks: created, updated, secret rotated, tested, disabled then enabled, deleted.
    made_hook = await admin.post(f"{base}/webhooks", json=HOOK)
    assert made_hook.status_code == 201, made_hook.text
    hook = made_hook.json()
    issued += [hook["secret"], hook["secret_whsec"]]
    moved = {
        "url": f"https://receiver.example.org:8443/in/{URL_TOKEN}?k={URL_TOKEN}",
        "events": ["*"],
    }
    assert (await admin.patch(f"{base}/webhooks/{hook['id']}", json=moved)).status_code == 200
    new_secret = (await admin.post(f"{base}/webhooks/{hook['id']}/rotate-secret")).json()
    issued += [new_secret["secret"], new_secret["secret_whsec"]]
    assert (await admin.post(f"{base}/webhooks/{hook['id']}/test")).status_code == 202
    async with services.engine.begin() as conn:
        await conn.execute(
            update(Subscription)
            .where(Subscription.id == uuid.UUID(hook["id"]))
            .values(enabled=False, disabled_at=clock.now())
        )
    assert (await admin.post(f"{base}/webhooks/{hook['id']}/enable")).status_code == 200
    assert (await admin.delete(f"{base}/webhooks/{hook['id']}")).status_code == 204

    # Redeliver and Recover, on a subscription with a finished delivery.
    sub_id, delivery_id = await hooks.delivered_once()
    again = await admin.post(f"{base}/webhooks/{sub_id}/deliveries/{delivery_id}/redeliver")
    assert again.status_code == 202, again.text
    since = (clock.now() - timedelta(hours=1)).isoformat()
    recovered = await admin.post(f"{base}/webhooks/{sub_id}/recover", json={"since": since})
    assert recovered.status_code == 202, recovered.text

    # Members: invited (its link is a secret), then removed (the invitation cancelled).
    person = {
        "email": "new.pilot@example.org",
        "first_name": "N",
        "last_name": "P",
        "role": "member",
    }
    invited = (await admin.post(f"{base}/members", json=person)).json()
    issued.append(invited["invitation_url"].rsplit("/", 1)[-1])
    assert (await admin.delete(f"{base}/members/{invited['user_id']}")).status_code == 204

    # The organization's own setting.
    required = await admin.patch(base, json={"require_two_factor": True})
    assert required.status_code == 200, required.text

    # The operator at the command line, and a person using the operator's reset link.
    pilot = "pilot.reset@example.org"
    pilot_id = await org.member("member", email=pilot, password=PASSWORD)
    async with services.engine.begin() as conn:
        reset = await password_reset.issue_reset(conn, pilot, clock.now())
        operator_key = await keys.issue_by_operator(
            conn, org.id, name="ops", scopes=["read:aircraft"], now=clock.now()
        )
        operator_secret = await webhooks.rotate_secret(
            conn, services.secret_box, org.id, sub_id, SecretRotation(), clock.now(), by=OPERATOR
        )
        await second_factor.reset_two_factor(conn, pilot, clock.now())
    issued += [reset.token, operator_key.key, operator_secret["secret"]]
    new_password = "a brand new password for the pilot"
    issued.append(new_password)
    async with browser(services) as holder:
        holder.headers.update({"X-Forwarded-For": "198.51.100.23"})
        page = await holder.get(f"/password-reset/{reset.token}")
        done = await holder.post(
            f"/password-reset/{reset.token}", data=password_form(page.text, new_password)
        )
        assert done.status_code == 303, done.text

    # Hangar itself: a webhook disabled after five failures in a row.
    hooks.receiver.statuses = [500]
    failing = await hooks.subscribe("/failing")
    for _ in range(5):
        await hooks.fire()
    await hooks.run_all_attempts()

    found = await entries(admin, org.id)
    as_admin = {"id": me["id"], "email": me["email"]}
    expected = {
        "key.created": ("api_key", key["id"]),
        "key.rotated": ("api_key", key["id"]),
        "key.revoked": ("api_key", rotated["new"]["id"]),
        "webhook.created": ("webhook", hook["id"]),
        "webhook.updated": ("webhook", hook["id"]),
        "webhook.secret_rotated": ("webhook", hook["id"]),
        "webhook.tested": ("webhook", hook["id"]),
        "webhook.enabled": ("webhook", hook["id"]),
        "webhook.deleted": ("webhook", hook["id"]),
        "webhook.redelivered": ("webhook", str(sub_id)),
        "webhook.recovered": ("webhook", str(sub_id)),
        "member.invited": ("member", invited["user_id"]),
        "member.removed": ("member", invited["user_id"]),
        "organization.updated": ("organization", str(org.id)),
    }
    for action, (kind, target) in expected.items():
        entry = [e for e in found if e["action"] == action and e["actor"]]
        assert len(entry) == 1, action
        assert entry[0]["actor"] == as_admin, action
        assert entry[0]["client_address"] == CLIENT, action
        assert entry[0]["target"] == {"type": kind, "id": target}, action

    by_operator = [e for e in found if e["actor"] is None and e["action"] != "webhook.disabled"]
    assert sorted(e["action"] for e in by_operator) == [
        "key.created",
        "user.reset_password_link",
        "user.reset_two_factor",
        "webhook.secret_rotated",
    ]
    assert all(e["client_address"] is None for e in by_operator)
    link = one(found, "user.reset_password_link")
    assert link["target"] == {"type": "user", "id": str(pilot_id)}
    assert one(found, "user.reset_two_factor")["target"] == {"type": "user", "id": str(pilot_id)}
    used = one(found, "user.password_reset")
    assert used["actor"] == {"id": str(pilot_id), "email": pilot}
    assert used["client_address"] == "198.51.100.23"
    # (The one Redeliver used failed along with it: both are disabled.)
    disabled = [e for e in found if e["action"] == "webhook.disabled"]
    assert {e["target"]["id"] for e in disabled} == {str(failing), str(sub_id)}
    assert {(e["actor"], e["client_address"]) for e in disabled} == {(None, None)}
    assert {e["details"]["consecutive_failures"] for e in disabled} == {5}

    # What the details say, without the secrets.
    assert one(found, "webhook.updated")["details"]["destination"] == "receiver.example.org:8443"
    assert one(found, "webhook.updated")["details"]["changed"] == ["events", "url"]
    assert one(found, "member.invited")["details"]["email"] == "new.pilot@example.org"
    assert one(found, "member.removed")["details"]["status"] == "pending"
    assert one(found, "organization.updated")["details"] == {"require_two_factor": True}
    assert one(found, "webhook.tested")["details"]["event"] == "test.ping"

    # Newest first.
    assert [e["at"] for e in found] == sorted((e["at"] for e in found), reverse=True)

    # The other organization's log has none of it, and ours none of its.
    assert await entries(outsider, other.id) == []
    assert (await outsider.get(f"/api/orgs/{org.id}/audit-log")).status_code == 404

    # No secret any of it issued is in any entry stored, in any column.
    everything = json.dumps(await stored(services.engine), default=str)
    for secret in issued:
        assert secret not in everything, secret


async def test_the_screens_record_as_the_api_does(
    admin: httpx.AsyncClient, org: Org, services: Services
) -> None:
    """A key made on the Org Settings screen is recorded once, with the admin's address."""
    admin.headers.update(FROM_CLIENT)
    page = await admin.get(f"/settings/{org.id}/keys/new")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    made = await admin.post(
        f"/settings/{org.id}/keys/new",
        data={"csrf_token": token, "name": "screen key", "scopes": "read:aircraft"},
    )
    assert made.status_code in (200, 303), made.text
    rows = await stored(services.engine, org.id)
    assert [(r["action"], r["client_address"], r["details"]["name"]) for r in rows] == [
        ("key.created", CLIENT, "screen key")
    ]
