"""An attempt's request and response as a person reads HTTP, the way `curl -i` shows it: the
request or status line, each header on a line of its own, a blank line, then the body.

Made here rather than in the template: the screens' templates trim the newline after a block
tag, which ran the status line and the headers together ("HTTP 500 Internal Server
ErrorServer: ..."). The sender speaks HTTP/1.1 (aiohttp), so both lines say so; the request's
target is not stored per attempt, so it is the subscription's URL, and the screen says when
that has changed since (the Host header sent differs from the URL's).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from hangar.webhooks.inspection.delivery_log import RequestView, ResponseView

VERSION = "HTTP/1.1"


def request_target(url: str) -> str:
    """The path and query of `url`, as its request line names them (origin-form)."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _message(first_line: str, headers: list[list[str]], body: str | None) -> str:
    return "\n".join([first_line, *(f"{name}: {value}" for name, value in headers), "", body or ""])


def request_text(request: RequestView, url: str) -> str:
    return _message(f"POST {request_target(url)} {VERSION}", request["headers"], request["body"])


def response_text(response: ResponseView) -> str:
    code = response["status_code"]
    reason = response["reason"]
    if reason is None:  # recorded before reasons were: the standard phrase, if there is one
        try:
            reason = HTTPStatus(code).phrase
        except ValueError:
            reason = ""
    status_line = f"{VERSION} {code} {reason}".rstrip()
    return _message(status_line, response["headers"], response["body"])


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def url_changed(request: RequestView, url: str) -> bool:
    """Whether the Host header sent names another host than `url` does now (the URL was
    edited since the attempt): then the request line's path is today's, not the one sent."""
    sent = next((value for name, value in request["headers"] if name.lower() == "host"), None)
    if sent is None:
        return False
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal is bracketed in a Host header
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        return True
    expected = host if port in (None, _default_port(parts.scheme)) else f"{host}:{port}"
    return sent.lower() != expected
