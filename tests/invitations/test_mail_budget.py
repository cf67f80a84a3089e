"""Invitation mail is budgeted (issue 41, point 5): at most 3 an hour to one address and 100
a day from one organization, so an admin cannot turn invite, remove, invite again into a
flood of someone's mailbox through the operator's mail server (before: 25 mails to one
victim in 1.6 s). Past a budget the invitation is refused, 429 with `Retry-After`, and
nothing is made; without mail configured nothing is sent and nothing is budgeted."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from hangar.foundation.config import Settings
from hangar.kit.ratelimit import Limit
from hangar.orgs import handover
from tests.fixtures.factories import Org
from tests.fixtures.fakes import FakeClock
from tests.fixtures.smtp import MailServer

NEW = {"first_name": "Pat", "last_name": "Pilot", "role": "member"}


@pytest.fixture
def settings(settings: Settings, mailbox: MailServer) -> Settings:
    return replace(settings, smtp_url=mailbox.url(), mail_from="hangar@example.org")


async def invite(admin: httpx.AsyncClient, org: Org, email: str) -> httpx.Response:
    return await admin.post(f"/api/orgs/{org.id}/members", json={**NEW, "email": email})


def test_the_budgets_are_the_promised_ones() -> None:
    assert handover.MAIL_TO_LIMITS[0].count == 3
    assert handover.MAIL_TO_LIMITS[0].seconds == 3600
    assert handover.MAIL_FROM_ORG_LIMITS[0].count == 100
    assert handover.MAIL_FROM_ORG_LIMITS[0].seconds == 86400


async def test_invite_remove_invite_again_stops_at_three_mails_an_hour(
    admin: httpx.AsyncClient, org: Org, other: Org, mailbox: MailServer, clock: FakeClock
) -> None:
    victim = "victim@example.org"
    for _ in range(3):
        made = await invite(admin, org, victim)
        assert made.status_code == 201, made.text
        removed = await admin.delete(f"/api/orgs/{org.id}/members/{made.json()['user_id']}")
        assert removed.status_code == 204
    refused = await invite(admin, org, "Victim@Example.org")  # the same mailbox
    assert refused.status_code == 429
    assert refused.json()["code"] == "RATE_LIMITED"
    assert "3 invitation mails an hour to one address" in refused.json()["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 3600
    assert len(mailbox.received) == 3

    # Someone else can still be invited, and the victim again in the next hour.
    assert (await invite(admin, org, "someone@example.org")).status_code == 201
    clock.advance(seconds=int(refused.headers["Retry-After"]))
    # 201, not 409 "already a member": the refused invitation made nothing.
    assert (await invite(admin, org, victim)).status_code == 201
    assert len(mailbox.received) == 5


async def test_an_organization_sends_at_most_its_daily_mails(
    admin: httpx.AsyncClient,
    org: Org,
    other: Org,
    mailbox: MailServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The day's 100 made small, the mechanism the same (the numbers: the test above).
    monkeypatch.setattr(handover, "MAIL_FROM_ORG_LIMITS", (Limit(4, 86400, "4 a day"),))
    for n in range(4):
        assert (await invite(admin, org, f"p{n}@example.org")).status_code == 201
    refused = await invite(admin, org, "p4@example.org")
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 3600 - 1  # the day's window, not an hour's
    assert len(mailbox.received) == 4


async def test_a_refused_invitation_spends_no_mail(
    admin: httpx.AsyncClient, org: Org, mailbox: MailServer
) -> None:
    first = await invite(admin, org, "pat@example.org")
    assert first.status_code == 201
    for _ in range(3):  # already a member: 409 each time, nothing mailed, nothing counted
        assert (await invite(admin, org, "pat@example.org")).status_code == 409
    removed = await admin.delete(f"/api/orgs/{org.id}/members/{first.json()['user_id']}")
    assert removed.status_code == 204
    assert (await invite(admin, org, "pat@example.org")).status_code == 201
    assert len(mailbox.received) == 2
