"""The calendar feed's caching and compression: `Cache-Control: private, max-age=300`, gzip
when the request's Accept-Encoding allows it (`Vary: Accept-Encoding`, the compressed
length, an ETag of its own), and 304s for either representation."""

from __future__ import annotations

import gzip
from typing import NamedTuple

import httpx
import pytest
from icalendar import Calendar

from hangar.http.compression import accepts_gzip
from tests.fixtures.actions import url
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

FEED = "/api/v1/external/reservations.ics"
SLOT = {
    "activity_type": "ground",
    "start_time": "2026-06-01T10:00:00Z",
    "end_time": "2026-06-01T11:00:00Z",
}
CACHE_CONTROL = "private, max-age=300"


@pytest.fixture
def plain(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """The test's client with no Accept-Encoding of its own (httpx sends gzip, deflate)."""
    del client.headers["accept-encoding"]
    return client


class Wire(NamedTuple):
    """An answer as it came over the wire: its body not decoded."""

    status_code: int
    headers: httpx.Headers
    content: bytes


async def raw(client: httpx.AsyncClient, key: str, **headers: str) -> Wire:
    async with client.stream("GET", FEED, params={"token": key}, headers=headers) as got:
        body = b"".join([chunk async for chunk in got.aiter_raw()])
    return Wire(got.status_code, got.headers, body)


async def booked(
    admin: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org, other: Org
) -> str:
    mine = await admin.post(url(org, "reservations"), json=SLOT)
    assert mine.status_code == 201, mine.text
    theirs = await outsider.post(url(other, "reservations"), json=SLOT)
    assert theirs.status_code == 201, theirs.text
    return str(theirs.json()["id"])


def uids(document: bytes) -> list[str]:
    return [str(event["UID"]) for event in Calendar.from_ical(document).walk("VEVENT")]


async def test_gzip_when_asked_and_the_same_calendar_decoded(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    plain: httpx.AsyncClient,
    org: Org,
    other: Org,
) -> None:
    theirs = await booked(admin, outsider, org, other)
    identity = await raw(plain, org.key)
    assert "content-encoding" not in identity.headers
    assert identity.headers["content-length"] == str(len(identity.content))
    compressed = await raw(plain, org.key, **{"Accept-Encoding": "gzip"})
    assert compressed.status_code == 200
    assert compressed.headers["content-encoding"] == "gzip"
    assert compressed.headers["content-length"] == str(len(compressed.content))
    assert compressed.headers["content-type"] == identity.headers["content-type"]
    assert len(compressed.content) < len(identity.content)
    # The same clock: the same document, byte for byte, once decoded.
    assert gzip.decompress(compressed.content) == identity.content
    assert len(uids(identity.content)) == 1
    assert not any(theirs in uid for uid in uids(identity.content))
    for answer in (identity, compressed):
        assert answer.headers["cache-control"] == CACHE_CONTROL
        assert answer.headers["vary"] == "Accept-Encoding"


@pytest.mark.parametrize(
    "accept_encoding",
    ["", "identity", "gzip;q=0", "br, deflate", "*;q=0", "gzip;q=0, *", "gzip;q=nope"],
)
async def test_identity_when_gzip_is_not_allowed(
    plain: httpx.AsyncClient, org: Org, accept_encoding: str
) -> None:
    got = await raw(plain, org.key, **{"Accept-Encoding": accept_encoding})
    assert got.status_code == 200
    assert "content-encoding" not in got.headers
    assert got.content.startswith(b"BEGIN:VCALENDAR\r\n")
    assert got.headers["vary"] == "Accept-Encoding"


@pytest.mark.parametrize(
    "accept_encoding",
    [
        "gzip",
        "GZIP",
        "x-gzip",
        "gzip, deflate, br",
        "br;q=1.0, gzip;q=0.5",
        "*",
        "deflate, *;q=0.1",
    ],
)
def test_what_allows_gzip(accept_encoding: str) -> None:
    assert accepts_gzip(accept_encoding)


def test_what_does_not_allow_gzip() -> None:
    for header in (None, "", "identity", "gzip;q=0", "gzip; q=0.000", "gzip;q=2", "*;q=0"):
        assert not accepts_gzip(header), header


async def test_each_representation_has_its_tag_and_is_304_by_it(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    plain: httpx.AsyncClient,
    org: Org,
    other: Org,
    clock: FakeClock,
) -> None:
    await booked(admin, outsider, org, other)
    gz = {"Accept-Encoding": "gzip"}
    identity_tag = (await raw(plain, org.key)).headers["etag"]
    gzip_tag = (await raw(plain, org.key, **gz)).headers["etag"]
    assert identity_tag.startswith('W/"')
    assert gzip_tag.startswith('W/"')
    assert identity_tag != gzip_tag
    clock.advance(minutes=15)

    for tag, headers in ((identity_tag, {}), (gzip_tag, gz)):
        again = await raw(plain, org.key, **headers, **{"If-None-Match": tag})
        assert again.status_code == 304, tag
        assert again.content == b""
        # What the 304 updates the stored copy with (RFC 9110 §15.4.5).
        assert again.headers["etag"] == tag
        assert again.headers["cache-control"] == CACHE_CONTROL
        assert again.headers["vary"] == "Accept-Encoding"
        assert "content-encoding" not in again.headers
    # A tag names one representation: the other one's is not a copy of this one.
    assert (await raw(plain, org.key, **{"If-None-Match": gzip_tag})).status_code == 200
    crossed = await raw(plain, org.key, **gz, **{"If-None-Match": identity_tag})
    assert crossed.status_code == 200
    assert crossed.headers["etag"] == gzip_tag

    # A change moves both tags.
    clock.advance(seconds=1)
    assert (await admin.post(url(org, "reservations"), json=SLOT)).status_code == 201
    for tag, headers in ((identity_tag, {}), (gzip_tag, gz)):
        changed = await raw(plain, org.key, **headers, **{"If-None-Match": tag})
        assert changed.status_code == 200
        assert changed.headers["etag"] != tag


async def test_head_of_the_compressed_feed_has_its_length(
    admin: httpx.AsyncClient,
    outsider: httpx.AsyncClient,
    plain: httpx.AsyncClient,
    org: Org,
    other: Org,
) -> None:
    await booked(admin, outsider, org, other)
    gz = {"Accept-Encoding": "gzip"}
    got = await raw(plain, org.key, **gz)
    head = await plain.head(FEED, params={"token": org.key}, headers=gz)
    assert head.status_code == 200
    assert head.headers["content-length"] == str(len(got.content))
    assert head.headers["content-encoding"] == "gzip"
    assert head.headers["etag"] == got.headers["etag"]


async def test_the_feeds_refusals_are_not_cached_as_feeds(plain: httpx.AsyncClient) -> None:
    refused = await plain.get(
        FEED, params={"token": "svc_pk_nope"}, headers={"Accept-Encoding": "gzip"}
    )
    assert refused.status_code == 401
    assert "cache-control" not in refused.headers
    assert "content-encoding" not in refused.headers
