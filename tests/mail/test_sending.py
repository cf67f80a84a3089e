"""hangar.foundation.mail against a real SMTP conversation on loopback (tests/fixtures/smtp.py): one
recipient, the address given; smtp:// only over STARTTLS, smtp+insecure:// the one way to a
plain relay, and never a password in clear; smtps from the first byte; every failure a
NotSent that names neither the recipient nor the server's credentials."""

from __future__ import annotations

import ssl
from email.utils import format_datetime
from pathlib import Path

import pytest
from scripts.scratch import free_port

from hangar.foundation.mail import Mail, Mailer, NotSent, is_one_address
from tests.fixtures.factories import T0
from tests.fixtures.smtp import mail_server, tls_contexts

FROM = "Hangar <hangar@example.org>"
CREDENTIALS = ("mailer", "s3cret: pass/word")


def mail(to: str = "pat@example.org") -> Mail:
    return Mail(to, "Invitation to join\r\nBcc: someone@evil.example", "Open the link.\n", T0)


@pytest.fixture
def trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A server's TLS context, from a throwaway CA that the system trust store of this
    process trusts (SSL_CERT_FILE)."""
    server, ca_file = tls_contexts(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    return server


async def test_a_message_goes_to_its_one_recipient_from_the_sender() -> None:
    async with mail_server() as server:
        await Mailer(server.url(), FROM).send(mail())

    got = server.only()
    assert (got.mail_from, got.recipients) == ("hangar@example.org", ["pat@example.org"])
    message = got.message
    assert (message["From"], message["To"]) == (FROM, "pat@example.org")
    # A subject with a line break in it stays one header: nothing is added to the envelope.
    assert message["Subject"] == "Invitation to join Bcc: someone@evil.example"
    assert message["Bcc"] is None
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Date"] == format_datetime(T0)
    assert got.text == "Open the link.\n"


@pytest.mark.parametrize(
    "to",
    [
        "pat@example.org, me@evil.example",
        "pat@example.org me@evil.example",
        "Pat <me@evil.example>",
        "pat@example.org;me@evil.example",
        "no-at-sign",
        "x<img>@example.org",
    ],
)
async def test_an_address_that_is_not_one_mailbox_is_refused_before_connecting(to: str) -> None:
    assert not is_one_address(to)
    async with mail_server() as server:
        with pytest.raises(NotSent) as refused:
            await Mailer(server.url(), FROM).send(mail(to))
    assert str(refused.value) == "the address is not one mail address"
    assert server.received == []


async def test_starttls_is_used_whenever_offered_and_the_password_goes_only_over_it(
    trusted: ssl.SSLContext,
) -> None:
    async with mail_server(starttls=trusted, credentials=CREDENTIALS) as server:
        await Mailer(server.url(*CREDENTIALS), FROM).send(mail())
    assert server.sign_ins == [(*CREDENTIALS, True)]
    got = server.only()
    assert (got.tls, got.user) == (True, "mailer")


async def test_a_password_is_never_sent_to_a_server_without_starttls() -> None:
    async with mail_server(credentials=CREDENTIALS) as server:
        with pytest.raises(NotSent) as refused:
            await Mailer(server.url(*CREDENTIALS, scheme="smtp"), FROM).send(mail())
        with pytest.raises(NotSent, match="password in clear"):
            await Mailer(server.url(*CREDENTIALS, scheme="smtp+insecure"), FROM).send(mail())
    assert "does not offer STARTTLS" in str(refused.value)
    assert server.sign_ins == []
    assert server.received == []


async def test_smtp_requires_starttls_even_without_credentials() -> None:
    # A man in the middle strips the STARTTLS offer: before, the link went in clear.
    async with mail_server() as server:
        with pytest.raises(NotSent) as refused:
            await Mailer(server.url(scheme="smtp"), FROM).send(mail())
    assert "does not offer STARTTLS" in str(refused.value)
    assert server.received == []


async def test_smtp_insecure_is_the_one_way_to_a_plain_relay() -> None:
    async with mail_server() as server:
        assert server.url().startswith("smtp+insecure://")
        await Mailer(server.url(), FROM).send(mail())
    assert (server.only().tls, server.only().user) == (False, None)


async def test_smtps_speaks_tls_from_the_first_byte(trusted: ssl.SSLContext) -> None:
    async with mail_server(implicit_tls=trusted, credentials=CREDENTIALS) as server:
        assert server.url().startswith("smtps://")
        await Mailer(server.url(*CREDENTIALS), FROM).send(mail())
    assert server.sign_ins == [(*CREDENTIALS, True)]
    assert server.only().tls


async def test_a_certificate_the_system_does_not_trust_is_refused(tmp_path: Path) -> None:
    tls, _ = tls_contexts(tmp_path)  # SSL_CERT_FILE is not set to this CA
    async with mail_server(implicit_tls=tls, credentials=CREDENTIALS) as server:
        with pytest.raises(NotSent) as refused:
            await Mailer(server.url(*CREDENTIALS), FROM).send(mail())
    assert str(refused.value) == "the mail server's certificate is not trusted"
    assert server.sign_ins == []


async def test_each_failure_says_what_happened_and_nothing_secret(
    trusted: ssl.SSLContext,
) -> None:
    async with mail_server(starttls=trusted, credentials=CREDENTIALS) as server:
        wrong = Mailer(server.url("mailer", "not the password"), FROM)
        with pytest.raises(NotSent) as signed_out:
            await wrong.send(mail())
        server.refuse_recipients = True
        with pytest.raises(NotSent) as refused:
            await Mailer(server.url(*CREDENTIALS), FROM).send(mail())
    with pytest.raises(NotSent) as down:
        await Mailer(f"smtp://127.0.0.1:{free_port()}", FROM, timeout=2).send(mail())

    said = {str(e.value) for e in (signed_out, refused, down)}
    assert said == {
        "the mail server refused hangar's sign-in (HANGAR_SMTP_URL)",
        "the mail server refused the recipient's address",
        "the mail server could not be reached",
    }
    assert not any("pat@" in s or "password" in s.lower() for s in said)
    assert server.received == []
