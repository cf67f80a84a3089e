"""Events-API cursors stay honest across a restore (issue 40: a poller holding a cursor from
after the backup got 200 with no items for ever, as the restored log handed its positions out
again). A cursor from before the backup and one from after it both go on to what the restored
database records next; neither skips an event."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from hangar.db.engine import make_engine
from hangar.db.migrate import upgrade_async
from hangar.foundation.clock import SystemClock
from hangar.foundation.config import Settings
from hangar.kit.container import Services
from hangar.kit.ratelimit import MemoryRateLimiter
from hangar.webhooks.events import catalogue
from tests.fixtures.environment import SECRET
from tests.fixtures.factories import Org, make_org
from tests.fixtures.key_rotation import client_of, hangar_with
from tests.fixtures.webhooks import fire

EVENTS = "/api/v1/external/events"


def services_on(url: str, engine: AsyncEngine) -> Services:
    return Services(
        settings=Settings(database_url=url, secret_key=SECRET),
        engine=engine,
        clock=SystemClock(),
        limiter=MemoryRateLimiter(),
        redis=None,
    )


async def poll(services: Services, org: Org, after: str | None = None) -> tuple[list[str], str]:
    params = {"limit": "100"} | ({"after": after} if after else {})
    async with client_of(services) as client:
        answer: httpx.Response = await client.get(EVENTS, params=params, headers=org.auth)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    return [item["event"] for item in body["items"]], body["next_cursor"]


async def test_cursors_from_before_and_after_the_backup_go_on_to_new_events(
    blank_database_url: str, restored_url: str, tmp_path: Path
) -> None:
    await upgrade_async(blank_database_url)
    source, target = make_engine(blank_database_url), make_engine(restored_url)
    try:
        before = services_on(blank_database_url, source)
        org = await make_org(source, "Restored Aero")
        other = await make_org(source, "Quiet Aero")  # no event before the backup
        for name in (catalogue.SQUAWK_CREATED, catalogue.SQUAWK_RESOLVED):
            await fire(before, org, name)
        seen, at_backup = await poll(before, org)
        assert seen == [catalogue.SQUAWK_CREATED, catalogue.SQUAWK_RESOLVED]
        _, other_at_backup = await poll(before, other)
        backup = tmp_path / "events.tar"
        made = await hangar_with(source, blank_database_url, tmp_path, SECRET).run(
            "backup", str(backup)
        )
        assert made.code == 0, made.stderr

        # Recorded after the backup, and read: lost with the restore, but the poller's
        # cursor points past them.
        await fire(before, org, catalogue.RESERVATION_CREATED)
        await fire(before, org, catalogue.RESERVATION_CANCELLED)
        await fire(before, other, catalogue.AIRCRAFT_GROUNDED)
        lost, after_backup = await poll(before, org, at_backup)
        assert lost == [catalogue.RESERVATION_CREATED, catalogue.RESERVATION_CANCELLED]
        _, other_after_backup = await poll(before, other, other_at_backup)

        restored = await hangar_with(target, restored_url, tmp_path, SECRET).run(
            "restore", str(backup)
        )
        assert restored.code == 0, restored.stderr
        after = services_on(restored_url, target)
        await fire(after, org, catalogue.MEL_CREATED)
        await fire(after, other, catalogue.MEL_EXPIRED)

        # Neither cursor is a silent empty page: both reach what was recorded since.
        assert (await poll(after, org, after_backup))[0] == [catalogue.MEL_CREATED]
        assert (await poll(after, org, at_backup))[0] == [catalogue.MEL_CREATED]
        assert (await poll(after, other, other_after_backup))[0] == [catalogue.MEL_EXPIRED]
        assert (await poll(after, other, other_at_backup))[0] == [catalogue.MEL_EXPIRED]
        # And a new poller reads the restored log whole, in order.
        assert (await poll(after, org))[0] == [
            catalogue.SQUAWK_CREATED,
            catalogue.SQUAWK_RESOLVED,
            catalogue.MEL_CREATED,
        ]
    finally:
        await source.dispose()
        await target.dispose()
