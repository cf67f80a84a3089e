"""The client's address: the peer of the connection, or, when that peer is a trusted proxy
(HANGAR_TRUSTED_PROXIES), the address the proxy names.

Behind the nginx of deploy/, every connection comes from nginx; the client is in the
`X-Forwarded-For` nginx appends to. That header is a list anyone can start: a client may
send `X-Forwarded-For: 1.2.3.4` and nginx appends the real address after it. So the list is
read from the right, and each hop is believed only while the one that added it is trusted:
the first address not of a trusted proxy is the client (as Rack and Django's
django-xff do). Without `X-Forwarded-For`, a trusted proxy's `X-Real-IP` names the client.
Anything not an IP address ends the walk at the last address that was believed.

A raw ASGI middleware, outside every other layer: the address it settles on replaces
`scope["client"]`, so the sign-in throttles, the access log and anything else that asks
`request.client` see the same one. A peer that is not trusted is taken as it is, whatever
it sends.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from hangar.foundation.config import Network

_FORWARDED_FOR = b"x-forwarded-for"
_REAL_IP = b"x-real-ip"
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: str) -> Address | None:
    """The address `text` names; an IPv4-mapped IPv6 address (::ffff:127.0.0.1, which a
    dual-stack socket reports for an IPv4 peer) as the IPv4 address it is, so that the
    trusted proxies and the budgets per address see one address, not two spellings."""
    try:
        found = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def _trusted(address: Address, proxies: Sequence[Network]) -> bool:
    return any(address in network for network in proxies)


def client_address(
    peer: str, headers: Sequence[tuple[bytes, bytes]], proxies: Sequence[Network]
) -> str:
    """The client's address for a connection from `peer` with these request headers."""
    current = _address(peer)
    if current is None:
        return peer
    if not _trusted(current, proxies):
        return str(current)
    hops: list[str] = []
    real_ip: str | None = None
    for name, value in headers:
        if name == _FORWARDED_FOR:
            # Several headers are one list, in order (RFC 9110 §5.3).
            hops.extend(value.decode("latin-1").split(","))
        elif name == _REAL_IP:
            real_ip = value.decode("latin-1")
    if not hops and real_ip is not None:
        hops = [real_ip]
    for hop in reversed(hops):
        named = _address(hop)
        if named is None:
            break
        current = named
        if not _trusted(current, proxies):
            break
    return str(current)


class ClientAddress:
    def __init__(self, app: ASGIApp, proxies: Sequence[Network]) -> None:
        self.app = app
        self.proxies = tuple(proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if scope["type"] == "http" and client:
            address = client_address(client[0], scope["headers"], self.proxies)
            if address != client[0]:
                peer = _address(client[0])
                # A proxy's port names no client socket; the peer's own, respelt, still does.
                port = client[1] if peer is not None and str(peer) == address else 0
                scope["client"] = (address, port)
        await self.app(scope, receive, send)
