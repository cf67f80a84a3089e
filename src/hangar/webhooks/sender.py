"""One HTTPS POST to a subscriber, to an address the policy has just approved.

The URL is checked again at every attempt, and the connection goes only to the addresses
that check returned: the connector's resolver answers from that list and nothing else, so
DNS cannot change between the check and the connection (DNS rebinding). TLS is verified
against the host name. Redirects are failures and are never followed.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from hangar.kit.resolver import Resolver
from hangar.metrics import AttemptOutcome
from hangar.webhooks.url_policy import (
    AddressRule,
    CheckedUrl,
    UrlRejected,
    check_webhook_url,
    is_public_address,
)

TIMEOUT_SECONDS = 10.0
RESPONSE_KEPT_BYTES = 2048


@dataclass(frozen=True)
class AttemptResult:
    status_code: int | None
    error: str | None
    response_body: str | None
    duration_ms: int
    # Why no answer came (the metrics' outcome); None when the receiver answered.
    failure: AttemptOutcome | None = None

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def outcome(self) -> AttemptOutcome:
        if self.status_code is not None:
            return "succeeded" if self.succeeded else "http_error"
        return self.failure or "connection_error"


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


def _as_text(data: bytes) -> str:
    # PostgreSQL text cannot hold NUL; the log is for reading, so a stand-in is enough.
    return data.decode("utf-8", "replace").replace("\x00", "\ufffd")


class _PinnedResolver(AbstractResolver):
    """Answers only for the checked host, only with the checked addresses."""

    def __init__(self, checked: CheckedUrl) -> None:
        self._checked = checked

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.rstrip(".").lower() != self._checked.url.host:
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
            for ip in self._checked.addresses
        ]

    async def close(self) -> None:
        return None


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

    async def post(self, url: str, headers: dict[str, str], body: bytes) -> AttemptResult:
        started = time.monotonic()

        def done(**result: Any) -> AttemptResult:
            elapsed = int((time.monotonic() - started) * 1000)
            return AttemptResult(duration_ms=elapsed, **result)

        try:
            checked = await check_webhook_url(url, self._resolver, is_allowed=self._is_allowed)
        except UrlRejected as exc:
            return done(
                status_code=None, error=str(exc.code), response_body=None, failure="url_refused"
            )
        connector = aiohttp.TCPConnector(
            resolver=_PinnedResolver(checked), ssl=self._ssl, force_close=True, limit=1
        )
        try:
            async with (
                aiohttp.ClientSession(
                    connector=connector,
                    timeout=aiohttp.ClientTimeout(total=self._timeout),
                    auto_decompress=False,
                ) as session,
                session.post(
                    checked.url.url,
                    data=body,
                    # What we keep of the answer is text for people: no compressed bytes.
                    headers={**headers, "Accept-Encoding": "identity"},
                    allow_redirects=False,
                ) as response,
            ):
                return done(
                    status_code=response.status,
                    error=None,
                    response_body=_as_text(await _start_of(response.content)),
                )
        except TimeoutError:
            return done(
                status_code=None,
                error=f"timeout after {self._timeout:g} s",
                response_body=None,
                failure="timeout",
            )
        except aiohttp.ClientSSLError as exc:
            return done(
                status_code=None,
                error=f"TLS error: {exc.__class__.__name__}",
                response_body=None,
                failure="tls_error",
            )
        except (aiohttp.ClientError, OSError) as exc:
            return done(
                status_code=None,
                error=f"connection failed: {exc.__class__.__name__}",
                response_body=None,
                failure="connection_error",
            )
