"""/settings/{org_id}/audit-log: the log as a page, newest first, with its filters as a GET
form and a link to older entries that keeps them; a bad filter or page link is a 400 page,
never a 500; another organization's entries never show."""

from __future__ import annotations

import uuid
from datetime import timedelta

import httpx

from hangar.audit import service as audit
from hangar.audit.service import OPERATOR, SYSTEM, Who
from hangar.kit.container import Services
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock

ALICE = Who.person(uuid.UUID(int=7), "alice@example.org", "203.0.113.9")


async def test_the_page_lists_filters_and_pages(
    admin: httpx.AsyncClient, org: Org, other: Org, services: Services, clock: FakeClock
) -> None:
    async with services.engine.begin() as conn:
        for n in range(60):
            at = clock.now() + timedelta(seconds=n)
            who = (ALICE, OPERATOR, SYSTEM)[n % 3]
            await audit.record(conn, org.id, who, "key.created", ("api_key", f"k{n}"), at)
        await audit.record(
            conn, other.id, ALICE, "member.removed", ("member", "theirs"), clock.now()
        )
    url = f"/settings/{org.id}/audit-log"
    page = await admin.get(url)
    assert page.status_code == 200
    assert page.text.count("data-audit-entry=") == 50
    assert "alice@example.org" in page.text
    assert "203.0.113.9" in page.text
    assert "The operator (command line)" in page.text
    assert "hangar (automatically)" in page.text
    assert "theirs" not in page.text
    assert "member.removed</code>" not in page.text
    assert 'aria-current="page">Audit log' in page.text
    older = page.text.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0]
    more = await admin.get(older.replace("&amp;", "&"))
    assert more.status_code == 200
    assert more.text.count("data-audit-entry=") == 10

    mine = await admin.get(url, params={"actor": "alice@example.org"})
    assert mine.text.count("data-audit-entry=") == 20
    assert 'value="alice@example.org"' in mine.text

    bad = await admin.get(url, params={"action": "nope", "since": "soon"})
    assert bad.status_code == 400
    assert 'aria-invalid="true"' in bad.text
    assert "data-audit-entry=" not in bad.text
    forged = await admin.get(url, params={"after": "forged.cursor"})
    assert forged.status_code == 400
    assert "does not fit this log" in forged.text


async def test_only_org_settings_sees_the_page(
    member: httpx.AsyncClient, outsider: httpx.AsyncClient, org: Org
) -> None:
    assert (await member.get(f"/settings/{org.id}/audit-log")).status_code == 403
    assert (await outsider.get(f"/settings/{org.id}/audit-log")).status_code == 404
