"""Resolving host names: the seam through which tests inject their own answers.

The policy on what a resolved address may be lives with its user (webhooks/egress/url_policy.py);
this module only answers "which addresses does this name have".
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Protocol

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class ResolutionFailed(Exception):
    """Raised by a resolver when a name has no usable answer."""


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[IPAddress]: ...


class SystemResolver:
    """Resolves with the operating system's resolver (getaddrinfo), bounded by a timeout."""

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._timeout):
                infos = await loop.getaddrinfo(_absolute(host), port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:  # gaierror and TimeoutError are OSErrors
            raise ResolutionFailed(f"{host} does not resolve") from exc
        addresses: dict[IPAddress, None] = {}
        for family, _type, _proto, _canonname, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            # Scope ids ("fe80::1%eth0") are dropped; the policy judges the address itself.
            text = str(sockaddr[0]).partition("%")[0]
            addresses[ipaddress.ip_address(text)] = None
        return list(addresses)


def _absolute(host: str) -> str:
    # A trailing dot stops resolv.conf search domains ("example.com" becoming
    # "example.com.cluster.local") from turning a public name into an internal one.
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host if host.endswith(".") else f"{host}."
    return host
