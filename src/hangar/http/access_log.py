"""What may never reach a log, and the filter that keeps it out of every record.

The calendar feed takes the full API key in `?token=` (calendar clients cannot send headers),
and uvicorn's access line includes the raw query string: without this, every feed poll would
write a live key into the log. The server decodes parameter names before it reads them
(`%74oken` is `token`), so redaction decides on the decoded query, never on its spelling.

Patterns are not enough for a password or a session cookie, which look like anything: while a
request is served (hangar.logs.request_id), the credentials it carries (the Authorization,
Cookie and X-CSRF-Token headers, the secret fields of its body, the session cookie it is
given) are taken out, verbatim, of every record logged meanwhile, its traceback included.
The filter is on every handler hangar installs, whatever the format (hangar.logs.formats).
"""

from __future__ import annotations

import copy
import logging
import re
import time
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote_plus

import orjson

from hangar.keys.authentication import KEY_PREFIX

REDACTED = "[redacted]"
# A key written anywhere in the line, for instance in a path, still never reaches the log.
_LITERAL_KEY = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_\-]*")
# An invitation link carries its token in the path (/invitations/<token>, and the same under
# /api/), and so does an operator's password-reset link (/password-reset/<token>): uvicorn
# logs the path re-quoted from its decoded form, so this spelling is the one.
_LINK_PATHS = ("/invitations/", "/password-reset/")
_LINK_TOKEN = re.compile(r"(/(?:invitations|password-reset)/)[^/?#\s]+")
# Every query string in the text, to the end of its word: uvicorn logs the query as the
# client sent it, and a client may put a quote or a `<` in it before `&token=` (a pattern
# that stopped there let the rest through).
_QUERY = re.compile(r"\?(\S*)")
# A word with percent-escapes: what it decodes to is what the server would read.
_ENCODED_WORD = re.compile(r"\S*%[0-9A-Fa-f]{2}\S*")
# user:password@ in any URL (a database URL in an error, a webhook URL).
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@]+@")
# Decoded this many times at most: `%2573` is `%73` once decoded, `s` twice; a server (or a
# redirect's `next=`) may decode once more than the last layer anyone looked at.
_DECODINGS = 4


def decoded(text: str) -> str:
    """`text` percent-decoded (a `+` is a space) until it no longer changes, at most
    _DECODINGS times: every spelling a reader along the way could turn it into."""
    for _ in range(_DECODINGS):
        once = unquote_plus(text)
        if once == text:
            break
        text = once
    return text


def _holds_secret(text: str) -> bool:
    return KEY_PREFIX in text or any(path in text for path in _LINK_PATHS)


def _secret_param(name: str, value: str) -> bool:
    # casefold: a client spelling it TOKEN meant the same thing, whether or not it worked.
    # A value is read as the application reads it, also one that is itself a URL (`next=`).
    return decoded(name).strip().casefold() == "token" or _holds_secret(decoded(value))


def _redact_query(match: re.Match[str]) -> str:
    params = []
    for param in match[1].split("&"):
        name, _equals, value = param.partition("=")
        params.append(f"{name}={REDACTED}" if _secret_param(name, value) else param)
    return "?" + "&".join(params)


def _redact_encoded(match: re.Match[str]) -> str:
    # A word that decodes to a key or a link's path: logged decoded, then redacted.
    word = decoded(match[0])
    return _redact_plain(word) if _holds_secret(word) else match[0]


def _redact_plain(text: str) -> str:
    if KEY_PREFIX in text:
        text = _LITERAL_KEY.sub(REDACTED, text)
    if any(path in text for path in _LINK_PATHS):
        text = _LINK_TOKEN.sub(lambda m: m[1] + REDACTED, text)
    return text


def redact(text: str) -> str:
    """`text` with the value of every `token` parameter, any key, any invitation or
    password-reset token and any URL's user information replaced, however they are
    percent-encoded."""
    # Every record passes here (an access line five times): each step runs only on text that
    # can hold what it looks for, which most text does not.
    if "?" in text:
        text = _QUERY.sub(_redact_query, text)
    if "%" in text:
        text = _ENCODED_WORD.sub(_redact_encoded, text)
    text = _redact_plain(text)
    if "@" in text:
        text = _USERINFO.sub(lambda m: m[1] + REDACTED + "@", text)
    return text


# --- the credentials of the request being served ------------------------------------------

# Shorter values are not taken out: they would mangle the rest of the line, and no
# credential of hangar's is that short (passwords have 8 characters or more).
_SHORTEST = 8
_SECRET_FIELD = re.compile(r"password|secret|token|csrf", re.IGNORECASE)
# Bodies are kept for scrubbing only up to what any credential-bearing form or JSON holds
# (a sign-in is capped at 32 KiB; its fields come first).
_BODY_KEPT = 16 * 1024


class ServedRequest:
    """One request as the logs see it: its id, when it started, and what it carries that is
    secret. Made by the request-id middleware; the headers are referenced, not copied, and
    nothing is parsed unless a record is logged while it is served."""

    __slots__ = ("_body", "_found", "_kept", "_response_headers", "headers", "id", "started")

    def __init__(self, request_id: str, headers: Iterable[tuple[bytes, bytes]]) -> None:
        self.id = request_id
        self.started = time.perf_counter()
        self.headers = headers
        self._body: list[bytes] = []
        self._kept = 0
        self._response_headers: Iterable[tuple[bytes, bytes]] = ()
        self._found: tuple[str, ...] | None = None

    def add_body(self, chunk: bytes) -> None:
        if chunk and self._kept < _BODY_KEPT:
            chunk = chunk[: _BODY_KEPT - self._kept]
            self._body.append(chunk)
            self._kept += len(chunk)
            self._found = None

    def responded(self, headers: Iterable[tuple[bytes, bytes]]) -> None:
        self._response_headers = headers
        self._found = None

    def secrets(self) -> tuple[str, ...]:
        if self._found is None:
            found = set(_header_secrets(self.headers, self._response_headers))
            found.update(_body_secrets(b"".join(self._body)))
            # Longest first: a secret that contains another is taken out whole.
            self._found = tuple(
                sorted((s for s in found if len(s) >= _SHORTEST), key=len, reverse=True)
            )
        return self._found


def _header_secrets(
    request: Iterable[tuple[bytes, bytes]], response: Iterable[tuple[bytes, bytes]]
) -> Iterable[str]:
    for name, raw in request:
        if name in (b"authorization", b"x-csrf-token", b"cookie"):
            value = raw.decode("latin-1")
            if name == b"authorization":
                yield value.partition(" ")[2].strip()
            elif name == b"cookie":
                for pair in value.split(";"):
                    yield pair.partition("=")[2].strip()
            yield value.strip()
    for name, raw in response:
        if name.lower() == b"set-cookie":
            yield raw.decode("latin-1").split(";", 1)[0].partition("=")[2].strip()


def _body_secrets(body: bytes) -> Iterable[str]:
    if not body:
        return
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        # A form: each secret field's value decoded, and as it was sent (a traceback may
        # quote the raw body).
        for field in body.decode("utf-8", "replace").split("&"):
            name, _equals, raw = field.partition("=")
            if _SECRET_FIELD.search(unquote_plus(name)):
                yield raw
                yield unquote_plus(raw)
        return
    if isinstance(parsed, dict):
        for name, value in parsed.items():
            if isinstance(value, str) and _SECRET_FIELD.search(name):
                yield value


current_request: ContextVar[ServedRequest | None] = ContextVar(
    "hangar_current_request", default=None
)


def scrub(text: str) -> str:
    """`redact(text)`, and without any credential of the request being served."""
    served = current_request.get()
    if served is not None:
        for secret in served.secrets():
            if secret in text:
                text = text.replace(secret, REDACTED)
    return redact(text)


_TRACEBACKS = logging.Formatter()


def _scrubbed(value: object) -> object:
    if isinstance(value, str):
        return scrub(value)
    if value is None or isinstance(value, int | float):
        return value
    # An exception or any object whose text is interpolated: replaced only if it told a secret.
    text = str(value)
    clean = scrub(text)
    return value if clean == text else clean


class RedactCredentials(logging.Filter):
    """On every handler: the message, its arguments and any traceback, scrubbed."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_scrubbed(a) for a in record.args)
        if isinstance(record.msg, str):
            record.msg = scrub(record.msg)
        elif not isinstance(record.msg, dict):  # structlog's event dicts are scrubbed later
            record.msg = scrub(str(record.msg))
        if record.exc_info and not record.exc_text:
            # Formatted here, once, so that no handler formats the raw one: a traceback ends
            # with the exception's message, which may quote a request.
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


# Asked every few seconds (a load balancer's probes) or every 15 s (Prometheus's scrape) and
# answered the same while all is well: logged only when the answer is 400 or more, so that a
# quiet service's log is not made of them. The paths of hangar.http.health and
# hangar.http.metrics_endpoint, spelled here so that every command's logging imports no web
# framework.
QUIET_PATHS = frozenset({"/api/health", "/api/health/live", "/api/health/ready", "/metrics"})


class QuietProbes(logging.Filter):
    """On every handler: drops uvicorn's access line of a probe or scrape that succeeded."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            path, status = args[2], args[4]
            if (
                isinstance(path, str)
                and isinstance(status, int)
                and status < 400
                and path.partition("?")[0] in QUIET_PATHS
            ):
                return False
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's default logging config with the redacting filter on every handler.

    A `logging.config.dictConfig` schema, typed as loosely as uvicorn and the standard
    library type it: this only adds one filter to what uvicorn hands over."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_credentials"] = {"()": RedactCredentials}
    for handler in config["handlers"].values():
        handler.setdefault("filters", []).append("redact_credentials")
    return config
