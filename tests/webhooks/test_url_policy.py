"""The webhook URL policy: hostile URLs in every notation, public URLs, DNS answers.

No test touches the network: names go to a fake resolver, and the system resolver only sees
IP literals or a patched getaddrinfo.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hangar.kit.resolver import IPAddress, ResolutionFailed, SystemResolver
from hangar.webhooks.egress.url_parsing import (
    ParsedUrl,
    RejectionCode,
    UrlRejected,
    is_public_address,
    parse_webhook_url,
)
from hangar.webhooks.egress.url_policy import check_webhook_url

PARSE = RejectionCode.PARSE_FAILED
HTTPS = RejectionCode.HTTPS_REQUIRED
HOST = RejectionCode.HOST_REQUIRED
PRIVATE = RejectionCode.PRIVATE_IP
DNS = RejectionCode.DNS_FAILED

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"


class FakeResolver:
    """Answers from a table; each entry is a list of answers, used one per call in turn."""

    def __init__(self, answers: dict[str, list[list[str] | Exception]] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, int]] = []

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append((host, port))
        queue = self.answers.get(host)
        if not queue:
            raise ResolutionFailed(host)
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        return [ipaddress.ip_address(a) for a in answer]


class PublicEverywhere:
    """Resolves every name to a public address, so only the static policy can refuse."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append(host)
        return [ipaddress.IPv4Address(PUBLIC_V4)]


async def rejected(url: str, resolver: Any = None) -> UrlRejected:
    with pytest.raises(UrlRejected) as info:
        await check_webhook_url(url, resolver or PublicEverywhere())
    assert info.value.detail
    return info.value


# --- hostile inputs ---------------------------------------------------------------------

HOSTILE: list[tuple[str, RejectionCode]] = [
    # not a URL
    ("", PARSE),
    (" ", PARSE),
    ("not a url", PARSE),
    ("example.com/hook", PARSE),
    ("//example.com/hook", PARSE),
    ("1http://example.com/", PARSE),
    (" https://example.com/", PARSE),
    ("https://example.com/ ", PARSE),
    ("https://exa mple.com/", PARSE),
    ("https://example.com/\n", PARSE),
    ("https://example.com/\t", PARSE),
    ("https://example.com\x00.evil.com/", PARSE),
    ("https://example.com/\x7f", PARSE),
    ("https://example.com\u200b/", PARSE),  # zero-width space
    ("https://exam\u00adple.com/", PARSE),  # soft hyphen, which IDNA would delete
    ("https://example.com/" + "a" * 2048, PARSE),
    ("https://example.com:99999/", PARSE),
    ("https://example.com:65536/", PARSE),
    ("https://example.com:0/", PARSE),
    ("https://example.com:-1/", PARSE),
    ("https://example.com:abc/", PARSE),
    ("https://example.com:\uff14\uff14\uff13/", PARSE),  # full-width 443
    ("https://example.com:4_43/", PARSE),
    ("https://example.com:443:443/", PARSE),
    ("https://user:pass@example.com/", PARSE),
    ("https://user@example.com/", PARSE),
    ("https://@example.com/", PARSE),
    ("https://example.com@127.0.0.1/", PARSE),
    ("https://example.com:443@127.0.0.1/", PARSE),
    ("http://user:pass@10.0.0.1/", PARSE),  # parse failures come before the scheme check
    ("https:\\\\example.com\\hook", PARSE),
    ("https://example.com\\@127.0.0.1/", PARSE),
    ("https://[::1/", PARSE),
    ("https://[]/", PARSE),
    ("https://[v1.fe]/", PARSE),
    ("https://[127.0.0.1]/", PARSE),
    ("https://[::1]x/", PARSE),
    ("https://[::ffff:0127.0.0.1]/", PARSE),
    ("https://exa<mple.com/", PARSE),
    ("https://example..com/", PARSE),
    ("https://example.com../", PARSE),
    ("https://./", PARSE),
    ("https://" + "a" * 64 + ".com/", PARSE),
    ("https://%zz.example.com/", PARSE),
    ("https://%ff.example.com/", PARSE),  # not UTF-8
    ("https://example.com%2f@127.0.0.1/", PARSE),
    ("https://stra\u00dfe.de/", PARSE),  # IDNA 2003 and 2008 disagree on this name
    ("https://256.0.0.1/", PARSE),
    ("https://1.2.3.4.5/", PARSE),
    ("https://08.0.0.1/", PARSE),
    ("https://0x1g.0.0.1/", PARSE),
    ("https://4294967296/", PARSE),
    ("https://example.123/", PARSE),
    ("https://0x5db8d822/", PARSE),  # a public address, but not written plainly
    ("https://010.0.0.1/", PARSE),  # octal 8.0.0.1 to us, 10.0.0.1 to some tools
    # not https
    ("http://example.com/hook", HTTPS),
    ("http://10.0.0.1/", HTTPS),
    ("http://localhost/", HTTPS),
    ("HTTP://EXAMPLE.COM/", HTTPS),
    ("ftp://", HTTPS),
    ("ftp://example.com/", HTTPS),
    ("ws://example.com/", HTTPS),
    ("wss://example.com/", HTTPS),
    ("httpss://example.com/", HTTPS),
    ("file:///etc/passwd", HTTPS),
    ("gopher://127.0.0.1:6379/_", HTTPS),
    ("javascript:alert(1)", HTTPS),
    ("mailto:admin@example.com", HTTPS),
    ("example.com:8443", HTTPS),  # reads as scheme "example.com"
    # no host
    ("https://", HOST),
    ("https:///path", HOST),
    ("https:", HOST),
    ("https:example.com", HOST),
    ("https:/example.com", HOST),
    ("https://:443/", HOST),
    ("https://?x=1", HOST),
    ("https://#frag", HOST),
    # IPv4 literals in every notation
    ("https://127.0.0.1/", PRIVATE),
    ("HTTPS://127.0.0.1/", PRIVATE),
    ("https://127.0.0.1:8443/x", PRIVATE),
    ("https://127.255.255.254/", PRIVATE),
    ("https://2130706433/", PRIVATE),
    ("https://0x7f000001/", PRIVATE),
    ("https://0X7F000001/", PRIVATE),
    ("https://0x7f.1/", PRIVATE),
    ("https://0177.0.0.1/", PRIVATE),
    ("https://0177.1/", PRIVATE),
    ("https://017700000001/", PRIVATE),
    ("https://127.1/", PRIVATE),
    ("https://127.0.1/", PRIVATE),
    ("https://10.1/", PRIVATE),
    ("https://0x7f.0.0.1/", PRIVATE),
    ("https://0x7f.0.0x0.01/", PRIVATE),
    ("https://0xa9.0xfe.0xa9.0xfe/", PRIVATE),
    ("https://2852039166/", PRIVATE),  # 169.254.169.254
    ("https://127.0.0.1./", PRIVATE),
    ("https://0/", PRIVATE),
    ("https://0x/", PRIVATE),
    ("https://0.0.0.0/", PRIVATE),
    ("https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", PRIVATE),  # full-width digits
    ("https://\uff11\uff12\uff17\u3002\uff10\u3002\uff10\u3002\uff11/", PRIVATE),
    ("https://127\uff0e0\uff0e0\uff0e1/", PRIVATE),  # full-width full stop
    ("https://%31%32%37.0.0.1/", PRIVATE),
    ("https://10.0.0.1/", PRIVATE),
    ("https://172.16.0.1/", PRIVATE),
    ("https://172.31.255.255/", PRIVATE),
    ("https://192.168.1.1/", PRIVATE),
    ("https://169.254.169.254/latest/meta-data/", PRIVATE),
    ("https://100.64.0.1/", PRIVATE),
    ("https://100.100.100.200/", PRIVATE),
    ("https://192.0.0.192/", PRIVATE),
    ("https://224.0.0.1/", PRIVATE),
    ("https://239.255.255.250/", PRIVATE),
    ("https://240.0.0.1/", PRIVATE),
    ("https://255.255.255.255/", PRIVATE),
    ("https://192.0.2.1/", PRIVATE),
    ("https://198.51.100.7/", PRIVATE),
    ("https://203.0.113.9/", PRIVATE),
    ("https://198.18.0.1/", PRIVATE),
    ("https://198.19.255.255/", PRIVATE),
    # IPv6 literals
    ("https://[::1]/", PRIVATE),
    ("https://[::1]:8443/", PRIVATE),
    ("https://[::]/", PRIVATE),
    ("https://[0:0:0:0:0:0:0:1]/", PRIVATE),
    ("https://[::ffff:127.0.0.1]/", PRIVATE),
    ("https://[::FFFF:7F00:1]/", PRIVATE),
    ("https://[::ffff:169.254.169.254]/", PRIVATE),
    ("https://[::ffff:a9fe:a9fe]/", PRIVATE),
    ("https://[::127.0.0.1]/", PRIVATE),  # IPv4-compatible
    ("https://[::ffff:0:127.0.0.1]/", PRIVATE),  # IPv4-translated
    ("https://[::ffff:0:93.184.216.34]/", PRIVATE),
    ("https://[64:ff9b::127.0.0.1]/", PRIVATE),  # NAT64
    ("https://[64:ff9b::5db8:d822]/", PRIVATE),
    ("https://[64:ff9b:1::a00:1]/", PRIVATE),
    ("https://[2002:7f00:1::]/", PRIVATE),  # 6to4
    ("https://[2002:5db8:d822::1]/", PRIVATE),
    ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", PRIVATE),  # Teredo
    ("https://[2001:db8::1]/", PRIVATE),
    ("https://[fec0::1]/", PRIVATE),
    ("https://[fc00::1]/", PRIVATE),
    ("https://[fd00:ec2::254]/", PRIVATE),  # AWS metadata over IPv6
    ("https://[fe80::1]/", PRIVATE),
    ("https://[fe80::1%25eth0]/", PRIVATE),
    ("https://[fe80::a9fe:a9fe%25en0]:8443/", PRIVATE),
    ("https://[fe80::1%eth0]/", PRIVATE),
    ("https://[2606:4700::1111%25eth0]/", PRIVATE),  # a zone id names a local interface
    ("https://[ff02::1]/", PRIVATE),
    ("https://[ff0e::1]/", PRIVATE),  # global-scope multicast, which is_global accepts
    ("https://[100::1]/", PRIVATE),
    ("https://[\uff1a\uff1a\uff11]/", PRIVATE),  # full-width ::1
    # internal names, refused without asking DNS
    ("https://localhost/", PRIVATE),
    ("https://LOCALHOST/", PRIVATE),
    ("https://localhost./", PRIVATE),
    ("https://localhost:8443/", PRIVATE),
    ("https://api.localhost/", PRIVATE),
    ("https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", PRIVATE),
    ("https://local\ufe00host/", PRIVATE),  # a variation selector IDNA deletes
    ("https://%6c%6f%63%61%6c%68%6f%73%74/", PRIVATE),
    ("https://printer.local/", PRIVATE),
    ("https://metadata.google.internal/computeMetadata/v1/", PRIVATE),
    ("https://metadata/", PRIVATE),
    ("https://intranet/", PRIVATE),
    ("https://kubernetes/", PRIVATE),
    ("https://router.lan/", PRIVATE),
    ("https://nas.home.arpa/", PRIVATE),
    ("https://1.0.0.127.in-addr.arpa/", PRIVATE),
    ("https://db.corp/", PRIVATE),
    ("https://box.localdomain/", PRIVATE),
]


@pytest.mark.parametrize(("url", "code"), HOSTILE, ids=[repr(u)[:60] for u, _ in HOSTILE])
async def test_hostile_urls_are_refused(url: str, code: RejectionCode) -> None:
    resolver = PublicEverywhere()
    error = await rejected(url, resolver)
    assert error.code == code
    assert resolver.calls == []  # refused before any DNS lookup
    with pytest.raises(UrlRejected) as info:
        parse_webhook_url(url)
    assert info.value.code == code


def test_codes_and_messages_are_the_spec_strings() -> None:
    assert {c.value for c in RejectionCode} == {
        "WEBHOOK_URL_PARSE_FAILED",
        "WEBHOOK_URL_HTTPS_REQUIRED",
        "WEBHOOK_URL_HOST_REQUIRED",
        "WEBHOOK_URL_PRIVATE_IP",
        "WEBHOOK_URL_DNS_FAILED",
    }
    with pytest.raises(UrlRejected) as info:
        parse_webhook_url("http://example.com/")
    assert info.value.code == "WEBHOOK_URL_HTTPS_REQUIRED"
    assert info.value.detail == "Webhook URLs must start with https://"


# --- accepted URLs ----------------------------------------------------------------------

ACCEPTED: list[tuple[str, str, list[str]]] = [
    ("https://example.com/hook", "https://example.com/hook", [PUBLIC_V4, PUBLIC_V6]),
    ("https://example.com", "https://example.com/", [PUBLIC_V4, PUBLIC_V6]),
    ("HTTPS://Example.COM/Hook", "https://example.com/Hook", [PUBLIC_V4, PUBLIC_V6]),
    ("https://example.com./hook", "https://example.com/hook", [PUBLIC_V4, PUBLIC_V6]),
    ("https://example.com:443/hook", "https://example.com/hook", [PUBLIC_V4, PUBLIC_V6]),
    ("https://example.com:/hook", "https://example.com/hook", [PUBLIC_V4, PUBLIC_V6]),
    (
        "https://example.com:8443/hooks/in?token=abc&x=1",
        "https://example.com:8443/hooks/in?token=abc&x=1",
        [PUBLIC_V4, PUBLIC_V6],
    ),
    ("https://example.com/hook#section", "https://example.com/hook", [PUBLIC_V4, PUBLIC_V6]),
    ("https://example.com?x=1", "https://example.com/?x=1", [PUBLIC_V4, PUBLIC_V6]),
    ("https://hooks.example.org/a/b", "https://hooks.example.org/a/b", ["1.1.1.1"]),
    ("https://ex_ample.example.org/", "https://ex_ample.example.org/", ["8.8.8.8"]),
    ("https://b\u00fccher.example.com/", "https://xn--bcher-kva.example.com/", [PUBLIC_V4]),
    ("https://127.0.0.1.nip.example.net/", "https://127.0.0.1.nip.example.net/", [PUBLIC_V4]),
    ("https://93.184.216.34/x", "https://93.184.216.34/x", [PUBLIC_V4]),
    ("https://8.8.8.8:8443/", "https://8.8.8.8:8443/", ["8.8.8.8"]),
    ("https://93.184.216.34./x", "https://93.184.216.34/x", [PUBLIC_V4]),
    ("https://[2606:4700::1111]/", "https://[2606:4700::1111]/", ["2606:4700::1111"]),
    (
        "https://[2606:4700:4700:0:0:0:0:1111]:8443/in",
        "https://[2606:4700:4700::1111]:8443/in",
        ["2606:4700:4700::1111"],
    ),
    ("https://[::ffff:93.184.216.34]/", "https://[::ffff:5db8:d822]/", ["::ffff:5db8:d822"]),
]

NAMES: dict[str, list[list[str] | Exception]] = {
    "example.com": [[PUBLIC_V4, PUBLIC_V6, PUBLIC_V4]],
    "hooks.example.org": [["1.1.1.1"]],
    "ex_ample.example.org": [["8.8.8.8"]],
    "xn--bcher-kva.example.com": [[PUBLIC_V4]],
    "127.0.0.1.nip.example.net": [[PUBLIC_V4]],
}


@pytest.mark.parametrize(("url", "canonical", "addresses"), ACCEPTED)
async def test_public_urls_are_accepted(url: str, canonical: str, addresses: list[str]) -> None:
    checked = await check_webhook_url(url, FakeResolver(NAMES))
    assert checked.url.url == canonical
    assert checked.addresses == tuple(ipaddress.ip_address(a) for a in addresses)
    assert parse_webhook_url(url) == checked.url


async def test_the_resolver_gets_the_ascii_host_and_port() -> None:
    resolver = FakeResolver(NAMES)
    checked = await check_webhook_url("https://B\u00dcCHER.example.com:8443/x?y=1", resolver)
    assert resolver.calls == [("xn--bcher-kva.example.com", 8443)]
    parsed = checked.url
    assert (parsed.host, parsed.port, parsed.path, parsed.query) == (
        "xn--bcher-kva.example.com",
        8443,
        "/x",
        "y=1",
    )
    assert parsed.ip is None


async def test_ip_literals_are_not_resolved() -> None:
    resolver = FakeResolver()
    checked = await check_webhook_url("https://93.184.216.34/x", resolver)
    assert checked.addresses == (ipaddress.IPv4Address(PUBLIC_V4),)
    assert checked.url.ip == ipaddress.IPv4Address(PUBLIC_V4)
    assert resolver.calls == []


# --- order of codes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("not a url", PARSE),
        ("http://10.0.0.1", HTTPS),
        ("http://[::1]/", HTTPS),
        ("ftp://", HTTPS),
        ("http://", HTTPS),
        ("https://", HOST),
        ("https://user@", PARSE),
        ("https://:99999", PARSE),
        ("https://10.0.0.1:99999/", PARSE),
        ("https://10.0.0.1:8443/", PRIVATE),
    ],
)
async def test_the_first_failing_rule_decides_the_code(url: str, code: RejectionCode) -> None:
    assert (await rejected(url)).code == code


# --- DNS --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        ResolutionFailed("NXDOMAIN"),
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        TimeoutError(),
        OSError("network unreachable"),
    ],
)
async def test_resolution_errors_are_dns_failed(answer: Exception) -> None:
    resolver = FakeResolver({"hooks.example.org": [answer]})
    error = await rejected("https://hooks.example.org/", resolver)
    assert error.code == DNS
    assert "hooks.example.org" in error.detail


async def test_no_answers_is_dns_failed() -> None:
    resolver = FakeResolver({"hooks.example.org": [[]]})
    assert (await rejected("https://hooks.example.org/", resolver)).code == DNS


async def test_unknown_name_is_dns_failed() -> None:
    assert (await rejected("https://nowhere.example.org/", FakeResolver())).code == DNS


@pytest.mark.parametrize(
    "private",
    ["10.0.0.7", "127.0.0.1", "169.254.169.254", "::1", "::ffff:10.0.0.7", "fd00:ec2::254"],
)
async def test_one_private_answer_among_public_ones_is_enough(private: str) -> None:
    resolver = FakeResolver({"hooks.example.org": [[PUBLIC_V4, private, PUBLIC_V6]]})
    error = await rejected("https://hooks.example.org/", resolver)
    assert error.code == PRIVATE
    assert private not in error.detail  # never tell what a name resolves to internally


async def test_an_answer_that_changes_is_checked_again() -> None:
    # Save time sees a public address; by delivery time the name points inside (rebinding).
    resolver = FakeResolver({"hooks.example.org": [[PUBLIC_V4], ["127.0.0.1"]]})
    saved = await check_webhook_url("https://hooks.example.org/in", resolver)
    assert saved.addresses == (ipaddress.IPv4Address(PUBLIC_V4),)
    assert (await rejected("https://hooks.example.org/in", resolver)).code == PRIVATE


# --- the address rule -------------------------------------------------------------------

NOT_PUBLIC = [
    "0.0.0.0",  # noqa: S104 - an address under test, not a bind
    "0.1.2.3",
    "10.0.0.1",
    "100.64.0.1",
    "100.100.100.200",
    "100.127.255.255",
    "127.0.0.1",
    "127.255.255.255",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.9",
    "192.0.0.192",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.0.1",
    "198.18.0.1",
    "198.51.100.1",
    "203.0.113.1",
    "224.0.0.1",
    "233.252.0.1",
    "239.255.255.255",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::127.0.0.1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:0:7f00:1",
    "64:ff9b::7f00:1",
    "64:ff9b::5db8:d822",
    "64:ff9b:1::1",
    "100::1",
    "2001::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:2::1",
    "2001:db8::1",
    "2002:7f00:1::1",
    "2002:5db8:d822::1",
    "3fff::1",
    "5f00::1",
    "fc00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fe80::1%eth0",
    "fec0::1",
    "ff02::1",
    "ff0e::1",
]
PUBLIC = [PUBLIC_V4, "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", PUBLIC_V6]
PUBLIC += ["2606:4700::1111", "2001:4860:4860::8888", "::ffff:93.184.216.34"]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_non_public_addresses(address: str) -> None:
    assert not is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address: str) -> None:
    assert is_public_address(ipaddress.ip_address(address))


# --- every notation of a private IPv4 address -------------------------------------------

PRIVATE_V4_NETS = [
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
]
PRIVATE_V6_NETS = [
    ipaddress.IPv6Network(n)
    for n in (
        "::/96",
        "::ffff:0:0:0/96",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "2001::/32",
        "2001:db8::/32",
        "2002::/16",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
]

_FULL_WIDTH = str.maketrans(
    "0123456789.", "\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19\uff0e"
)


def ipv4_notations(ip: ipaddress.IPv4Address) -> Iterable[str]:
    """Every way to write an IPv4 host that a URL parser or inet_aton accepts."""
    n = int(ip)
    a, b, c, d = ip.packed
    yield str(ip)
    yield f"{ip}."
    yield str(n)
    yield hex(n)
    yield f"0X{n:X}"
    yield f"0{n:o}"
    yield ".".join(f"0{x:o}" for x in (a, b, c, d))
    yield ".".join(hex(x) for x in (a, b, c, d))
    yield f"{a}.{b}.{(c << 8) | d}"
    yield f"{a}.{(b << 16) | (c << 8) | d}"
    yield f"0x{a:x}.0{(b << 16) | (c << 8) | d:o}"
    yield f"0x{a:x}.0{b:o}.{c}.0x{d:02x}"
    yield str(ip).translate(_FULL_WIDTH)
    yield "".join(f"%{ord(ch):02X}" for ch in str(ip))
    yield f"[::ffff:{ip}]"
    yield f"[::ffff:{n >> 16:x}:{n & 0xFFFF:x}]"
    yield f"[0:0:0:0:0:ffff:{ip}]"


def addresses_in(nets: list[Any]) -> st.SearchStrategy[Any]:
    return st.sampled_from(nets).flatmap(
        lambda net: st.integers(int(net.network_address), int(net.broadcast_address)).map(
            type(net.network_address)
        )
    )


@given(addresses_in(PRIVATE_V4_NETS))
def test_every_notation_of_a_private_ipv4_address_is_refused(
    ip: ipaddress.IPv4Address,
) -> None:
    assert not is_public_address(ip)
    for host in ipv4_notations(ip):
        with pytest.raises(UrlRejected) as info:
            parse_webhook_url(f"https://{host}/hook")
        assert info.value.code == PRIVATE, host


def parse_or_code(url: str) -> ParsedUrl | RejectionCode:
    try:
        return parse_webhook_url(url)
    except UrlRejected as error:
        return error.code


@given(st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address))
def test_no_notation_reaches_a_different_or_private_ipv4_address(
    ip: ipaddress.IPv4Address,
) -> None:
    for host in ipv4_notations(ip):
        parsed = parse_or_code(f"https://{host}/hook")
        if isinstance(parsed, RejectionCode):
            assert parsed == (PARSE if is_public_address(ip) else PRIVATE), host
            continue
        assert is_public_address(ip), host
        assert parsed.ip is not None
        reached = parsed.ip
        if isinstance(reached, ipaddress.IPv6Address):
            assert reached.ipv4_mapped is not None
            reached = reached.ipv4_mapped
        assert reached == ip, host


@given(addresses_in(PRIVATE_V6_NETS))
def test_every_notation_of_a_private_ipv6_address_is_refused(
    ip: ipaddress.IPv6Address,
) -> None:
    assert not is_public_address(ip)
    for host in (ip.compressed, ip.exploded, ip.exploded.upper(), f"{ip.compressed}%25eth0"):
        with pytest.raises(UrlRejected) as info:
            parse_webhook_url(f"https://[{host}]:8443/hook")
        assert info.value.code == PRIVATE, host


# --- the system resolver ----------------------------------------------------------------


async def test_system_resolver_returns_literal_addresses_without_dns() -> None:
    resolver = SystemResolver()
    assert await resolver.resolve("127.0.0.1", 443) == [ipaddress.IPv4Address("127.0.0.1")]
    assert await resolver.resolve("::1", 443) == [ipaddress.IPv6Address("::1")]


@pytest.mark.parametrize(
    "url", ["https://localhost/", "https://127.0.0.1/", "https://[::1]/", "https://db.internal/"]
)
async def test_system_resolver_is_never_asked_about_refused_hosts(url: str) -> None:
    assert (await rejected(url, SystemResolver())).code == PRIVATE


async def test_system_resolver_dedupes_strips_scopes_and_queries_absolute_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[object] = []

    async def getaddrinfo(host: object, port: object, **kwargs: object) -> list[Any]:
        asked.append((host, port, kwargs))
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_V4, 443)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_V4, 443)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (PUBLIC_V6, 443, 0, 0)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fe80::1%eth0", 443, 0, 2)),
        ]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    addresses = await SystemResolver().resolve("hooks.example.org", 443)
    assert addresses == [
        ipaddress.IPv4Address(PUBLIC_V4),
        ipaddress.IPv6Address(PUBLIC_V6),
        ipaddress.IPv6Address("fe80::1"),
    ]
    assert asked == [("hooks.example.org.", 443, {"type": socket.SOCK_STREAM})]
    error = await rejected("https://hooks.example.org/", SystemResolver())
    assert error.code == PRIVATE


async def test_system_resolver_maps_failures_to_dns_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def getaddrinfo(host: object, port: object, **kwargs: object) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    with pytest.raises(ResolutionFailed):
        await SystemResolver().resolve("nowhere.example.org", 443)
    assert (await rejected("https://nowhere.example.org/", SystemResolver())).code == DNS


async def test_system_resolver_gives_up_after_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def getaddrinfo(host: object, port: object, **kwargs: object) -> list[Any]:
        await asyncio.sleep(10)
        return []

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    with pytest.raises(ResolutionFailed):
        await SystemResolver(timeout=0.01).resolve("slow.example.org", 443)
