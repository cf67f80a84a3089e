"""What HANGAR_SMTP_URL and HANGAR_MAIL_FROM may be (hangar.foundation.config reads them,
hangar.foundation.mail sends with them).

The URL is `smtp://` (STARTTLS required), `smtps://` (TLS from the first byte) or
`smtp+insecure://` (no TLS, no credentials: a relay on this machine), then
`[user:password@]host[:port]`, nothing after the port. The sender is one address, optionally
with a display name (`Hangar <hangar@example.org>`).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

SMTP_SCHEMES = ("smtp", "smtps", "smtp+insecure")
# `hangar@example.org`, or `Display Name <hangar@example.org>`: exactly one address, on one line.
_ADDR_SPEC = r"[^\s<>,;\"()@]+@[^\s<>,;\"()@]+"
_ONE_SENDER = re.compile(rf"{_ADDR_SPEC}|[^<>,;\r\n]*<{_ADDR_SPEC}>")


def smtp_url_problem(url: str) -> str | None:
    """What is wrong with `url` as HANGAR_SMTP_URL, in the words to show, or None. The words
    never quote the URL back: it may hold the mail server's password."""
    parts = urlsplit(url)
    if parts.scheme not in SMTP_SCHEMES:
        return (
            "HANGAR_SMTP_URL must start with smtp://, smtps:// or smtp+insecure://, such as "
            "smtps://user:password@mail.example.org:465"
        )
    try:
        port = parts.port
    except ValueError:
        port = -1
    extra = parts.path not in ("", "/") or parts.query or parts.fragment
    if not parts.hostname or port in (-1, 0) or extra:
        return (
            "HANGAR_SMTP_URL must be smtp://, smtps:// or smtp+insecure:// followed by "
            "[user:password@]host[:port] "
            "and nothing else, such as smtps://user:password@mail.example.org:465"
        )
    if parts.scheme == "smtp+insecure" and (parts.username or parts.password):
        return (
            "HANGAR_SMTP_URL: smtp+insecure:// sends in clear, so it takes no user or password "
            "(hangar never sends its mail password in clear): use smtps:// or smtp://"
        )
    return None


def is_one_sender(sender: str) -> bool:
    """Whether `sender` is one address, with or without a display name, on one line."""
    return _ONE_SENDER.fullmatch(sender) is not None and len(sender) <= 400
