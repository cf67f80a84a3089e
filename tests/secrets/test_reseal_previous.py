"""`hangar secrets reseal` and a subscription inside a secret rotation's grace (issue 28): its
previous secret is resealed too, so the dropped key opens nothing and deliveries still carry
both signatures; a previous secret no key opens is named like any other; and a rotation that
commits while a run is between its read and its write is kept, not undone.

Each test has a database of its own: resealing reads every subscription there is."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import orjson
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.audit.service import OPERATOR
from hangar.foundation.crypto import SecretBox
from hangar.kit.container import WEBHOOK_SECRETS, Services
from hangar.webhooks import service
from hangar.webhooks.delivery.dispatcher import Dispatcher
from hangar.webhooks.delivery.sender import Sender
from hangar.webhooks.models import Subscription
from hangar.webhooks.service import SecretRotation
from hangar.webhooks.subscriptions.resealing import Resealing
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from tests.fixtures.factories import make_org
from tests.fixtures.key_rotation import (
    LOST_KEY,
    NEW_KEY,
    NO_TWO_FACTOR,
    OLD_KEY,
    hangar_with,
    holding,
)
from tests.fixtures.receivers import Receiver
from tests.fixtures.secret_rotation import PREVIOUS, SIGNATURE, signed_by
from tests.fixtures.webhooks import fire, subscribe


async def both_sealed(engine: AsyncEngine, sub_id: uuid.UUID) -> tuple[str, str | None]:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(Subscription.secret_encrypted, Subscription.previous_secret_encrypted).where(
                    Subscription.id == sub_id
                )
            )
        ).one()
    return row.secret_encrypted, row.previous_secret_encrypted


async def rotate(holder: Services, org_id: uuid.UUID, sub_id: uuid.UUID, hours: int = 24) -> str:
    """The secret's rotation, as a process holding `holder`'s keys makes it: the new secret."""
    async with holder.engine.begin() as conn:
        answer = await service.rotate_secret(
            conn,
            holder.secret_box,
            org_id,
            sub_id,
            SecretRotation(grace_hours=hours),
            holder.clock.now(),
            by=OPERATOR,
        )
    return answer["secret"]


async def test_reseal_covers_the_previous_secret_and_both_still_sign(
    services: Services,
    own_engine: AsyncEngine,
    blank_database_url: str,
    tmp_path: Path,
    receiver: Receiver,
    sender: Sender,
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Rotating Aero")
    first = new_secret()
    sub_id = await subscribe(
        old, org, receiver.url("/rotated"), secret_encrypted=old.secret_box.seal(first)
    )
    await subscribe(old, org, receiver.url("/plain"), secret_encrypted=old.secret_box.seal("p"))
    second = await rotate(old, org.id, sub_id)

    hangar = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)
    ran = await hangar.run("secrets", "reseal")
    # Three secrets: the plain subscription's, and the rotated one's current and previous.
    assert ran.json() == {
        "resealed": 3,
        "already_current": 0,
        "unreadable": 0,
        "unreadable_subscriptions": [],
        "two_factor": NO_TWO_FACTOR,
    }
    assert "3 webhook secrets checked: 3 resealed" in ran.stderr
    again = await hangar.run("secrets", "reseal")
    assert (again.json()["resealed"], again.json()["already_current"]) == (0, 3)

    # The old key dropped: both open with the new key alone, and both sign.
    dropped = holding(services, NEW_KEY, engine=own_engine)
    current, previous = await both_sealed(own_engine, sub_id)
    assert previous is not None
    assert dropped.secret_box.open(current) == second
    assert dropped.secret_box.open(previous) == first
    await fire(dropped, org)
    work = Dispatcher(own_engine, dropped.clock, sender, dropped.secret_box)
    assert await work.run_once() == 2
    [got] = receiver.heard("/rotated")
    assert signed_by(got.headers, got.body, second) == SIGNATURE
    assert signed_by(got.headers, got.body, first) == PREVIOUS
    [plain] = receiver.heard("/plain")
    assert PREVIOUS not in plain.headers


async def test_a_previous_secret_no_key_opens_is_named_and_fails_the_run(
    services: Services, own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    readable = holding(services, OLD_KEY, engine=own_engine)
    lost = SecretBox(LOST_KEY, WEBHOOK_SECRETS)
    org = await make_org(own_engine, "Half Lost Aero")
    shown = new_secret(), new_secret()
    sub_id = await subscribe(
        readable,
        org,
        "https://a.example/",
        secret_encrypted=readable.secret_box.seal(shown[0]),
        previous_secret_encrypted=lost.seal(shown[1]),
        previous_secret_expires_at=readable.clock.now() + timedelta(hours=1),
    )
    hangar = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)

    ran = await hangar.run("secrets", "reseal")

    assert ran.code == 1
    assert orjson.loads(ran.stdout) == {
        "resealed": 1,  # its current secret, all the same
        "already_current": 0,
        "unreadable": 1,
        "unreadable_subscriptions": [{"id": str(sub_id), "org_id": str(org.id), "deleted": False}],
        "two_factor": NO_TWO_FACTOR,
    }
    assert "2 webhook secrets checked: 1 resealed, 0 already current, 1 unreadable" in ran.stderr
    assert "1 live webhook subscription has a secret that neither" in ran.stderr
    for secret in shown:
        assert secret not in ran.stdout + ran.stderr
    current, _ = await both_sealed(own_engine, sub_id)
    assert holding(services, NEW_KEY).secret_box.open(current) == shown[0]


async def test_a_rotation_between_a_runs_read_and_write_is_kept(
    services: Services, own_engine: AsyncEngine
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    new = holding(services, NEW_KEY, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Busy Rotating Aero")
    first = new_secret()
    sub_id = await subscribe(
        old, org, "https://r.example/", secret_encrypted=old.secret_box.seal(first)
    )

    run = Resealing(new.secret_box, size=10)
    async with own_engine.begin() as conn:
        rows = await run.read(conn)
        # Meanwhile an admin, on a process with the new key, rotates the secret: the new one
        # sealed with the new key, the replaced one still as the old key sealed it.
        second = await rotate(new, org.id, sub_id)
        await run.write(conn, rows)
    # Judged on what the row held by then: the new secret current, the replaced one resealed.
    assert (run.found.resealed, run.found.already_current) == (1, 1)

    only_new = holding(services, NEW_KEY, engine=own_engine).secret_box
    current, previous = await both_sealed(own_engine, sub_id)
    assert previous is not None
    assert only_new.open(current) == second  # not the secret the run had read
    assert only_new.open(previous) == first


async def test_a_previous_secret_dropped_meanwhile_is_not_brought_back(
    services: Services, own_engine: AsyncEngine
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    new = holding(services, NEW_KEY, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Dropping Aero")
    current = new.secret_box.seal(new_secret())
    sub_id = await subscribe(
        old,
        org,
        "https://d.example/",
        secret_encrypted=current,
        previous_secret_encrypted=old.secret_box.seal(new_secret()),
        previous_secret_expires_at=old.clock.now() + timedelta(hours=1),
    )

    run = Resealing(new.secret_box, size=10)
    async with own_engine.begin() as conn:
        rows = await run.read(conn)
        # Its grace is cut short between the read and the write (the current secret as it was).
        async with own_engine.begin() as other:
            await other.execute(
                update(Subscription)
                .where(Subscription.id == sub_id)
                .values(previous_secret_encrypted=None, previous_secret_expires_at=None)
            )
        await run.write(conn, rows)

    assert await both_sealed(own_engine, sub_id) == (current, None)
    assert (run.found.resealed, run.found.already_current) == (0, 1)
