"""GET /api/v1/external/events: the log an integrator catches up from."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta
from typing import Any
from unittest.mock import ANY

import httpx
import orjson
import pytest
from sqlalchemy import insert

from hangar.db.reads import Read
from hangar.foundation.ids import ascending_id
from hangar.webhooks.events import outbox
from hangar.webhooks.events.catalogue import EVENT_NAMES
from hangar.webhooks.models import Event
from tests.fixtures.actions import raw_events, subscribe
from tests.fixtures.all_events import fire_everything
from tests.fixtures.environment import PG_URL
from tests.fixtures.event_log import URL, page, record
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock


async def walk(client: httpx.AsyncClient, key: str, **params: Any) -> tuple[list[str], str]:
    """Every page from the start (or `after`) until one comes back short: ids, last cursor."""
    seen: list[str] = []
    limit = int(params.pop("limit", 100))
    while True:
        body = await page(client, key, limit=limit, **params)
        seen += [item["id"] for item in body["items"]]
        params["after"] = body["next_cursor"]
        if len(body["items"]) < limit:
            return seen, body["next_cursor"]


async def error(client: httpx.AsyncClient, key: str, **params: Any) -> tuple[int, dict[str, Any]]:
    response = await client.get(URL, params=params, headers={"Authorization": f"Bearer {key}"})
    body: dict[str, Any] = response.json()
    return response.status_code, body


# --- what it lists ---------------------------------------------------------------------------


async def test_every_event_the_product_fires_with_the_bytes_its_deliveries_carry(
    client: httpx.AsyncClient, admin: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    await record(other, clock.now())  # another organization's: never shown
    await fire_everything(admin, org, clock)
    recorded = await raw_events(org.engine, org.id)  # by id: the order they were fired

    response = await client.get(URL, params={"limit": 500}, headers=org.auth)

    assert response.status_code == 200
    items = response.json()["items"]
    assert [item["event"] for item in items] == [name for name, _ in recorded]
    assert {item["event"] for item in items} == set(EVENT_NAMES)
    assert set(items[0]) == {"id", "event", "created_at", "data"}
    for item, (_, stored) in zip(items, recorded, strict=True):
        # `data` is spliced in as stored, the bytes every delivery of the event sends.
        assert f'"data":{stored}}}'.encode() in response.content
        assert item["data"] == orjson.loads(stored)
        assert item["created_at"].endswith("Z")
    created = [i for i in items if i["event"] in ("reservation.created", "reservation.confirmed")]
    # Fired together: listed in the order they were fired, created first.
    assert [i["event"] for i in created[:2]] == ["reservation.created", "reservation.confirmed"]


async def test_the_test_ping_is_not_an_event_here(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    subscription = await subscribe(org, ["*"])
    async with org.engine.begin() as conn:
        await outbox.enqueue_to(
            conn, org.id, subscription, "test.ping", {"message": "hi"}, clock.now()
        )
    [fired] = await record(org, clock.now())

    body = await page(client, org.key)

    assert [item["id"] for item in body["items"]] == [fired]


async def test_read_events_alone_reads_no_event_and_others_are_refused(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    await record(org, clock.now())
    # read:events opens the log, not what each event concerns (issue 41, point 6).
    only_events = await org.key_with("read:events")
    assert (await page(client, only_events))["items"] == []
    with_squawks = await org.key_with("read:events", "read:squawks")
    assert len((await page(client, with_squawks))["items"]) == 1

    status, refused = await error(client, await org.key_with("read:squawks", "read:reservations"))
    assert status == 403
    assert refused["code"] == "INSUFFICIENT_SCOPE"
    assert "read:events" in refused["detail"]


# --- catching up -----------------------------------------------------------------------------


async def test_catching_up_sees_every_event_once_in_order_then_only_newer_ones(
    client: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    """A receiver was down: its owner walks the log in pages, finds nothing new for a while,
    then only what came after."""
    fired: list[str] = []
    for _ in range(3):
        fired += await record(org, clock.now(), ("reservation.created", "reservation.confirmed"))
        await record(other, clock.now())  # never shown
        clock.advance(minutes=5)
    fired += await record(org, clock.now())

    seen, cursor = await walk(client, org.key, limit=2)
    assert seen == fired  # seven, over four pages, in the order they were fired

    quiet = await page(client, org.key, after=cursor, limit=2)
    assert quiet["items"] == []
    clock.advance(minutes=5)
    later = await record(org, clock.now()) + await record(org, clock.now())
    newer, _ = await walk(client, org.key, after=quiet["next_cursor"], limit=2)
    assert newer == later


async def test_a_poll_that_finds_nothing_new_costs_the_keys_statement_alone(
    client: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key's statement also reads where the organization's log ends: a cursor at the
    end is answered from it, and the log's own statement runs only when an event lies past
    the cursor or still awaits its place."""
    fired = await record(org, clock.now())
    seen, cursor = await walk(client, org.key)
    assert seen == fired
    statements: list[tuple[str, ...]] = []
    rows = Read.rows

    async def counted(self: Read[Any], conn: Any, params: Any) -> Any:
        statements.append(self.keys)
        return await rows(self, conn, params)

    monkeypatch.setattr(Read, "rows", counted)

    async def poll(after: str) -> tuple[list[str], str, int]:
        statements.clear()
        body = await page(client, org.key, after=after)
        assert all("log_end" in keys or "position" in keys for keys in statements)
        return [item["id"] for item in body["items"]], body["next_cursor"], len(statements)

    assert await poll(cursor) == ([], ANY, 1)  # the key's, with the log's end
    await record(other, clock.now())  # another organization's log moved, not this one's
    found, cursor, count = await poll(cursor)
    assert (found, count) == ([], 1)
    later = await record(org, clock.now())  # committed, not placed yet: the log's statement
    found, cursor, count = await poll(cursor)
    assert found == later
    assert count > 1
    assert await poll(cursor) == ([], ANY, 1)  # at the end again


async def test_an_event_committed_late_with_an_older_id_is_not_stepped_over(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    """A transaction that recorded its event first but committed last: a reader who paged by
    id (or by time) would already be past it."""
    late_id = ascending_id()  # made now, as its transaction records it...
    [early] = await record(org, clock.now() + timedelta(seconds=1))
    first, cursor = await walk(client, org.key)
    assert first == [early]

    async with org.engine.begin() as conn:  # ...committed only now
        await conn.execute(
            insert(Event).values(
                id=late_id, org_id=org.id, name="squawk.created", data="{}", created_at=clock.now()
            )
        )
    assert late_id.hex < early.replace("-", "")
    after, _ = await walk(client, org.key, after=cursor)
    assert after == [str(late_id)]


@pytest.mark.skipif(
    not PG_URL, reason="SQLite commits one writer at a time: nothing commits out of order there"
)
async def test_pages_read_while_transactions_commit_in_another_order_miss_nothing(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    """Rounds of six transactions that record their events in one order and commit in
    another, a reader paging between commits: it sees each event once, in commit order.
    (Six: each holds a connection of the pool while it waits for its turn.)"""
    shuffle = random.Random(27).shuffle
    seen: list[str] = []
    committed: list[str] = []
    cursor: str | None = None
    for _ in range(5):
        gates = [asyncio.Event() for _ in range(6)]
        recorded: list[asyncio.Future[str]] = []

        async def writer(i: int, written: asyncio.Future[str], turn: asyncio.Event) -> None:
            async with org.engine.begin() as conn:
                [event_id] = await outbox.record(
                    conn, org.id, ["squawk.created"], {"n": i}, clock.now()
                )
                written.set_result(str(event_id))
                await turn.wait()

        writers: list[asyncio.Task[None]] = []
        for i in range(6):  # one after the other, so their ids follow this order
            recorded.append(asyncio.get_running_loop().create_future())
            writers.append(asyncio.create_task(writer(i, recorded[i], gates[i])))
            await recorded[i]
        order = list(range(6))
        shuffle(order)
        for i in order:
            gates[i].set()
            await writers[i]
            committed.append(recorded[i].result())
            found, cursor = await walk(
                client, org.key, limit=4, **({"after": cursor} if cursor else {})
            )
            seen += found

    assert seen == committed
    assert committed != sorted(committed)  # some did commit out of id order


@pytest.mark.skipif(not PG_URL, reason="concurrent writers need PostgreSQL")
async def test_a_poller_racing_concurrent_writers_sees_every_event_once(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    written: list[str] = []
    finished = asyncio.Event()

    async def writer(i: int) -> None:
        for n in range(10):
            async with org.engine.begin() as conn:
                ids = await outbox.record(conn, org.id, ["squawk.created"], {"n": n}, clock.now())
                for _ in range(random.Random(i * 100 + n).randrange(3)):
                    await asyncio.sleep(0)  # let others record and commit meanwhile
            written.extend(str(event_id) for event_id in ids)

    async def poller() -> list[str]:
        seen: list[str] = []
        cursor: str | None = None
        while True:
            last_round = finished.is_set()
            found, cursor = await walk(
                client, org.key, limit=7, **({"after": cursor} if cursor else {})
            )
            seen += found
            if last_round:
                return seen

    polling = asyncio.create_task(poller())
    await asyncio.gather(*(writer(i) for i in range(8)))
    finished.set()
    seen = await polling

    assert len(seen) == len(set(seen)) == 80
    assert set(seen) == set(written)


# --- filters ---------------------------------------------------------------------------------


async def test_filters_by_event_names_and_creation_time(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    start = clock.now()
    [created] = await record(org, start, ("squawk.created",))
    [resolved] = await record(org, start, ("squawk.resolved",))
    await record(org, start, ("mel.created",))
    clock.advance(hours=1)
    [later] = await record(org, clock.now(), ("squawk.created",))

    both = await page(client, org.key, event=["squawk.created", "squawk.resolved"])
    assert [i["id"] for i in both["items"]] == [created, resolved, later]
    since = await page(client, org.key, created_after=(start + timedelta(minutes=1)).isoformat())
    assert [i["id"] for i in since["items"]] == [later]
    at = await page(client, org.key, created_after=start.isoformat(), event="squawk.resolved")
    assert [i["id"] for i in at["items"]] == [resolved]  # at or after


@pytest.mark.parametrize("name", ["squawk.*", "*", "test.ping", "squawk.deleted"])
async def test_an_unknown_event_name_is_422_unknown_event(
    client: httpx.AsyncClient, org: Org, name: str
) -> None:
    status, body = await error(client, org.key, event=["squawk.created", name])
    assert status == 422
    assert body["code"] == "UNKNOWN_EVENT"
    assert name in body["detail"]
    assert body["errors"][0]["loc"] == ["query", "event"]


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "501"}, {"limit": "ten"}, {"created_after": "2026-05-01"}],
)
async def test_bad_parameters_are_422(
    client: httpx.AsyncClient, org: Org, params: dict[str, str]
) -> None:
    status, body = await error(client, org.key, **params)
    assert status == 422
    assert body["code"] == "VALIDATION_ERROR"


async def test_limit_defaults_to_100_and_takes_up_to_500(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    async with org.engine.begin() as conn:
        for _ in range(6):
            await outbox.record(conn, org.id, ["squawk.created"] * 100, {"n": 1}, clock.now())
    assert len((await page(client, org.key))["items"]) == 100
    assert len((await page(client, org.key, limit=500))["items"]) == 500


# --- cursors ---------------------------------------------------------------------------------


async def test_a_cursor_is_the_organizations_and_the_filters_it_was_made_with(
    client: httpx.AsyncClient, org: Org, other: Org, clock: FakeClock
) -> None:
    await record(org, clock.now())
    await record(other, clock.now())
    mine = (await page(client, org.key))["next_cursor"]
    theirs = (await page(client, other.key))["next_cursor"]
    reservations = (
        await client.get("/api/v1/external/reservations", params={"limit": 1}, headers=org.auth)
    ).json()["next_cursor"]

    for key, cursor, params in [
        (org.key, theirs, {}),
        (other.key, mine, {}),
        (org.key, mine, {"event": "squawk.created"}),
        (org.key, mine[:-2], {}),
        (org.key, "not-a-cursor", {}),
        (org.key, reservations or "x.y", {}),
    ]:
        status, body = await error(client, key, after=cursor, **params)
        assert (status, body["code"]) == (400, "INVALID_CURSOR"), (cursor, params)


async def test_events_past_the_retention_window_are_gone_and_so_is_a_cursor_before_it(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    """The window is the delivery log's, 30 days by default."""
    start = clock.now()
    await record(org, start - timedelta(days=30, seconds=1))  # past the window: gone
    kept = await record(org, start - timedelta(days=29)) + await record(org, start)
    seen, caught_up = await walk(client, org.key)
    assert seen == kept

    # A cursor that saw everything keeps for the window, less an hour of margin...
    clock.set(start + timedelta(days=29, hours=22))
    assert (await page(client, org.key, after=caught_up))["items"] == []
    refreshed = (await page(client, org.key, after=caught_up))["next_cursor"]
    # ...then events it did not return may be gone: 410, saying so.
    clock.set(start + timedelta(days=30))
    status, body = await error(client, org.key, after=caught_up)
    assert (status, body["code"]) == (410, "CURSOR_EXPIRED")
    assert "retention window (30 days)" in body["detail"]
    assert "without after" in body["detail"]
    # Asking again renews it: a poller that keeps polling never sees a 410.
    assert (await page(client, org.key, after=refreshed))["items"] == []


async def test_a_cursor_with_older_events_still_to_read_expires_with_them(
    client: httpx.AsyncClient, org: Org, clock: FakeClock
) -> None:
    """Its horizon is the next event's age, not the time it was handed out."""
    start = clock.now()
    await record(org, start - timedelta(days=20))
    [second] = await record(org, start - timedelta(days=20))
    first = await page(client, org.key, limit=1)

    clock.set(start + timedelta(days=9, hours=22))
    assert [
        i["id"] for i in (await page(client, org.key, limit=1, after=first["next_cursor"]))["items"]
    ] == [second]
    clock.set(start + timedelta(days=10))
    status, body = await error(client, org.key, limit=1, after=first["next_cursor"])
    assert (status, body["code"]) == (410, "CURSOR_EXPIRED")
