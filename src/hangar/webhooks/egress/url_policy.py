"""Whether a webhook URL may be used: the one policy, applied on save and before each delivery.

A webhook URL is chosen by an organization administrator and then fetched by our servers, so
every rule here exists to stop it from reaching anything that is not on the public internet
(loopback, private networks, cloud metadata, internal DNS names). There is deliberately no
setting, flag or environment variable that relaxes the policy; tests inject a fake resolver.

Checks run in the order of the spec's error codes, and the first failure wins:

1. ``WEBHOOK_URL_PARSE_FAILED`` - not a URL we are willing to interpret: empty, longer than
   2048 characters, whitespace, control or invisible formatting characters anywhere, a
   backslash (parsers disagree about it), no scheme, credentials (``user:pass@``), a bad
   port, a malformed bracketed address, or a host name that is not a valid DNS name.
2. ``WEBHOOK_URL_HTTPS_REQUIRED`` - scheme is not ``https`` (case-insensitive).
3. ``WEBHOOK_URL_HOST_REQUIRED`` - no authority, or an empty host.
4. ``WEBHOOK_URL_PRIVATE_IP`` - the host is an IP literal that is not public, in any notation
   a URL parser or ``inet_aton`` accepts, or it is an internal name (see below).
5. ``WEBHOOK_URL_DNS_FAILED`` / ``WEBHOOK_URL_PRIVATE_IP`` - only in :func:`check_webhook_url`:
   the name does not resolve, or any one of its addresses is not public.

Decisions the spec leaves open:

* The host is normalised the way browsers do before deciding whether it is an IP literal:
  percent-escapes decoded, NFKC (full-width digits and dots become ASCII), IDNA, lower case,
  one trailing dot dropped. IDNA uses the standard library's IDNA 2003 codec; names it cannot
  convert, and the four characters on which IDNA 2003 and 2008 disagree (so another client
  would connect to a different name), are refused as ``PARSE_FAILED``.
* A host whose last label is a number is an IPv4 literal (WHATWG "ends in a number"); it is
  parsed like ``inet_aton`` (hex, octal, 1-4 parts) and never handed to a resolver. If it is
  not public it is ``PRIVATE_IP``; if it is public but not written as plain dotted decimal
  it is still refused (``PARSE_FAILED``), because tools disagree on forms like ``010.0.0.1``.
* An IPv6 zone id (``[fe80::1%25eth0]``) names a local interface, so it is ``PRIVATE_IP``
  whatever the address.
* Internal names - ``localhost``, single-label names, and names under top-level domains that
  are never delegated publicly (``.local``, ``.internal``, ``.lan``, ``.arpa``, ...) - are
  refused as ``PRIVATE_IP`` *without* resolving them: the spec allows no internal DNS names,
  and not resolving them keeps the check from probing internal DNS.
* Any port from 1 to 65535 is allowed; the spec restricts hosts, not ports.
* The fragment is dropped; it is never sent over HTTP.
* Error details never include resolved addresses, so the check cannot be used to learn what
  a name resolves to inside our network.
* The system resolver (hangar.kit.resolver) looks names up in absolute form (trailing dot),
  so resolv.conf search domains never apply, and gives up after 5 seconds (``DNS_FAILED``).

:func:`check_webhook_url` returns the addresses it checked. The dispatcher must connect to
exactly those (not resolve the name again), otherwise a DNS answer that changes between the
check and the connection (DNS rebinding) would bypass the policy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from hangar.kit.resolver import IPAddress, ResolutionFailed, Resolver
from hangar.webhooks.egress.url_parsing import (
    AddressRule,
    ParsedUrl,
    RejectionCode,
    UrlRejected,
    is_public_address,
    parse_webhook_url,
    private_ip,
)


@dataclass(frozen=True, slots=True)
class CheckedUrl:
    url: ParsedUrl
    addresses: tuple[IPAddress, ...]  # every one public; connect only to these


# --- the full check ---------------------------------------------------------------------


# Before every attempt the subscription's stored URL is parsed again: the same few URLs, so the
# parse (a pure function of the text, its result frozen) is kept rather than redone, a tenth of
# a millisecond of each attempt (bench G6). Resolving and judging the addresses is never kept.
_parsed = functools.lru_cache(maxsize=4096)(parse_webhook_url)


async def check_webhook_url(
    url: str, resolver: Resolver, *, is_allowed: AddressRule = is_public_address
) -> CheckedUrl:
    """Parse, resolve and check a webhook URL; run on save and again before every delivery.

    `is_allowed` judges resolved addresses. Production never passes it: only the delivery
    tests do, so that a name can resolve to their loopback receiver. There is no setting.
    """
    parsed = _parsed(url)
    if parsed.ip is not None:
        return CheckedUrl(parsed, (parsed.ip,))
    not_resolving = f"The host name {parsed.host} could not be resolved."
    try:
        answers = await resolver.resolve(parsed.host, parsed.port)
    except (ResolutionFailed, OSError):
        raise UrlRejected(RejectionCode.DNS_FAILED, not_resolving) from None
    addresses = tuple(dict.fromkeys(answers))
    if not addresses:
        raise UrlRejected(RejectionCode.DNS_FAILED, not_resolving)
    # One private answer is enough to refuse: a client may pick any of them.
    if not all(is_allowed(ip) for ip in addresses):
        raise private_ip(
            f"The host name {parsed.host} resolves to a private or reserved address; "
            "webhook URLs must point to the public internet."
        )
    return CheckedUrl(parsed, addresses)
