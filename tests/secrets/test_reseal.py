"""`hangar secrets reseal`: every webhook secret sealed again with the current key, after which
the previous key can be dropped and every subscription still signs with its own secret; run
twice, the second run reseals nothing; a secret no key opens is named (never shown) and fails
the run; and a subscription deleted or created while it runs is neither lost nor brought back.

Each test has a database of its own: resealing reads every subscription there is.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import orjson
import pyotp
from gidgethub.sansio import validate_event
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.audit.service import OPERATOR
from hangar.auth import two_factor
from hangar.foundation.crypto import SecretBox
from hangar.kit.container import WEBHOOK_SECRETS, Services
from hangar.webhooks import service
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Subscription
from hangar.webhooks.subscriptions.resealing import Resealed, Resealing, reseal_all
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from tests.fixtures.factories import make_org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.key_rotation import (
    LOST_KEY,
    NEW_KEY,
    NO_TWO_FACTOR,
    OLD_KEY,
    client_of,
    hangar_with,
    holding,
)
from tests.fixtures.receivers import Receiver
from tests.fixtures.sign_ins import PASSWORD
from tests.fixtures.webhooks import fire, subscribe


async def sealed_by_id(engine: AsyncEngine) -> dict[uuid.UUID, str]:
    async with engine.connect() as conn:
        rows = await conn.execute(select(Subscription.id, Subscription.secret_encrypted))
        return {r.id: r.secret_encrypted for r in rows}


async def test_after_reseal_the_old_key_can_go_and_every_webhook_signs_as_before(
    services: Services,
    own_engine: AsyncEngine,
    blank_database_url: str,
    tmp_path: Path,
    receiver: Receiver,
    sender: Sender,
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Resealed Aero")
    secrets: dict[uuid.UUID, str] = {}
    for n in range(3):
        secret = new_secret()
        sub_id = await subscribe(
            old, org, receiver.url(f"/{n}"), secret_encrypted=old.secret_box.seal(secret)
        )
        secrets[sub_id] = secret
    # A deleted subscription is resealed too: the dropped key must open nothing in a dump.
    gone = new_secret()
    gone_id = await subscribe(
        old,
        org,
        receiver.url("/gone"),
        secret_encrypted=old.secret_box.seal(gone),
        enabled=False,
        deleted_at=old.clock.now(),
    )

    hangar = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)
    first = await hangar.run("secrets", "reseal")
    assert first.json() == {
        "resealed": 4,
        "already_current": 0,
        "unreadable": 0,
        "unreadable_subscriptions": [],
        "two_factor": NO_TWO_FACTOR,
    }
    assert "4 webhook secrets checked: 4 resealed" in first.stderr
    after_first = await sealed_by_id(own_engine)
    second = await hangar.run("secrets", "reseal")
    assert second.json()["resealed"] == 0
    assert second.json()["already_current"] == 4
    assert await sealed_by_id(own_engine) == after_first  # nothing written the second time

    # The old key dropped: every secret opens with the new key alone, the same as before.
    dropped = holding(services, NEW_KEY, engine=own_engine)
    opened = {k: dropped.secret_box.open(v) for k, v in after_first.items()}
    assert opened == secrets | {gone_id: gone}
    await fire(dropped, org)
    work = Dispatcher(own_engine, dropped.clock, sender, dropped.secret_box)
    assert await work.run_once() == 3
    by_path = {f"/{n}": secret for n, secret in enumerate(secrets.values())}
    assert sorted(r.path for r in receiver.requests) == sorted(by_path)
    for got in receiver.requests:
        validate_event(
            got.body, signature=got.headers["X-Service-Signature"], secret=by_path[got.path]
        )


async def test_a_secret_no_key_opens_is_named_never_shown_and_fails_the_run(
    services: Services, own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    org = await make_org(own_engine, "Lost Key Aero")
    lost = SecretBox(LOST_KEY, WEBHOOK_SECRETS)
    readable = holding(services, OLD_KEY, engine=own_engine)
    shown = [new_secret() for _ in range(3)]
    await subscribe(readable, org, "https://a.example/", secret_encrypted=lost.seal(shown[0]))
    live = await sealed_by_id(own_engine)
    deleted_id = await subscribe(
        readable,
        org,
        "https://b.example/",
        secret_encrypted=lost.seal(shown[1]),
        deleted_at=readable.clock.now(),
    )
    ok_id = await subscribe(
        readable, org, "https://c.example/", secret_encrypted=readable.secret_box.seal(shown[2])
    )
    hangar = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)

    ran = await hangar.run("secrets", "reseal")
    assert ran.code == 1
    (live_id,) = live
    report = orjson.loads(ran.stdout)  # printed although the run failed
    assert (report["resealed"], report["unreadable"]) == (1, 2)
    assert sorted(report["unreadable_subscriptions"], key=lambda u: u["deleted"]) == [
        {"id": str(live_id), "org_id": str(org.id), "deleted": False},
        {"id": str(deleted_id), "org_id": str(org.id), "deleted": True},
    ]
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("hangar: 1 live webhook subscription has a secret that neither")
    assert "HANGAR_SECRET_KEY_PREVIOUS" in last
    for secret in (*shown, OLD_KEY, NEW_KEY, LOST_KEY):
        assert secret not in ran.stdout + ran.stderr
    only_new = holding(services, NEW_KEY).secret_box
    assert only_new.open((await sealed_by_id(own_engine))[ok_id]) == shown[2]

    # With the key that sealed them listed, they open: the run completes.
    listed = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY, LOST_KEY)
    assert (await listed.run("secrets", "reseal")).json() == {
        "resealed": 2,
        "already_current": 1,
        "unreadable": 0,
        "unreadable_subscriptions": [],
        "two_factor": NO_TWO_FACTOR,
    }
    # A deleted subscription's unreadable secret alone blocks nothing: it never signs again.
    gone_id = await subscribe(
        readable,
        org,
        "https://d.example/",
        secret_encrypted=lost.seal(new_secret()),
        deleted_at=readable.clock.now(),
    )
    again = await hangar.run("secrets", "reseal")
    assert again.json()["unreadable_subscriptions"] == [
        {"id": str(gone_id), "org_id": str(org.id), "deleted": True}
    ]


async def test_reseal_beside_a_concurrent_delete_and_create_loses_and_revives_nothing(
    services: Services, own_engine: AsyncEngine
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    new = holding(services, NEW_KEY, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Busy Aero")
    names = ("deleted", "resealed elsewhere", "kept", "removed")
    secrets = {name: new_secret() for name in names}
    ids = {
        name: await subscribe(
            old,
            org,
            f"https://{name.replace(' ', '-')}.example/",
            secret_encrypted=old.secret_box.seal(secrets[name]),
        )
        for name in names
    }

    run = Resealing(new.secret_box, size=10)
    async with own_engine.begin() as conn:
        rows = await run.read(conn)
        assert len(rows) == 4
        # Between the read and the write, another transaction commits: an admin deletes one
        # subscription and creates another (on a process with the new key), another run
        # reseals a third, and one row is removed outright.
        async with own_engine.begin() as other:
            await service.delete(other, org.id, ids["deleted"], new.clock.now(), by=OPERATOR)
            await other.execute(
                update(Subscription)
                .where(Subscription.id == ids["resealed elsewhere"])
                .values(secret_encrypted=new.secret_box.seal(secrets["resealed elsewhere"]))
            )
            await other.execute(delete(Subscription).where(Subscription.id == ids["removed"]))
        created = new_secret()
        created_id = await subscribe(
            new, org, "https://created.example/", secret_encrypted=new.secret_box.seal(created)
        )
        before_write = (await sealed_by_id(own_engine))[created_id]
        await run.write(conn, rows)
    assert (run.found.resealed, run.found.already_current, run.found.unreadable) == (2, 1, [])

    async with own_engine.connect() as conn:
        state = {
            r.id: r
            for r in await conn.execute(
                select(Subscription.id, Subscription.secret_encrypted, Subscription.deleted_at)
            )
        }
    assert set(state) == {ids["deleted"], ids["resealed elsewhere"], ids["kept"], created_id}
    assert state[ids["deleted"]].deleted_at is not None  # still deleted
    assert state[created_id].secret_encrypted == before_write  # not touched
    only_new = holding(services, NEW_KEY, engine=own_engine).secret_box
    for name in ("deleted", "resealed elsewhere", "kept"):
        assert only_new.open(state[ids[name]].secret_encrypted) == secrets[name]
    assert only_new.open(state[created_id].secret_encrypted) == created


async def test_reseal_goes_through_every_subscription_in_batches(
    services: Services, own_engine: AsyncEngine
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    new = holding(services, NEW_KEY, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Many Hooks Aero")
    for n in range(5):
        sealed = (new if n == 2 else old).secret_box.seal(new_secret())
        await subscribe(old, org, f"https://{n}.example/", secret_encrypted=sealed)
    heard: list[tuple[int, int]] = []

    def progress(found: Resealed) -> None:
        heard.append((found.resealed, found.already_current))

    found = await reseal_all(own_engine, new.secret_box, size=2, progress=progress)
    assert (found.resealed, found.already_current) == (4, 1)
    # After each batch: two rows, two more, the last one (which is which depends on the ids).
    assert [resealed + current for resealed, current in heard] == [2, 4, 5]
    assert heard[-1] == (4, 1)


async def test_two_factor_secrets_are_resealed_too_and_one_no_key_opens_fails_safe(
    services: Services,
    clock: FakeClock,
    own_engine: AsyncEngine,
    blank_database_url: str,
    tmp_path: Path,
) -> None:
    """An account's authenticator secret is sealed with HANGAR_SECRET_KEY: resealed with the
    webhook secrets, so that dropping the old key keeps every app's codes working. One that
    no key opens fails the run, named by account; at sign-in its codes are refused (401,
    never a 500) and its recovery codes still work."""
    org = await make_org(own_engine, "Two Factor Aero")
    old = holding(services, OLD_KEY, engine=own_engine)
    kept, lost = "kept@example.org", "lost@example.org"
    apps, codes, ids = {}, {}, {}
    lost_settings = dataclasses.replace(old.settings, secret_key=LOST_KEY)
    for email, settings in ((kept, old.settings), (lost, lost_settings)):
        user_id = ids[email] = await org.member("admin", email=email, password=PASSWORD)
        async with own_engine.begin() as conn:
            made = await two_factor.begin(conn, settings, user_id, email, old.clock.now())
            assert made is not None
            apps[email] = pyotp.TOTP(made.secret)
            codes[email] = await two_factor.confirm(
                conn, settings, user_id, apps[email].at(old.clock.now()), old.clock.now()
            )
    clock.advance(seconds=60)  # the codes that confirmed them are behind

    hangar = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)
    ran = await hangar.run("secrets", "reseal")
    assert ran.code == 1
    report = orjson.loads(ran.stdout)["two_factor"]
    assert (report["resealed"], report["already_current"]) == (1, 0)
    assert report["unreadable_accounts"] == [str(ids[lost])]
    assert "reset-2fa" in ran.stderr.strip().splitlines()[-1]
    lost_codes = codes[lost]
    assert lost_codes is not None

    dropped = holding(services, NEW_KEY, engine=own_engine)
    async with client_of(dropped) as c:
        asked = await c.post("/api/session", json={"email": kept, "password": PASSWORD})
        assert asked.json()["code"] == "TWO_FACTOR_REQUIRED"
        now = dropped.clock.now()
        done = await c.post("/api/session/two-factor/verify", json={"code": apps[kept].at(now)})
        assert done.status_code == 200, done.text
    async with client_of(dropped) as c:
        await c.post("/api/session", json={"email": lost, "password": PASSWORD})
        refused = await c.post(
            "/api/session/two-factor/verify", json={"code": apps[lost].at(dropped.clock.now())}
        )
        assert refused.status_code == 401
        recovered = await c.post(
            "/api/session/two-factor/verify", json={"recovery_code": lost_codes[0]}
        )
        assert recovered.status_code == 200
