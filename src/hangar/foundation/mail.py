"""Mail: the links hangar sends to a person's mailbox (HANGAR_SMTP_URL, HANGAR_MAIL_FROM).

Why by mail: whoever holds an invitation or password-reset link acts as the person it names.
Shown to the admin who invited (or the operator who reset), the link proves only that they
asked; mailed to the address, it reaches whoever reads that mailbox, which is what naming a
person by their email means. Without these settings hangar shows the link instead, for the
one who asked to hand over.

Sending is the standard library's smtplib, on a thread (it blocks), with a timeout on each
socket operation. `smtps://` speaks TLS from the first byte (port 465 unless given);
`smtp://` (port 25 unless given) requires STARTTLS and refuses a server that does not offer
it (a man in the middle can strip the offer; the links are credentials), and
`smtp+insecure://` (port 25) is the one way to send in clear, to a relay on the same machine,
never with a password. Certificates are verified against the system trust store
(`SSL_CERT_FILE` points it at another bundle), as for webhooks.

A message goes to exactly one mailbox, the address given, which is the envelope's only
recipient: an address that is not one plain address (a comma, a space, angle brackets) is
refused before connecting, so `victim@x, me@y` cannot copy a link to a second mailbox.

Failures raise NotSent, whose message says what happened in words fit for whoever asked and
for the log (no link, no address, no server credentials). Callers send after committing what
the link is for, so a mail that fails loses nothing but the mail.
"""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parseaddr
from urllib.parse import unquote, urlsplit

from hangar.foundation.config import Settings

# Per socket operation (connect, each command): a mail server that hangs holds up one answer
# this long at most, never the process.
TIMEOUT_SECONDS = 10.0
DEFAULT_PORTS = {"smtp": 25, "smtps": 465, "smtp+insecure": 25}
# Characters that make an address more than one plain addr-spec to a mail server or a parser.
_NOT_IN_ONE_ADDRESS = frozenset(' ,;<>"()[]\\\r\n\t')


class NotSent(Exception):
    """The mail did not go out; the message says why, fit to show whoever asked and to log
    (it names neither the recipient nor anything of the server's credentials)."""


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    body: str
    date: datetime  # the clock's now, for the Date header


def is_one_address(address: str) -> bool:
    """Whether `address` is one plain mail address (and nothing a server could read as two)."""
    local, at, domain = address.rpartition("@")
    return (
        bool(local and at and domain)
        and not any(c in _NOT_IN_ONE_ADDRESS for c in address)
        and parseaddr(address) == ("", address)
    )


@dataclass(frozen=True)
class Mailer:
    smtp_url: str
    mail_from: str
    timeout: float = TIMEOUT_SECONDS

    async def send(self, mail: Mail) -> None:
        """Sends `mail` to its one recipient, or raises NotSent."""
        if not is_one_address(mail.to):
            raise NotSent("the address is not one mail address")
        message = self._message(mail)
        await asyncio.to_thread(self._deliver, message, mail.to)

    def _message(self, mail: Mail) -> EmailMessage:
        sender = parseaddr(self.mail_from)[1]
        message = EmailMessage()
        message["From"] = self.mail_from
        message["To"] = mail.to
        # A subject carries names an admin typed: one line, whatever they hold.
        message["Subject"] = " ".join(mail.subject.split())
        message["Date"] = format_datetime(mail.date)
        message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2])
        # RFC 3834: no vacation responder should answer it.
        message["Auto-Submitted"] = "auto-generated"
        message.set_content(mail.body)
        return message

    def _deliver(self, message: EmailMessage, to: str) -> None:
        url = urlsplit(self.smtp_url)
        host = url.hostname or ""
        port = url.port or DEFAULT_PORTS[url.scheme]
        user = unquote(url.username) if url.username else None
        context = ssl.create_default_context()
        try:
            client = (
                smtplib.SMTP_SSL(host, port, timeout=self.timeout, context=context)
                if url.scheme == "smtps"
                else smtplib.SMTP(host, port, timeout=self.timeout)
            )
            with client:
                client.ehlo()
                if url.scheme == "smtp":
                    # Required, not opportunistic: a man in the middle who strips the offer
                    # must not get the links (credentials) in clear.
                    if not client.has_extn("starttls"):
                        raise NotSent(
                            "the mail server does not offer STARTTLS, and hangar sends nothing "
                            "in clear: use smtps://, a server that offers STARTTLS, or "
                            "smtp+insecure:// for a relay on this machine"
                        )
                    client.starttls(context=context)
                    client.ehlo()
                elif url.scheme == "smtp+insecure" and user is not None:
                    raise NotSent("hangar does not send its mail password in clear")
                if user is not None:
                    client.login(user, unquote(url.password or ""))
                sender = parseaddr(self.mail_from)[1]
                client.send_message(message, from_addr=sender, to_addrs=[to])
        except NotSent:
            raise
        except smtplib.SMTPAuthenticationError:
            raise NotSent("the mail server refused hangar's sign-in (HANGAR_SMTP_URL)") from None
        except smtplib.SMTPRecipientsRefused:
            raise NotSent("the mail server refused the recipient's address") from None
        except smtplib.SMTPSenderRefused:
            raise NotSent("the mail server refused the sender (HANGAR_MAIL_FROM)") from None
        except smtplib.SMTPResponseException as refused:
            raise NotSent(f"the mail server refused the message ({refused.smtp_code})") from None
        except ssl.SSLCertVerificationError:
            raise NotSent("the mail server's certificate is not trusted") from None
        except ssl.SSLError:
            raise NotSent("TLS with the mail server failed") from None
        except (OSError, smtplib.SMTPException):
            # Refused, unreachable, timed out or hung up: the same to whoever asked.
            raise NotSent("the mail server could not be reached") from None


def mailer_of(settings: Settings) -> Mailer | None:
    """The mailer the settings describe, or None: links are then shown, not mailed."""
    if settings.smtp_url is None or settings.mail_from is None:
        return None
    return Mailer(settings.smtp_url, settings.mail_from)
