"""The calendar feed under polling: validators out, 304 in, HEAD.

Calendar clients poll the .ics every few minutes. The feed sends a weak ETag and, once the
second of the last change has passed, Last-Modified; a poll with nothing changed in the
organization's reservations is answered 304 without its events being read. Every reservation
command (create, cancel, check-in, checkout, no-show, delete) changes the validator; the other
organization's changes do not.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from hangar.reservations import queries
from tests.fixtures.actions import url
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

FEED = "/api/v1/external/reservations.ics"
SLOT = {
    "activity_type": "ground",
    "start_time": "2026-06-01T10:00:00Z",
    "end_time": "2026-06-01T11:00:00Z",
}


async def poll(client: httpx.AsyncClient, key: str, **headers: str) -> httpx.Response:
    return await client.get(FEED, params={"token": key}, headers=headers)


async def book(admin: httpx.AsyncClient, org: Org) -> str:
    created = await admin.post(url(org, "reservations"), json=SLOT)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


@pytest.fixture
async def key(org: Org) -> str:
    return await org.key_with("read:reservations")


async def test_an_unchanged_feed_is_304_by_etag_without_reading_its_events(
    admin: httpx.AsyncClient,
    client: httpx.AsyncClient,
    org: Org,
    key: str,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await book(admin, org)
    first = await poll(client, key)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert etag.startswith('W/"')

    async def no_reading(*_: object) -> None:
        raise AssertionError("a 304 must not read the feed's events")

    monkeypatch.setattr(queries, "calendar", no_reading)
    clock.advance(minutes=5)
    again = await poll(client, key, **{"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    # A list of tags, the strong spelling of ours, and * all match (weak comparison).
    for header in (f'"x", {etag}', etag.removeprefix("W/"), "*"):
        assert (await poll(client, key, **{"If-None-Match": header})).status_code == 304
    assert (await poll(client, key, **{"If-None-Match": 'W/"0-stale"'})).status_code != 304


async def test_every_reservation_command_changes_the_validator(
    admin: httpx.AsyncClient,
    client: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    org: Org,
    other: Org,
    key: str,
    clock: FakeClock,
) -> None:
    flown, dropped, missed, gone = [await book(admin, org) for _ in range(4)]
    seen = {(await poll(client, key)).headers["etag"]}
    commands = [
        ("post", f"reservations/{flown}/check-in", {}),
        ("post", f"reservations/{flown}/checkout", {"hobbs_out": 10, "hobbs_in": 11.2}),
        ("post", f"reservations/{dropped}/cancel", {"reason": "weather"}),
        ("patch", f"reservations/{missed}", {"status": "no_show"}),
        ("delete", f"reservations/{gone}", None),
        ("post", "reservations", SLOT),
    ]
    for method, path, body in commands:
        # The other organization's change first: it must not move this feed's tag.
        before = (await poll(client, key)).headers["etag"]
        assert (await outsider.post(url(other, "reservations"), json=SLOT)).status_code == 201
        assert (await poll(client, key, **{"If-None-Match": before})).status_code == 304

        clock.advance(seconds=1)
        done = await admin.request(method, url(org, path), json=body)
        assert done.is_success, (path, done.text)
        after = await poll(client, key, **{"If-None-Match": before})
        assert after.status_code == 200, path
        assert after.headers["etag"] not in seen, path
        seen.add(after.headers["etag"])


async def test_last_modified_waits_for_the_second_of_the_change_to_pass(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, key: str, clock: FakeClock
) -> None:
    clock.set(datetime(2026, 5, 4, 10, 0, 0, 200000, tzinfo=UTC))
    await book(admin, org)
    # Same second as the change: another change within it would carry the same date.
    assert "last-modified" not in (await poll(client, key)).headers

    clock.set(datetime(2026, 5, 4, 10, 0, 1, tzinfo=UTC))
    stated = (await poll(client, key)).headers["last-modified"]
    assert stated == "Mon, 04 May 2026 10:00:00 GMT"
    clock.advance(minutes=3)
    assert (await poll(client, key, **{"If-Modified-Since": stated})).status_code == 304
    earlier = format_datetime(datetime(2026, 5, 4, 9, 59, 59, tzinfo=UTC), usegmt=True)
    assert (await poll(client, key, **{"If-Modified-Since": earlier})).status_code == 200
    # An unreadable date is ignored, and If-None-Match, when sent, decides alone.
    assert (await poll(client, key, **{"If-Modified-Since": "yesterday"})).status_code == 200
    with_tag = {"If-Modified-Since": stated, "If-None-Match": 'W/"0-stale"'}
    assert (await poll(client, key, **with_tag)).status_code == 200

    await book(admin, org)
    assert (await poll(client, key, **{"If-Modified-Since": stated})).status_code == 200


async def test_head_answers_the_get_headers_without_a_body(
    admin: httpx.AsyncClient, client: httpx.AsyncClient, org: Org, key: str
) -> None:
    await book(admin, org)
    got = await poll(client, key)
    head = await client.head(FEED, params={"token": key})
    assert head.status_code == 200
    assert head.content == b""
    # The GET's own length (httpx asks for gzip: the length of the compressed feed).
    assert head.headers["content-length"] == got.headers["content-length"]
    assert head.headers["etag"] == got.headers["etag"]
    assert head.headers["content-type"] == got.headers["content-type"]
    conditional = await client.head(
        FEED, params={"token": key}, headers={"If-None-Match": got.headers["etag"]}
    )
    assert conditional.status_code == 304
    # HEAD is authenticated and scoped exactly as GET is.
    assert (await client.head(FEED, params={"token": org.key[:-1] + "x"})).status_code == 401
    unscoped = await org.key_with("read:aircraft")
    assert (await client.head(FEED, params={"token": unscoped})).status_code == 403


async def test_the_docs_tell_integrators_how_to_poll(client: httpx.AsyncClient) -> None:
    page = (await client.get("/docs")).text
    section = page[page.index('id="calendar-polling"') :]
    for words in ("ETag", "If-None-Match", "If-Modified-Since", "304 Not Modified", "HEAD"):
        assert words in section.split("</p>")[0], words
