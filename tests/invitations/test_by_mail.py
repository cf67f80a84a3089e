"""With HANGAR_SMTP_URL and HANGAR_MAIL_FROM set, an admin's invitation goes to the invited
mailbox and the admin's answer says only whether it was sent: the link reaches whoever
reads that mailbox, never the admin. A mail that fails loses no invitation and is no 500."""

from __future__ import annotations

import logging
from dataclasses import replace

import httpx
import pytest
from scripts.scratch import free_port

from hangar.foundation.config import Settings
from hangar.kit.container import Services
from tests.fixtures.actions import public
from tests.fixtures.factories import Org
from tests.fixtures.invites import browser, held, org_ids, set_password
from tests.fixtures.smtp import MailServer

MAIL_FROM = "Hangar <hangar@example.org>"
NEW = {"first_name": "Pat", "last_name": "Pilot", "role": "instructor"}
LINK_PREFIX = "https://hangar.example/invitations/"


@pytest.fixture
def settings(settings: Settings, mailbox: MailServer) -> Settings:
    return replace(settings, smtp_url=mailbox.url(), mail_from=MAIL_FROM)


def link_in(text: str) -> str:
    [link] = [word for word in text.split() if word.startswith(LINK_PREFIX)]
    return link


async def test_the_link_goes_to_the_mailbox_and_the_admin_sees_only_that_it_was_sent(
    admin: httpx.AsyncClient,
    services: Services,
    org: Org,
    mailbox: MailServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    body = {**NEW, "email": "Pat@Example.org"}

    response = await admin.post(f"/api/orgs/{org.id}/members", json=body)

    assert response.status_code == 201, response.text
    created = response.json()
    assert created["invitation_sent"] is True
    assert "invitation_url" not in created
    assert "/invitations/" not in response.text
    assert created["invitation_expires_at"] == "2026-05-11T10:00:30Z"
    mail = mailbox.only()
    assert (mail.mail_from, mail.recipients) == ("hangar@example.org", ["pat@example.org"])
    assert mail.message["Subject"].startswith("Invitation to join Acme Flight School")
    assert "as instructor" in mail.text
    assert "until 2026-05-11 10:00 UTC" in mail.text
    link = link_in(mail.text)
    token = link.removeprefix(LINK_PREFIX)
    # No log line holds the link.
    assert token not in caplog.text

    # Whoever reads the mailbox joins.
    async with browser(services) as person:
        joined = await set_password(person, token, "pat's own password")
        assert joined.status_code == 200, joined.text
        assert org_ids(joined.json()) == {str(org.id)}
    assert (await held(org, {"invitation_url": link})).status == "active"


async def test_a_mail_that_fails_keeps_the_invitation_and_says_what_happened(
    admin: httpx.AsyncClient,
    client: httpx.AsyncClient,
    org: Org,
    mailbox: MailServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mailbox.refuse_recipients = True
    body = {**NEW, "email": "bounce@example.org"}

    response = await admin.post(f"/api/orgs/{org.id}/members", json=body)

    assert response.status_code == 201, response.text
    created = response.json()
    assert created["invitation_sent"] is False
    assert "invitation_url" not in created
    assert created["invitation_error"] == (
        "The invitation is saved, but the email to bounce@example.org was not sent: the mail "
        "server refused the recipient's address. Remove this pending member and invite them "
        "again to send a new link."
    )
    # The invitation is there: the pending member is listed, and inviting again says so.
    [listed] = [m for m in await public(client, org, "members") if m["email"] == body["email"]]
    assert (listed["user_id"], listed["status"]) == (created["user_id"], "pending")
    again = await admin.post(f"/api/orgs/{org.id}/members", json=body)
    assert again.json()["code"] == "ALREADY_MEMBER"
    # Removed and invited again, once the mail server takes it, a new link goes out.
    removed = await admin.delete(f"/api/orgs/{org.id}/members/{created['user_id']}")
    assert removed.status_code == 204
    mailbox.refuse_recipients = False
    resent = await admin.post(f"/api/orgs/{org.id}/members", json=body)
    assert resent.json()["invitation_sent"] is True
    assert mailbox.only().recipients == ["bounce@example.org"]
    # The log says what happened, by the membership's id: no address, no link.
    [warning] = [r for r in caplog.records if "invitation mail not sent" in r.getMessage()]
    assert "refused the recipient's address" in warning.getMessage()
    assert "bounce@" not in warning.getMessage()


async def test_a_mail_server_that_is_down_is_no_500(
    admin: httpx.AsyncClient, org: Org, services: Services
) -> None:
    # A port nothing listens on: the connection is refused.
    services.settings = replace(services.settings, smtp_url=f"smtp://127.0.0.1:{free_port()}")
    body = {**NEW, "email": "down@example.org"}

    response = await admin.post(f"/api/orgs/{org.id}/members", json=body)

    assert response.status_code == 201, response.text
    assert response.json()["invitation_sent"] is False
    assert "could not be reached" in response.json()["invitation_error"]
