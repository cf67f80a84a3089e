"""A process with the wrong HANGAR_SECRET_KEY refuses to start, in one line (issue 40: one
worker with a typo in its key disabled every tenant's webhooks within 25 s).

The database records the key its secrets are sealed with (hangar.db.key_check): the first
command to start records it, any other key is refused, a rotation's new key is accepted while
it lists the old one as previous, and `hangar secrets reseal` moves the record to the new key,
after which a process holding only the old one is refused. Each test has a database of its own.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.key_check import SecretKeyCheck, fingerprint
from hangar.kit.container import Services
from hangar.webhooks.models import Subscription
from hangar.webhooks.subscriptions.signing_secrets import new_secret
from hangar.wiring.secret_key import WRONG_KEY
from tests.fixtures.factories import make_org
from tests.fixtures.key_rotation import LOST_KEY, NEW_KEY, OLD_KEY, hangar_with, holding
from tests.fixtures.webhooks import subscribe

URL = "https://127.0.0.1:9/hook"  # never delivered to: no dispatcher runs here


async def recorded(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as conn:
        return list((await conn.scalars(select(SecretKeyCheck.fingerprint))).all())


async def test_a_command_with_another_key_is_refused_in_one_line_once_a_key_is_recorded(
    own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    first = hangar_with(own_engine, blank_database_url, tmp_path, OLD_KEY)
    assert (await first.run("org", "create", "--name", "Keyed Aero")).code == 0
    assert await recorded(own_engine) == [fingerprint(OLD_KEY)]

    wrong = hangar_with(own_engine, blank_database_url, tmp_path, LOST_KEY)
    for command in (
        ("org", "create", "--name", "Never"),
        ("db", "upgrade"),
        ("jobs", "run", "retention"),
    ):
        assert (await wrong.run(*command)).refused() == f"hangar: {WRONG_KEY}", command
    # Nothing the refused commands would have done was done, and the record stands.
    assert await recorded(own_engine) == [fingerprint(OLD_KEY)]
    assert (await first.run("org", "create", "--name", "Still Aero")).code == 0


async def test_serve_and_worker_refuse_to_start_with_another_key(
    own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    assert (
        await hangar_with(own_engine, blank_database_url, tmp_path, OLD_KEY).run("db", "upgrade")
    ).code == 0
    wrong = hangar_with(own_engine, blank_database_url, tmp_path, LOST_KEY)
    for command in (("worker",), ("serve", "--port", "0")):
        ran = await wrong.run(*command)
        assert ran.refused() == f"hangar: {WRONG_KEY}", command


async def test_a_database_with_secrets_but_no_record_takes_the_key_that_opens_them(
    services: Services, own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    """An install upgraded to the check: its first process must not record a wrong key."""
    old = holding(services, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Upgraded Aero")
    await subscribe(old, org, URL, secret_encrypted=old.secret_box.seal(new_secret()))

    wrong = hangar_with(own_engine, blank_database_url, tmp_path, LOST_KEY)
    assert (await wrong.run("db", "upgrade")).refused() == f"hangar: {WRONG_KEY}"
    assert await recorded(own_engine) == []

    # Mid-rotation, the first to start holds the new key and lists the old one: the record
    # is the key the secrets are sealed with, which is the old one.
    rotated = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)
    assert (await rotated.run("db", "upgrade")).code == 0
    assert await recorded(own_engine) == [fingerprint(OLD_KEY)]


async def test_a_rotation_admits_both_keys_until_reseal_then_only_the_new_one(
    services: Services, own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    org = await make_org(own_engine, "Rotating Aero")
    await subscribe(old, org, URL, secret_encrypted=old.secret_box.seal(new_secret()))
    before = hangar_with(own_engine, blank_database_url, tmp_path, OLD_KEY)
    rotated = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)
    dropped = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY)
    assert (await before.run("db", "upgrade")).code == 0

    # The rolling restart: old and rotated processes side by side; one with the new key
    # alone would fail every secret still sealed with the old one.
    assert (await rotated.run("db", "upgrade")).code == 0
    assert (await before.run("db", "upgrade")).code == 0
    assert (await dropped.run("db", "upgrade")).refused() == f"hangar: {WRONG_KEY}"

    assert (await rotated.run("secrets", "reseal")).json()["resealed"] == 1
    assert await recorded(own_engine) == [fingerprint(NEW_KEY)]
    assert (await dropped.run("db", "upgrade")).code == 0
    assert (await rotated.run("db", "upgrade")).code == 0
    assert (await before.run("db", "upgrade")).refused() == f"hangar: {WRONG_KEY}"


async def test_a_reseal_that_leaves_a_live_secret_unreadable_keeps_the_record(
    services: Services, own_engine: AsyncEngine, blank_database_url: str, tmp_path: Path
) -> None:
    old = holding(services, OLD_KEY, engine=own_engine)
    lost = holding(services, LOST_KEY, engine=own_engine)
    org = await make_org(own_engine, "Half Aero")
    await subscribe(lost, org, URL, secret_encrypted=lost.secret_box.seal(new_secret()))
    # The newest live secret is the old key's: that is the one recorded.
    await subscribe(old, org, URL, secret_encrypted=old.secret_box.seal(new_secret()))
    rotated = hangar_with(own_engine, blank_database_url, tmp_path, NEW_KEY, OLD_KEY)
    assert (await rotated.run("secrets", "reseal")).code == 1
    # The old key is still needed by nothing readable, but a live secret opens with no key:
    # the record does not move, so the old key's processes still start.
    assert await recorded(own_engine) == [fingerprint(OLD_KEY)]
    async with own_engine.connect() as conn:
        assert len((await conn.scalars(select(Subscription.id))).all()) == 2
