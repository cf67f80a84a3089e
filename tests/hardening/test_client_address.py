"""The client's address behind trusted proxies (hangar.http.client_address, HANGAR_TRUSTED_PROXIES):
a proxy's header is believed only as far as trusted hops vouch for it."""

from __future__ import annotations

import ipaddress

import pytest

from hangar.foundation.config import ConfigError, trusted_proxies
from hangar.http.client_address import client_address

LOOPBACK = (ipaddress.ip_network("127.0.0.1/32"),)
TWO_HOPS = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8"))


def headers(**named: str) -> list[tuple[bytes, bytes]]:
    return [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in named.items()]


@pytest.mark.parametrize(
    ("peer", "sent", "proxies", "client"),
    [
        # nginx on loopback appended the client's address.
        ("127.0.0.1", headers(X_Forwarded_For="198.51.100.7"), LOOPBACK, "198.51.100.7"),
        # A client that starts the list itself: its entries sit left of the real one.
        ("127.0.0.1", headers(X_Forwarded_For="1.2.3.4, 198.51.100.7"), LOOPBACK, "198.51.100.7"),
        # A peer that is no proxy of ours is the client, whatever it says.
        ("198.51.100.7", headers(X_Forwarded_For="1.2.3.4"), LOOPBACK, "198.51.100.7"),
        ("198.51.100.7", headers(X_Real_IP="1.2.3.4"), LOOPBACK, "198.51.100.7"),
        # No trusted proxy at all (HANGAR_TRUSTED_PROXIES set empty).
        ("127.0.0.1", headers(X_Forwarded_For="198.51.100.7"), (), "127.0.0.1"),
        # Two trusted hops (a load balancer in 10/8, then nginx on loopback).
        (
            "127.0.0.1",
            headers(X_Forwarded_For="6.6.6.6, 198.51.100.7, 10.1.2.3"),
            TWO_HOPS,
            "198.51.100.7",
        ),
        # Every hop trusted: the first one named is the client.
        ("127.0.0.1", headers(X_Forwarded_For="127.0.0.1"), LOOPBACK, "127.0.0.1"),
        # Garbage ends the walk at the last address believed.
        ("127.0.0.1", headers(X_Forwarded_For="unknown"), LOOPBACK, "127.0.0.1"),
        ("127.0.0.1", headers(X_Forwarded_For="198.51.100.7, <script>"), LOOPBACK, "127.0.0.1"),
        # X-Real-IP, when the proxy sends no X-Forwarded-For.
        ("127.0.0.1", headers(X_Real_IP="198.51.100.8"), LOOPBACK, "198.51.100.8"),
        ("127.0.0.1", headers(X_Real_IP="2001:db8::1"), LOOPBACK, "2001:db8::1"),
        # Neither: the proxy itself.
        ("127.0.0.1", [], LOOPBACK, "127.0.0.1"),
    ],
)
def test_the_client_is_the_first_address_no_trusted_proxy_vouches_for(
    peer: str, sent: list[tuple[bytes, bytes]], proxies: tuple[object, ...], client: str
) -> None:
    assert client_address(peer, sent, proxies) == client  # type: ignore[arg-type]


def test_several_forwarded_for_headers_are_one_list() -> None:
    sent = [(b"x-forwarded-for", b"1.2.3.4"), (b"x-forwarded-for", b"198.51.100.7")]
    assert client_address("127.0.0.1", sent, LOOPBACK) == "198.51.100.7"


def test_the_setting_reads_addresses_and_networks_and_refuses_the_rest() -> None:
    assert trusted_proxies({}) == (*LOOPBACK, ipaddress.ip_network("::1/128"))
    assert trusted_proxies({"HANGAR_TRUSTED_PROXIES": ""}) == ()
    assert trusted_proxies({"HANGAR_TRUSTED_PROXIES": " 127.0.0.1, 10.0.0.0/8 ,::1"}) == (
        *TWO_HOPS,
        ipaddress.ip_network("::1/128"),
    )
    for wrong in ("nginx", "10.0.0.1/8", "10.0.0.0/33"):
        with pytest.raises(ConfigError, match="HANGAR_TRUSTED_PROXIES"):
            trusted_proxies({"HANGAR_TRUSTED_PROXIES": wrong})


@pytest.mark.parametrize(
    ("peer", "sent", "client"),
    [
        # nginx over IPv6 loopback, trusted by default as over IPv4.
        ("::1", headers(X_Forwarded_For="198.51.100.7"), "198.51.100.7"),
        # A dual-stack socket reports an IPv4 peer as IPv4-mapped: the same nginx.
        ("::ffff:127.0.0.1", headers(X_Forwarded_For="198.51.100.7"), "198.51.100.7"),
        # A mapped client is the IPv4 client it is, one spelling for its budgets and logs.
        ("::ffff:127.0.0.1", headers(X_Forwarded_For="::ffff:198.51.100.7"), "198.51.100.7"),
        ("::ffff:198.51.100.7", [], "198.51.100.7"),
        # Not a proxy, mapped or not.
        ("::ffff:10.0.0.9", headers(X_Forwarded_For="1.2.3.4"), "10.0.0.9"),
    ],
)
def test_the_default_trusts_loopback_over_ipv6_and_mapped_addresses_are_ipv4(
    peer: str, sent: list[tuple[bytes, bytes]], client: str
) -> None:
    proxies = trusted_proxies({})  # the default
    assert client_address(peer, sent, proxies) == client
