"""Steps 1 to 4 of the webhook URL policy (hangar.webhooks.egress.url_policy): a URL parsed, its
host normalised as browsers do, and refused if it cannot be a public https endpoint, before any
name is resolved; and the address rule that every address must pass."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from hangar.kit.resolver import IPAddress

MAX_URL_LENGTH = 2048


class RejectionCode(StrEnum):
    PARSE_FAILED = "WEBHOOK_URL_PARSE_FAILED"
    HTTPS_REQUIRED = "WEBHOOK_URL_HTTPS_REQUIRED"
    HOST_REQUIRED = "WEBHOOK_URL_HOST_REQUIRED"
    PRIVATE_IP = "WEBHOOK_URL_PRIVATE_IP"
    DNS_FAILED = "WEBHOOK_URL_DNS_FAILED"


class UrlRejected(Exception):
    """A webhook URL that may not be used; ``detail`` is written for administrators."""

    def __init__(self, code: RejectionCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ParsedUrl:
    """An https URL reduced to what a client needs; ``host`` is ASCII and canonical."""

    host: str  # lower-case DNS name or canonical IP text (IPv6 without brackets)
    port: int
    path: str  # always starts with "/"
    query: str  # without the "?"; "" when absent
    ip: IPAddress | None  # set when the host is an IP literal

    @property
    def destination(self) -> str:
        """`host:port`: where its deliveries go, whichever its path (the claim's share)."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The canonical URL: give this, not the original string, to the HTTP client."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        port = "" if self.port == 443 else f":{self.port}"
        query = f"?{self.query}" if self.query else ""
        return f"https://{host}{port}{self.path}{query}"


AddressRule = Callable[[IPAddress], bool]


# --- the address rule -------------------------------------------------------------------

# Listed explicitly because `is_global` alone is not enough: it is True for multicast and,
# depending on the Python version, for NAT64, 6to4, Teredo and IPv4-mapped forms.
_V4_BLOCKED = tuple(
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",  # "this network"; connecting to 0.0.0.0 reaches the local host
        "10.0.0.0/8",  # RFC 1918
        "100.64.0.0/10",  # carrier-grade NAT; 100.100.100.200 is a cloud metadata address
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, including 169.254.169.254 (cloud metadata)
        "172.16.0.0/12",  # RFC 1918
        "192.0.0.0/24",  # IETF protocol assignments; 192.0.0.192 is a cloud metadata address
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # RFC 1918
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, including broadcast 255.255.255.255
    )
)

# Only 2000::/3 is allocated as global unicast, so everything outside it (::, ::1, IPv4-
# compatible and -translated forms, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, fc00::/7,
# fe80::/10, fec0::/10, ff00::/8, ...) is refused; the list below adds the holes inside it.
_V6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_V6_BLOCKED = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "2001::/23",  # IETF protocol assignments, including Teredo 2001::/32 (embeds IPv4)
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4 (embeds an IPv4 address, possibly a private one)
        "3fff::/20",  # documentation (RFC 9637)
    )
)


def is_public_address(ip: IPAddress) -> bool:
    """True only for addresses on the public internet; the single rule for literals and DNS."""
    if isinstance(ip, ipaddress.IPv6Address):
        ip = ipaddress.IPv6Address(int(ip))  # a scope id changes nothing about reachability
        mapped = ip.ipv4_mapped
        if mapped is not None:
            # ::ffff:a.b.c.d is an IPv4 connection in disguise: judge the IPv4 address.
            return is_public_address(mapped)
        if ip not in _V6_GLOBAL_UNICAST or any(ip in net for net in _V6_BLOCKED):
            return False
        return ip.is_global and not ip.is_multicast
    if any(ip in net for net in _V4_BLOCKED):
        return False
    return ip.is_global and not ip.is_multicast


# --- parsing ----------------------------------------------------------------------------

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.DOTALL)
_PORT = re.compile(r"[0-9]+")  # ASCII only: int() also takes full-width digits and "4_43"
_HOST_CHARS = re.compile(r"[a-z0-9._-]+")
_IPV6_CHARS = re.compile(r"[0-9a-f:.]+")
_HEX = frozenset("0123456789abcdefABCDEF")
_DEC = frozenset("0123456789")
_OCT = frozenset("01234567")

# Characters IDNA 2003 maps away but IDNA 2008 keeps (ß -> ss vs xn--...): we would check
# one name while an IDNA 2008 client (aiohttp/yarl) connects to another.
_IDNA_DEVIATIONS = frozenset("\u00df\u03c2\u200c\u200d")
# Dots that browsers treat as label separators; NFKC leaves the ideographic one alone.
_DOT_VARIANTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})

# Top-level labels that are never delegated on the public internet: special-use names
# (RFC 6761, 6762, 7686, 8375, 9476), ICANN's private-use .internal, and the TLDs ICANN
# will not delegate because internal networks already use them.
_INTERNAL_TLDS = frozenset(
    {
        "localhost",
        "local",
        "internal",
        "localdomain",
        "lan",
        "home",
        "corp",
        "intranet",
        "private",
        "arpa",
        "test",
        "invalid",
        "example",
        "onion",
        "alt",
    }
)


def _parse_failed(detail: str) -> UrlRejected:
    return UrlRejected(RejectionCode.PARSE_FAILED, detail)


def private_ip(detail: str) -> UrlRejected:
    """PRIVATE_IP: the URL reaches, or could reach, something not on the public internet."""
    return UrlRejected(RejectionCode.PRIVATE_IP, detail)


def parse_webhook_url(url: str) -> ParsedUrl:
    """Parse and statically check a webhook URL (no DNS); raise :class:`UrlRejected`."""
    if not url:
        raise _parse_failed("Enter a webhook URL.")
    if len(url) > MAX_URL_LENGTH:
        raise _parse_failed(f"Webhook URLs may be at most {MAX_URL_LENGTH} characters long.")
    # isprintable() is False for controls, separators and invisible format characters.
    if not url.isprintable() or " " in url:
        raise _parse_failed("Webhook URLs may not contain spaces or control characters.")
    if "\\" in url:
        raise _parse_failed("Webhook URLs may not contain backslashes.")
    match = _SCHEME.fullmatch(url)
    if match is None:
        raise _parse_failed("This is not a URL; webhook URLs must start with https://")
    scheme, rest = match.groups()

    authority: str | None = None
    if rest.startswith("//"):
        rest = rest[2:]
        end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority, rest = rest[:end], rest[end:]
    rest = rest.partition("#")[0]
    path, _, query = rest.partition("?")

    raw_host, port = _split_authority(authority) if authority is not None else ("", 443)

    if scheme.lower() != "https":
        raise UrlRejected(RejectionCode.HTTPS_REQUIRED, "Webhook URLs must start with https://")
    if not raw_host:
        raise UrlRejected(RejectionCode.HOST_REQUIRED, "Webhook URLs must include a host name.")

    ip: IPAddress | None
    if raw_host.startswith("["):
        ip = _parse_bracketed(raw_host)
        host = ip.compressed
    else:
        host, ip = _parse_host(raw_host)
    return ParsedUrl(host=host, port=port, path=path or "/", query=query, ip=ip)


def _split_authority(authority: str) -> tuple[str, int]:
    # Credentials are refused outright: they make "https://trusted@evil/" readable as
    # "trusted", and a secret inside the URL would be shown to every administrator.
    if "@" in authority:
        raise _parse_failed("Webhook URLs may not contain a user name or password.")
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _parse_failed("The IPv6 address in this URL is missing its closing ].")
        host, after = authority[: close + 1], authority[close + 1 :]
        if after and not after.startswith(":"):
            raise _parse_failed("Unexpected characters after the IPv6 address.")
        port_text = after[1:]
    else:
        host, _, port_text = authority.partition(":")
    if not port_text:
        return host, 443  # "host:" means the default port, as in browsers
    if not _PORT.fullmatch(port_text) or not 1 <= int(port_text) <= 65535:
        raise _parse_failed("The port must be a number from 1 to 65535.")
    return host, int(port_text)


def _parse_bracketed(raw_host: str) -> ipaddress.IPv6Address:
    text, zone_sep, _zone = raw_host[1:-1].partition("%")
    text = unicodedata.normalize("NFKC", text).lower()
    if not _IPV6_CHARS.fullmatch(text):
        raise _parse_failed("The address in brackets is not a valid IPv6 address.")
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError:
        raise _parse_failed("The address in brackets is not a valid IPv6 address.") from None
    if zone_sep or not is_public_address(ip):
        raise private_ip("Webhook URLs must point to a public internet address.")
    return ip


def _parse_host(raw_host: str) -> tuple[str, IPAddress | None]:
    name = _normalize_host(raw_host)
    if name.endswith("."):
        name = name[:-1]  # one trailing dot is the absolute form of the same name
    labels = name.split(".")
    if not name or len(name) > 253 or not all(0 < len(label) <= 63 for label in labels):
        raise _parse_failed("The host name is not valid.")

    if _ends_in_number(labels[-1]):
        ip4 = _parse_ipv4(labels)
        if ip4 is None:
            raise _parse_failed("The host looks like an IPv4 address but is not a valid one.")
        if not is_public_address(ip4):
            raise private_ip("Webhook URLs must point to a public internet address.")
        if name != str(ip4):
            raise _parse_failed(f"Write the IPv4 address in the usual form: {ip4}")
        return name, ip4

    if len(labels) == 1 or labels[-1] in _INTERNAL_TLDS:
        raise private_ip("Webhook URLs may not use localhost or internal host names.")
    return name, None


def _normalize_host(raw_host: str) -> str:
    """Bring a host to the ASCII form a browser would use, so notations cannot hide an IP."""
    try:
        host = urllib.parse.unquote(raw_host, errors="strict")
    except UnicodeDecodeError:
        raise _parse_failed("The host name is not valid.") from None
    if "%" in host or not host.isprintable() or " " in host:
        raise _parse_failed("The host name is not valid.")
    host = unicodedata.normalize("NFKC", host).translate(_DOT_VARIANTS)
    if not host.isascii():
        if _IDNA_DEVIATIONS.intersection(host):
            raise _parse_failed("The host name contains characters that are not supported.")
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise _parse_failed("The host name is not a valid internationalized name.") from None
    host = host.lower()
    if not _HOST_CHARS.fullmatch(host):
        raise _parse_failed("The host name is not valid.")
    return host


def _ends_in_number(label: str) -> bool:
    # WHATWG URL: a host whose last label is numeric is an IPv4 address, never a DNS name.
    if label.startswith(("0x", "0X")):
        return _HEX.issuperset(label[2:])
    return _DEC.issuperset(label)


def _parse_ipv4(labels: list[str]) -> ipaddress.IPv4Address | None:
    """inet_aton / WHATWG IPv4 parsing: 1-4 parts, each decimal, 0x-hex or 0-octal."""
    if len(labels) > 4:
        return None
    numbers: list[int] = []
    for label in labels:
        number = _parse_ipv4_number(label)
        if number is None:
            return None
        numbers.append(number)
    # The last part fills all remaining bytes: "127.1" is 127.0.0.1, "2130706433" likewise.
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(leading):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _parse_ipv4_number(label: str) -> int | None:
    if label[:2] in ("0x", "0X"):
        digits, base, allowed = label[2:], 16, _HEX
    elif len(label) > 1 and label.startswith("0"):
        digits, base, allowed = label[1:], 8, _OCT
    else:
        digits, base, allowed = label, 10, _DEC
    if not allowed.issuperset(digits):
        return None
    return int(digits, base) if digits else 0  # a bare "0x" is zero, as in browsers
