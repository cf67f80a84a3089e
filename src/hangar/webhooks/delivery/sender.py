"""One HTTPS POST to a subscriber, to an address the policy has just approved.

The URL is checked again at every attempt, and a new connection goes only to the addresses
that check returned: the connector's resolver answers from that list and nothing else, so
DNS cannot change between the check and the connection (DNS rebinding). TLS is verified
against the host name. Redirects are failures and are never followed.

Connections are kept alive and reused, one pool per destination (host and port) shared by
every subscription that delivers there: a TLS handshake per POST cost a bare client 4.9-5.4x
its throughput (issue 39), and a receiver's CPU too. A pool holds at most
`CONNECTIONS_PER_DESTINATION` connections, closes one idle for `IDLE_SECONDS` (less than the
5 s after which Node and uvicorn close an idle one themselves, so that a POST rarely meets a
connection its receiver is closing), and is itself closed once unused for `POOL_IDLE_SECONDS`.
A name that now resolves to a private address is refused by the check, before any pool is
asked; one that now resolves elsewhere (but publicly) gets its new connections there. An
answer longer than what is kept (`RESPONSE_KEPT_BYTES`) closes its connection rather than
being read to its end.

Each result says what was sent (the headers as they went out; the body is the caller's) and
what came back (status line, headers, the first 2 KB of the body), bounded, for the delivery
log, and classifies the outcome into a fixed kind (webhooks/delivery/attempt_kinds.py) for its
sentence.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any, Required, TypedDict

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from hangar.foundation.metrics import AttemptOutcome
from hangar.kit.resolver import IPAddress, Resolver
from hangar.webhooks.delivery.attempt_kinds import OUTCOMES, AttemptKind, kind_of_http, kind_of_tls
from hangar.webhooks.egress.url_parsing import (
    AddressRule,
    RejectionCode,
    UrlRejected,
    is_public_address,
)
from hangar.webhooks.egress.url_policy import CheckedUrl, check_webhook_url

TIMEOUT_SECONDS = 10.0
RESPONSE_KEPT_BYTES = 2048
# As many as the attempts in flight a destination may have (hangar.webhooks.delivery.states), so an
# attempt never waits for a connection.
CONNECTIONS_PER_DESTINATION = 100
IDLE_SECONDS = 4.0
POOL_IDLE_SECONDS = 60.0
# A receiver chooses its answer's headers: what the log keeps of them is bounded too.
HEADERS_KEPT = 50
HEADER_VALUE_KEPT = 1000
DETAIL_KEPT = 500

Headers = list[tuple[str, str]]

_URL_KINDS: dict[RejectionCode, AttemptKind] = {
    RejectionCode.PRIVATE_IP: "url_private",
    RejectionCode.HTTPS_REQUIRED: "url_http",
    RejectionCode.DNS_FAILED: "name_unresolved",
}


@dataclass(frozen=True)
class AttemptResult:
    status_code: int | None
    error: str | None
    response_body: str | None
    duration_ms: int
    kind: AttemptKind
    # What the sentence needs besides the kind: a redirect's Location, a TLS message.
    detail: str | None = None
    # The headers as they went out; None when nothing was sent (the URL was refused).
    request_headers: Headers | None = None
    reason: str | None = None
    response_headers: Headers | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def outcome(self) -> AttemptOutcome:
        return OUTCOMES[self.kind]


def _kept_headers(pairs: Any) -> Headers:
    return [
        (_as_text(name)[:200], _as_text(value)[:HEADER_VALUE_KEPT])
        for name, value in list(pairs)[:HEADERS_KEPT]
    ]


def _clipped(text: str | None) -> str | None:
    return None if text is None else text[:DETAIL_KEPT]


def _connection_kind(exc: BaseException) -> AttemptKind:
    cause = getattr(exc, "os_error", None) or exc
    refused = isinstance(cause, ConnectionRefusedError)
    return "connection_refused" if refused else "connection_failed"


async def _start_of(content: aiohttp.StreamReader) -> bytes:
    """The first RESPONSE_KEPT_BYTES of the answer (fewer only if it is shorter); a receiver
    may send megabytes, and nothing past this is ever read into memory."""
    kept = b""
    while len(kept) < RESPONSE_KEPT_BYTES:
        chunk = await content.read(RESPONSE_KEPT_BYTES - len(kept))
        if not chunk:
            break
        kept += chunk
    return kept


def _as_text(data: bytes | str) -> str:
    # PostgreSQL text cannot hold NUL; the log is for reading, so a stand-in is enough.
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return text.replace("\x00", "\ufffd")


class _Answer(TypedDict, total=False):
    """What an attempt's result says besides its duration and the headers sent."""

    status_code: Required[int | None]
    error: Required[str | None]
    response_body: Required[str | None]
    kind: Required[AttemptKind]
    detail: str | None
    reason: str | None
    response_headers: Headers | None


def _result(started: float, sent: Headers | None, fields: _Answer) -> AttemptResult:
    """The attempt's result: `fields`, the headers as they went out, and its duration."""
    elapsed = int((time.monotonic() - started) * 1000)
    return AttemptResult(duration_ms=elapsed, request_headers=sent, **fields)


def _refused(exc: UrlRejected) -> _Answer:
    """The URL policy refused the address: nothing was sent."""
    return {
        "status_code": None,
        "error": str(exc.code),
        "response_body": None,
        "kind": _URL_KINDS.get(exc.code, "url_invalid"),
        "detail": _clipped(exc.detail),
    }


async def _answered(response: aiohttp.ClientResponse) -> _Answer:
    """An answer, whatever its status: the start of its body, its headers and its kind."""
    kind = kind_of_http(response.status)
    location = response.headers.get("Location") if kind == "redirect" else None
    return {
        "status_code": response.status,
        "error": None,
        "response_body": _as_text(await _start_of(response.content)),
        "kind": kind,
        "detail": _clipped(location),
        "reason": _clipped(response.reason),
        "response_headers": _kept_headers(response.raw_headers),
    }


def _timed_out(timeout: float) -> _Answer:
    return {
        "status_code": None,
        "error": f"timeout after {timeout:g} s",
        "response_body": None,
        "kind": "timeout",
        "detail": f"{timeout:g}",
    }


def _tls_failed(exc: aiohttp.ClientSSLError) -> _Answer:
    verification = getattr(exc, "certificate_error", None)
    return {
        "status_code": None,
        "error": f"TLS error: {exc.__class__.__name__}",
        "response_body": None,
        "kind": kind_of_tls(verification),
        "detail": _clipped(getattr(verification, "verify_message", None) or str(exc)),
    }


def _connection_failed(exc: BaseException) -> _Answer:
    return {
        "status_code": None,
        "error": f"connection failed: {exc.__class__.__name__}",
        "response_body": None,
        "kind": _connection_kind(exc),
        "detail": _clipped(f"{exc.__class__.__name__}: {exc}"),
    }


class _PinnedResolver(AbstractResolver):
    """Answers only for its destination's host, only with the addresses the latest check of
    that host approved (each attempt checks the URL again and pins what it found)."""

    def __init__(self, host: str) -> None:
        self._host = host
        self.approved: tuple[IPAddress, ...] = ()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.rstrip(".").lower() != self._host or not self.approved:
            raise OSError(f"refusing to resolve {host!r}: not the checked host")
        return [
            ResolveResult(
                hostname=host,
                host=str(ip),
                port=port,
                family=socket.AF_INET6 if ip.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for ip in self.approved
        ]

    async def close(self) -> None:
        return None


class _Destination:
    """The kept-alive connections to one host and port."""

    def __init__(self, host: str, ssl_context: ssl.SSLContext) -> None:
        self.resolver = _PinnedResolver(host)
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                resolver=self.resolver,
                ssl=ssl_context,
                limit=CONNECTIONS_PER_DESTINATION,
                keepalive_timeout=IDLE_SECONDS,
                use_dns_cache=False,
            ),
            auto_decompress=False,
        )
        self.last_used = time.monotonic()


class Sender:
    def __init__(
        self,
        resolver: Resolver,
        *,
        ssl_context: ssl.SSLContext | None = None,
        is_allowed: AddressRule = is_public_address,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        self._resolver = resolver
        self._ssl = ssl_context or ssl.create_default_context()
        self._is_allowed = is_allowed
        self._timeout = timeout
        self._destinations: dict[tuple[str, int], _Destination] = {}

    def _destination(self, checked: CheckedUrl) -> _Destination:
        """The pool of the checked URL's host and port, its resolver pinned to what this
        check approved; pools unused for POOL_IDLE_SECONDS are closed on the way."""
        now = time.monotonic()
        for key, idle in list(self._destinations.items()):
            if now - idle.last_used > POOL_IDLE_SECONDS:
                del self._destinations[key]
                asyncio.get_running_loop().create_task(idle.session.close())
        key = (checked.url.host, checked.url.port)
        found = self._destinations.get(key)
        if found is None:
            found = self._destinations[key] = _Destination(checked.url.host, self._ssl)
        found.resolver.approved = checked.addresses
        found.last_used = now
        return found

    async def close(self) -> None:
        """Closes every kept-alive connection."""
        pools, self._destinations = list(self._destinations.values()), {}
        for pool in pools:
            await pool.session.close()

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> AttemptResult:
        started = time.monotonic()
        try:
            checked = await check_webhook_url(url, self._resolver, is_allowed=self._is_allowed)
        except UrlRejected as exc:
            return _result(started, None, _refused(exc))
        # What we keep of the answer is text for people: no compressed bytes.
        outgoing = {**headers, "Accept-Encoding": "identity"}
        # What we hand the client; once it answers, the headers it actually sent replace it.
        sent: Headers = list(outgoing.items())
        session = self._destination(checked).session
        try:
            async with session.post(
                checked.url.url,
                data=body,
                headers=outgoing,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                sent = _kept_headers(response.request_info.headers.items())
                return _result(started, sent, await _answered(response))
        except TimeoutError:
            return _result(started, sent, _timed_out(self._timeout))
        except aiohttp.ClientSSLError as exc:
            return _result(started, sent, _tls_failed(exc))
        except (aiohttp.ClientError, OSError) as exc:
            return _result(started, sent, _connection_failed(exc))
